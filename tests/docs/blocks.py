"""The fenced blocks of a Markdown page, with the markers right before them (DOCS.md, "Examples that cannot lie").

A marker is an HTML comment on the line right before a fence: `<!-- file: PATH -->` or `<!-- not-run: REASON -->`
(several may stand on consecutive lines). A marker anywhere else, or of another kind, is an error: a marker that
silently does nothing would let an example lie.

A page marker, `<!-- page: checkout -->` as the page's first line, sets up the folder the whole page runs in:
`checkout` starts it in a fresh copy of the repository under test (a page whose commands need pipegen's own
checkout) instead of an empty folder. Anywhere else, or with another value, it is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)[ \t]*$")
MARKER = re.compile(r"^[ \t]*<!--[ \t]*(?P<kind>[\w-]+)[ \t]*:[ \t]*(?P<value>.*?)[ \t]*-->[ \t]*$")
KINDS = ("file", "not-run")
PAGE_SETUPS = ("checkout",)  # <!-- page: VALUE --> on a page's first line
LOOKALIKES = {"files", "path", "notrun", "norun", "skip", "nottested", "notested"}  # misspelt markers: errors


class PageError(Exception):
    """The page breaks the collector's rules (a misplaced or unknown marker, an unclosed fence)."""


@dataclass(frozen=True)
class Block:
    page: str  # as shown in messages: relative to the repository
    line: int  # 1-based line of the opening fence
    lang: str  # the info string's first word, lower case ("" when none)
    text: str  # the content, the fence's indentation removed, ending in a newline unless empty
    file: str | None = None  # <!-- file: PATH -->
    not_run: str | None = None  # <!-- not-run: REASON -->

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def language(info: str) -> str:
    """`yaml`, `{.yaml title="x"}`, `yaml title="x"` -> yaml."""
    word = info.strip().lstrip("{").split(maxsplit=1)[0] if info.strip() else ""
    return word.lstrip(".").rstrip("}").lower()


def page_setup(text: str, page: str) -> str | None:
    """The value of the page marker on the first line (`checkout`), None when there is none."""
    found = MARKER.match(text.split("\n", 1)[0])
    if not found or found["kind"].lower() != "page":
        return None
    if found["value"] not in PAGE_SETUPS:
        raise PageError(f"{page}:1: unknown page setup '{found['value']}' (known: {', '.join(PAGE_SETUPS)})")
    return found["value"]


def parse(text: str, page: str) -> list[Block]:
    """Every fenced block of `text`, in order, with its markers."""
    lines = text.splitlines()
    blocks: list[Block] = []
    markers: dict[str, str] = {}
    marker_line = 0
    n = 0
    while n < len(lines):
        line = lines[n]
        fence = FENCE.match(line)
        if fence:
            end = _closing(lines, n, fence["fence"])
            if end is None:
                raise PageError(f"{page}:{n + 1}: this fence is never closed")
            indent = len(fence["indent"])
            body = [_dedent(lines[i], indent) for i in range(n + 1, end)]
            content = "\n".join(body) + ("\n" if body else "")
            blocks.append(Block(page, n + 1, language(fence["info"]), content, markers.get("file"),
                                markers.get("not-run")))
            markers = {}
            n = end + 1
            continue
        if markers:
            raise PageError(f"{page}:{marker_line}: a marker must stand on the line right before its fenced block")
        marker = _marker(line, page, n)
        while marker:
            kind, value = marker
            if not value or kind in markers:
                raise PageError(f"{page}:{n + 1}: marker '{kind}' needs one value, given once")
            markers[kind], marker_line = value, n + 1
            n += 1
            marker = _marker(lines[n], page, n) if n < len(lines) else None
        if not markers:
            n += 1
    if markers:
        raise PageError(f"{page}:{marker_line}: a marker must stand on the line right before its fenced block")
    return blocks


def _marker(line: str, page: str, n: int) -> tuple[str, str] | None:
    """A marker's kind and value; None for any other line (another comment included)."""
    found = MARKER.match(line)
    if not found:
        return None
    kind = found["kind"].lower()
    if kind == "page" and n:
        raise PageError(f"{page}:{n + 1}: a page marker must be the page's first line")
    if kind not in KINDS and kind.replace("-", "").replace("_", "") in LOOKALIKES | {"notrun", "file"}:
        raise PageError(f"{page}:{n + 1}: unknown marker '{found['kind']}' (known: {', '.join(KINDS)})")
    return (kind, found["value"]) if kind in KINDS else None


def _closing(lines: list[str], start: int, fence: str) -> int | None:
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return i
    return None


def _dedent(line: str, indent: int) -> str:
    """The line without the fence's indentation (less where the line has less)."""
    cut = len(line) - len(line.lstrip(" \t"))
    return line[min(cut, indent):]


def pages(root: Path) -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    found = [root / "README.md"] if (root / "README.md").exists() else []
    return found + sorted((root / "docs").rglob("*.md"))
