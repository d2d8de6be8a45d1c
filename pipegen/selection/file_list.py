"""A changed-file list as tools write it -> the paths it names. Pure.

`--files-from` takes what users pipe in, and each tool writes paths its own way:

- `git diff --name-only` C-quotes a path holding a control character, `"`, `\\`
  or (with the default `core.quotePath`) any non-ASCII byte: `"caf\\303\\251.py"`.
  Such a line is decoded exactly as git's `unquote_c_style` reads it; a line git
  could not have written (an unknown escape, no closing quote) is refused.
- `git diff -z` separates paths with NUL and quotes nothing: taken as they are.
- A byte-order mark (PowerShell, Notepad) starts the text: dropped; a UTF-16 list
  (Windows PowerShell's `>`) is decoded as such. CRLF line ends lose the CR.
- A Windows tool writes `src\\pkg\\x.py`: git always quotes a name holding a
  backslash, so an unquoted one is a folder separator and becomes `/`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from pipegen.errors import UsageError
from pipegen.frozen import frozen
from pipegen.model import Step
from pipegen.selection.matching import StepIndex

# git's quote.c: the escapes unquote_c_style accepts besides octal `\ooo`.
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL = "01234567"


@frozen
class Listed:
    """One path of the list, and the line it was read from (for messages)."""

    path: str
    given: str


def read_list(data: bytes, source: str, option: str = "--files-from") -> list[Listed]:
    """The paths of a list, in order, each once (by path); a UsageError naming a line git could not have written."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 (its ASCII holds NUL bytes: not -z output)
        data = data.decode("utf-16").encode("utf-8", "surrogateescape")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\0" in data:
        parts = [Listed(p, p) for p in (raw.decode("utf-8", "surrogateescape") for raw in data.split(b"\0")) if p]
    else:
        parts = [_line(raw, number, source, option) for number, raw in enumerate(data.split(b"\n"), 1)
                 if raw.rstrip(b"\r")]
    unique: dict[str, Listed] = {}
    for item in parts:
        unique.setdefault(item.path, item)
    return list(unique.values())


def _line(raw: bytes, number: int, source: str, option: str) -> Listed:
    text = raw[:-1] if raw.endswith(b"\r") else raw  # git quotes a name ending in CR: this one is a CRLF line end
    given = text.decode("utf-8", "surrogateescape")
    if text.startswith(b'"'):
        path = unquote(text)
        if path is None:
            raise UsageError(f"{option} {source}, line {number}: {given!r} is not a path as git quotes it "
                             "(an unknown escape, or no closing quote)",
                             fix="give git's own output ('git diff --name-only ...'), or NUL-separated paths "
                                 "('git diff -z --name-only ...')")
        return Listed(path, given)
    return Listed(given.replace("\\", "/"), given)


def unquote(text: bytes) -> str | None:
    """The path a C-quoted name stands for (git's unquote_c_style: `\\\\ \\" \\a \\b \\t \\n \\v \\f \\r`
    and octal `\\ooo`); None when git could not have written it."""
    if len(text) < 2 or not (text.startswith(b'"') and text.endswith(b'"')):
        return None
    out = bytearray()
    body, i = text[1:-1], 0
    while i < len(body):
        char = body[i:i + 1]
        if char == b'"':
            return None  # a quote git would have escaped
        if char != b"\\":
            out += char
            i += 1
            continue
        escape = body[i + 1:i + 2].decode("latin-1")
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            i += 2
        elif (escape and escape in "0123" and len(body) >= i + 4
              and all(c in _OCTAL for c in body[i + 1:i + 4].decode("latin-1"))):
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            return None
    return out.decode("utf-8", "surrogateescape")


def unknown(paths: Iterable[str], known: Collection[str], steps: Sequence[Step]) -> list[str]:
    """The paths that name no known file (tracked, on disk, in HEAD or the base) and that no step's
    include entry matches: a change to them selects nothing, so a typo or another checkout's path
    would otherwise vanish without a word."""
    candidates = [path for path in paths if path not in known]
    touched = StepIndex(steps).touched(candidates) if steps and candidates else set()
    return [path for path in candidates if path not in touched]
