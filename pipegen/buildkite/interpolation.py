"""Buildkite's upload-time interpolation, as `buildkite-agent pipeline upload` applies it. Pure.

Every string of an uploaded pipeline (keys of mappings too) goes through
buildkite/interpolate's recursive-descent parser. This is a transcription of
its grammar and semantics (parser.go and interpolate.go), so that render can
escape a string to arrive as declared, `check` can say which strings make the
upload fail, and `run` can give the shell what the agent would:

- `\\\\` is text and stays two backslashes; `\\$` and `$$` are an escaped `$`
  (the name or brace after it is then read as text);
- `$(` is text (a shell substitution); a `$` before anything but a letter or
  `{`, or at the end, is text;
- `$NAME` (a letter, then letters, digits, `_`) and `${NAME}` expand (unset: empty);
- `${NAME:-word}` (unset or empty), `${NAME-word}` (unset), `${NAME?message}`
  (unset: the upload fails), `${NAME:OFFSET}` and `${NAME:OFFSET:LENGTH}`
  (bytes; a negative offset needs a space: `${NAME: -3}`);
- any other brace fails the upload: `${NAME#x}`, `${NAME:?x}`, `${1}`, `${}`,
  an unclosed `${NAME:-x`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pipegen.frozen import frozen

# Where Go's scans stop; each also stops at utf8.RuneError, which U+FFFD itself decodes to.
_TEXT_END = {"": re.compile("[$\\\\\ufffd]"), "}": re.compile("[$\\\\}\ufffd]")}
_NAME_END = re.compile(r"[^\w]")  # \w: letters, digits (any Unicode number) and `_`, as Go's identifier
_OFFSET_END = re.compile("[:}\ufffd]")
_LENGTH_END = re.compile("[}\ufffd]")
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")
_INT64 = 2 ** 63


class InterpolationError(Exception):
    """The upload fails: a brace Buildkite cannot parse, or `${NAME?message}` with NAME unset."""


class TooDeep(InterpolationError):
    """Braces nested past MAX_NESTING: Buildkite may read them, pipegen does not (no deeper than its stack)."""


MAX_NESTING = 100  # `${A:-${B:-...}}` levels: each costs the parser three Python frames


@frozen
class Escaped:
    """`$$` or `\\$`: one literal `$`."""

    source: str = "$$"  # as written (the importer writes text back as it was)


@frozen
class Expansion:
    """`$NAME` or a `${...}` brace; `source` is its text as written."""

    name: str
    source: str
    op: str = ""  # "", ":-", "-", "?", ":" (substring)
    content: tuple[Item, ...] = ()  # the word of :- and -, the message of ?
    offset: int = 0
    length: int | None = None


Item = str | Escaped | Expansion


def is_letter(char: str) -> bool:
    return char.isalpha()  # Go's unicode.IsLetter: categories L*


def name_at(text: str, pos: int) -> str:
    """The variable name Buildkite reads at `pos`: a letter, then letters, digits and `_`; "" if none."""
    if pos >= len(text) or not is_letter(text[pos]):
        return ""
    end = _NAME_END.search(text, pos)
    return text[pos:end.start() if end else len(text)]


class _Parser:
    def __init__(self, text: str):
        self.text, self.pos, self.depth = text, 0, 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def next(self) -> str:
        char = self.peek()
        self.pos += len(char)
        return char

    def scan_to(self, stop: re.Pattern[str]) -> str:
        """The text up to the first character `stop` matches (Go's scanUntil), which stays unread."""
        start = self.pos
        found = stop.search(self.text, start)
        self.pos = found.start() if found else len(self.text)
        return self.text[start:self.pos]

    def expression(self, stop: str = "") -> tuple[Item, ...]:
        text = self.text
        items: list[Item] = []
        while self.pos < len(text) and text[self.pos] != stop:
            pair = text[self.pos:self.pos + 2]
            if pair == "\\\\" or pair == "$(":
                self.pos += 2
                items.append(pair)
            elif pair == "\\$" or pair == "$$":
                self.pos += 2  # what follows is read again as text: the escape only swallows one `$`
                items.append(Escaped(pair))
            elif pair[0] == "$" and len(pair) == 2:
                items.append(self.expansion())
            else:
                first = self.next()
                items.append(first + self.scan_to(_TEXT_END[stop]))
        return tuple(items)

    def expansion(self) -> Item:
        start = self.pos
        self.pos += 1  # the `$`
        if self.peek() == "{":
            return self.brace(start)
        if not is_letter(self.peek()):
            return "$"
        name = self.identifier()
        return Expansion(name, self.text[start:self.pos])

    def identifier(self) -> str:
        name = name_at(self.text, self.pos)
        if not name:
            raise InterpolationError(f"expected a variable name starting with a letter, got {_shown(self.peek())}")
        self.pos += len(name)
        return name

    def brace(self, start: int) -> Expansion:
        self.pos += 1  # the `{`
        name = self.identifier()
        if self.peek() == "}":
            self.pos += 1
            return Expansion(name, self.text[start:self.pos])
        op = self.next()
        if op == ":" and self.peek() == "-":
            op += self.next()
        elif op not in (":", "?", "-"):
            raise InterpolationError(f"expected an operator (:- - ? :) after '${{{name}', got {_shown(op)}")
        offset, length = 0, None
        content: tuple[Item, ...] = ()
        if op == ":":
            offset = _go_int(self.scan_to(_OFFSET_END), "offset")
            if self.peek() != "}":
                self.next()
                length = _go_int(self.scan_to(_LENGTH_END), "length")
        else:
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise TooDeep(f"'${{' nested more than {MAX_NESTING} deep, past what pipegen reads")
            content = self.expression("}")
            self.depth -= 1
        closing = self.next()
        if closing != "}":
            raise InterpolationError(f"expected '}}' to close '${{{name}{op}', got {_shown(closing)}")
        return Expansion(name, self.text[start:self.pos], op, content, offset, length)


def _shown(char: str) -> str:
    return repr(char) if char else "the end of the text"


def _go_int(text: str, what: str) -> int:
    """strconv.Atoi of the trimmed text, as the substring's offset or length."""
    text = text.strip(_GO_SPACE)
    if not _GO_INT.match(text) or not -_INT64 <= int(text) < _INT64:
        raise InterpolationError(f"substring {what} {text!r} is not a whole number")
    return int(text)


def parse(text: str) -> tuple[Item, ...]:
    """The items of `text`; InterpolationError where Buildkite's parser fails (the upload fails)."""
    return _Parser(text).expression()


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """`text` as the agent uploads it with these variables set."""
    return _expand(parse(text), env)


def _expand(items: tuple[Item, ...], env: Mapping[str, str]) -> str:
    return "".join(item if isinstance(item, str) else "$" if isinstance(item, Escaped) else _value(item, env)
                   for item in items)


def _value(item: Expansion, env: Mapping[str, str]) -> str:
    value = env.get(item.name)
    if item.op == ":-":
        return value if value else _expand(item.content, env)
    if item.op == "-":
        return value if value is not None else _expand(item.content, env)
    if item.op == "?" and value is None:
        raise InterpolationError(f"${item.name}: {_expand(item.content, env) or 'not set'}")
    if item.op == ":":
        return _substring((value or "").encode("utf-8", "surrogateescape"), item.offset, item.length)
    return value or ""


def _substring(value: bytes, offset: int, length: int | None) -> str:
    """Go's slicing of the value's bytes: a negative offset counts from the end, out of range is cut."""
    start = min(max(offset + len(value) if offset < 0 else offset, 0), len(value))
    end = len(value)
    if length is not None:
        end = min(start + length if length >= 0 else max(length + len(value), start), len(value))
    return value[start:end].decode("utf-8", "surrogateescape")


def unescaped(text: str) -> str:
    """`text` after upload with its variables left to the job's shell: escapes resolved, each
    expansion as written (pipegen run: the agent's environment is not this machine's)."""
    return "".join(item if isinstance(item, str) else "$" if isinstance(item, Escaped) else item.source
                   for item in parse(text))


def placeheld(text: str, holder: str = "v") -> str:
    """`text` as uploaded with each variable's value written `holder` (before the upload, no value is known):
    what a key or a depends_on target becomes. InterpolationError where the upload fails on it."""
    return "".join(item if isinstance(item, str) else "$" if isinstance(item, Escaped) else holder
                   for item in parse(text))


def variables(text: str) -> list[str]:
    """The names `text` expands at upload (escaped ones not), outermost first; [] when it does not parse."""
    try:
        items = parse(text)
    except InterpolationError:
        return []
    out: list[str] = []
    _names(items, out)
    return out


def _names(items: tuple[Item, ...], out: list[str]) -> None:
    for item in items:
        if isinstance(item, Expansion):
            out.append(item.name)
            _names(item.content, out)
