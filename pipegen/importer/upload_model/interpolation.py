"""Upload-time interpolation, as buildkite/interpolate does it, against an uploader's environment nobody knows.

Syntax (Buildkite docs, agent/cli/reference/pipeline "Environment variable substitution"; spec buildkite.md):
`$NAME`, `${NAME}`, `${NAME:-word}` (word when unset or empty), `${NAME-word}` (when unset),
`${NAME:?message}` / `${NAME?message}` (the upload fails when unset), `${NAME:offset}` and
`${NAME:offset:length}`; `$$` and `\\$` are a literal `$`; an unset variable is empty. A word holds
expansions of its own.

The uploader's variables are unknown, so a value is symbolic: a tuple of parts, each a literal string or
a term over the uploader's variables (Term). A variable the file's own `env:` defined has a known value
(parts), which the term takes in its place. Two values are equal when their parts are: a sufficient test,
so "equal" is a promise and "differs" may be cautious.
"""

from __future__ import annotations

import re

from pipegen.frozen import frozen

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SUBSTRING = re.compile(r":\s*(-?\d+)(?::\s*(-?\d+))?$")


@frozen
class Term:
    """What the uploader's environment gives: `op` is var, default (`word` when unset, or also when empty if
    `colon`), required, substring; or over a defined value: otherwise (`of`, else `word` when empty),
    check (`of`, the upload fails when empty), slice (`of` sliced)."""

    op: str
    name: str = ""
    colon: bool = False
    word: Parts = ()
    of: Parts = ()
    span: tuple[int, int | None] = (0, None)


Parts = tuple[str | Term, ...]


class InterpolationError(ValueError):
    """Text the agent refuses to interpolate (the upload fails)."""


def join(parts: list[str | Term] | Parts) -> Parts:
    """Adjacent literals merged, empty ones dropped: the canonical form two values are compared in."""
    out: list[str | Term] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        elif part != "":
            out.append(part)
    return tuple(out)


def interpolate(text: str, defined: dict[str, Parts]) -> Parts:
    return _parse(text, 0, defined, closing=False)[0]


def value(parts: Parts) -> str | Parts:
    """A plain string when nothing in it depends on the uploader's environment."""
    if all(isinstance(p, str) for p in parts):
        return "".join(str(p) for p in parts)
    return parts


def _parse(text: str, index: int, defined: dict[str, Parts], closing: bool) -> tuple[Parts, int]:
    out: list[str | Term] = []
    literal = ""
    while index < len(text):
        char = text[index]
        if closing and char == "}":
            return join([*out, literal]), index
        if char == "\\" and text.startswith("\\$", index) or char == "$" and text.startswith("$$", index):
            literal, index = literal + "$", index + 2
        elif char == "$" and text.startswith("${", index):
            out.append(literal)
            literal = ""
            parts, index = _braced(text, index + 2, defined)
            out += parts
        elif char == "$" and (match := NAME.match(text, index + 1)):
            out += [literal, *_lookup(match[0], defined)]
            literal, index = "", match.end()
        else:
            literal, index = literal + char, index + 1
    if closing:
        raise InterpolationError(f"unterminated '${{' in {text!r}")
    return join([*out, literal]), index


def _braced(text: str, index: int, defined: dict[str, Parts]) -> tuple[Parts, int]:
    match = NAME.match(text, index)
    if match is None:
        raise InterpolationError(f"'${{' without a variable name in {text!r}")
    name, index = match[0], match.end()
    if text.startswith("}", index):
        return _lookup(name, defined), index + 1
    for op, colon in ((":-", True), ("-", False), (":?", True), ("?", False)):
        if text.startswith(op, index):
            word, end = _parse(text, index + len(op), defined, closing=True)
            kind = "default" if "-" in op else "required"
            return _operator(kind, name, colon, word, defined), end + 1
    end = text.find("}", index)
    found = SUBSTRING.match(text[index:end]) if end >= 0 else None
    if found is None:
        raise InterpolationError(f"'${{{name}' is not followed by '}}', ':-', '-', ':?', '?' or an offset in {text!r}")
    span = (int(found[1]), int(found[2]) if found[2] is not None else None)
    return _slice(name, span, defined), end + 1


def _lookup(name: str, defined: dict[str, Parts]) -> Parts:
    return defined[name] if name in defined else (Term("var", name),)


def surely_filled(parts: Parts) -> bool:
    """The value is never empty, whatever the uploader's environment."""
    for part in parts:
        if isinstance(part, str) and part:
            return True
        if isinstance(part, Term) and part.op in ("default", "otherwise") and part.colon and surely_filled(part.word):
            return True
        if isinstance(part, Term) and part.op == "check":
            return True
    return False


def _operator(kind: str, name: str, colon: bool, word: Parts, defined: dict[str, Parts]) -> Parts:
    if name not in defined:
        return (Term(kind, name, colon, word),)
    known = defined[name]  # set by the file's env: "unset" never holds
    if not colon or surely_filled(known):
        return known
    if kind == "required":
        return (Term("check", colon=True, of=known),)
    if not known:
        return word
    return (Term("otherwise", colon=True, word=word, of=known),)


def _slice(name: str, span: tuple[int, int | None], defined: dict[str, Parts]) -> Parts:
    if name not in defined:
        return (Term("substring", name, span=span),)
    known = value(defined[name])
    if isinstance(known, str):
        start = span[0] if span[0] >= 0 else max(0, len(known) + span[0])
        stop = None if span[1] is None else start + span[1] if span[1] >= 0 else len(known) + span[1]
        return join([known[start:stop]])
    return (Term("slice", of=known, span=span),)


def show(parts: Parts | str) -> str:
    """A value as interpolation text would write it (for messages)."""
    if isinstance(parts, str):
        return parts
    out = ""
    for part in parts:
        if isinstance(part, str):
            out += part.replace("$", "$$")
            continue
        inner = {"var": "", "default": f"{':' * part.colon}-{show(part.word)}",
                 "required": f"{':' * part.colon}?{show(part.word)}", "substring": f":{part.span[0]}"
                 + (f":{part.span[1]}" if part.span[1] is not None else "")}.get(part.op)
        out += f"${{{part.name}{inner}}}" if inner is not None else f"<{part.op} of {show(part.of)}>"
    return out
