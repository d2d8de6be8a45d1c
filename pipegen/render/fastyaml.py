"""Read back the YAML that pipegen's templates write, fast; anything else goes to PyYAML.

`pipegen render` validates its own output by parsing it again. PyYAML needs
~50 ms for vLLM's 8,000-line pipeline; this reader needs a fraction of that
for the narrow dialect the templates emit: block mappings and sequences
indented with spaces, keys and values that are JSON-style double-quoted
strings, safe plain words, integers, true/false/null, or JSON flow
collections. On the first line outside that dialect it gives up and PyYAML
reads the whole text, so the result is always what a YAML reader sees
(tests compare the two on every rendered fixture). A key written twice in
one mapping, which PyYAML alone would silently drop, goes to yamlio's
PyYAML loader too, which refuses it naming both lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The writer's dialect: plain words it writes unquoted (unless special) are read back as strings.
from pipegen.render.yaml_writer import PLAIN, SPECIAL_WORDS


class NotInDialect(Exception):
    """The text uses YAML this reader does not handle: use PyYAML."""


_INT = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_scanstring = json.decoder.scanstring  # C: a JSON string body -> (text, end)
# Raw characters a YAML reader folds or refuses inside a quoted scalar; JSON would keep them.
_SURROGATE = re.compile(r"\\u[dD][89abAB]")
_RAW_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


def _no_float(text: str) -> Any:
    raise NotInDialect(f"float {text}")


_json = json.JSONDecoder(parse_float=_no_float, parse_constant=_no_float)
# A plain-word key and its colon, then the end of the line or a space.
_PLAIN_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_./-]*):(?= |\Z)")


def load(text: str) -> Any:
    """The data of `text`, as a YAML reader sees it."""
    try:
        return Reader(text).document()
    except NotInDialect:
        from pipegen.declarations.yamlio import load_text  # PyYAML, refusing duplicate keys as this reader does

        return load_text(text, "the rendered pipeline")


def scalar(token: str) -> Any:
    """One complete scalar token of the dialect, or NotInDialect."""
    first = token[:1]
    if first == '"':
        text, end = _string(token, 0)
        if end != len(token):
            raise NotInDialect(token)
        return text
    if first in "[{":
        try:
            value = _json.decode(token)
        except ValueError:
            raise NotInDialect(token) from None
        if _RAW_UNSAFE.search(token):
            raise NotInDialect(token)
        return value
    if _INT.match(token):
        return int(token)
    if token in ("true", "false"):
        return token == "true"
    if token in ("null", "~"):
        return None
    if PLAIN.match(token) and token.lower() not in SPECIAL_WORDS:
        return token
    raise NotInDialect(token)


def _string(text: str, start: int) -> tuple[str, int]:
    """The JSON-style quoted string at text[start] (a '"'): (value, index after it)."""
    try:
        value, end = _scanstring(text, start + 1, True)
    except ValueError:  # unterminated, a raw control character, or a YAML-only escape (\x41, \U...)
        raise NotInDialect(text) from None
    if _RAW_UNSAFE.search(text, start, end) or _SURROGATE.search(text, start, end):
        raise NotInDialect(text)  # JSON would pair escaped surrogates, YAML keeps them apart
    return value, end


class Reader:
    def __init__(self, text: str):
        if "\t" in text or "\r" in text or " \n" in text or text.endswith(" "):
            raise NotInDialect("tabs, carriage returns or trailing spaces")
        lines = []
        for number, line in enumerate(text.split("\n"), 1):
            body = line.lstrip(" ")
            if body:
                first = body[0]
                if first == "#":
                    continue
                if first == "%" or (first in "-." and body[:3] in ("---", "...")):
                    raise NotInDialect(f"line {number}: a directive or document marker")
                lines.append([len(line) - len(body), body, number])
        self.lines = lines
        self.pos = 0

    def document(self) -> Any:
        if not self.lines:
            raise NotInDialect("empty")
        value = self.node(self.lines[0][0])
        if self.pos != len(self.lines):
            raise NotInDialect(f"line {self.lines[self.pos][2]}")
        return value

    def node(self, indent: int) -> Any:
        column, body, _ = self.lines[self.pos]
        if column != indent:
            raise NotInDialect("indent")
        if body == "-" or body.startswith("- "):
            return self.sequence(column)
        return self.mapping(column)

    def sequence(self, column: int) -> list[Any]:
        out: list[Any] = []
        lines = self.lines
        count = len(lines)
        while self.pos < count and lines[self.pos][0] == column:
            line = lines[self.pos]
            body = line[1]
            if body[:3] == '- "':  # the hot path: one quoted string per line (commands)
                value, end = _string(body, 2)
                if end == len(body):
                    out.append(value)
                    self.pos += 1
                    continue
            elif not (body == "-" or body.startswith("- ")):
                break
            rest = body[2:]
            if not rest.strip():
                self.pos += 1
                out.append(self._nested(column))
                continue
            inner = rest.lstrip(" ")
            inner_column = column + 2 + len(rest) - len(inner)
            if inner.startswith("- ") or inner == "-" or self._is_key(inner):
                line[0], line[1] = inner_column, inner  # the item's node starts on this line
                out.append(self.node(inner_column))
            else:
                out.append(scalar(inner))
                self.pos += 1
        if self.pos < len(lines) and lines[self.pos][0] > column:
            raise NotInDialect(f"line {lines[self.pos][2]}")
        return out

    def mapping(self, column: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        lines = self.lines
        while self.pos < len(lines) and lines[self.pos][0] == column:
            body, number = lines[self.pos][1], lines[self.pos][2]
            if body == "-" or body.startswith("- "):
                break
            key, rest = self._split(body)
            if key in out:  # yamlio's loader reports it, naming both lines
                raise NotInDialect(f"line {number}: the key {key!r} again")
            self.pos += 1
            if rest:
                out[key] = scalar(rest)
            elif self.pos < len(lines) and lines[self.pos][0] == column and (
                    lines[self.pos][1] == "-" or lines[self.pos][1].startswith("- ")):
                out[key] = self.sequence(column)  # a sequence may sit at its key's column
            else:
                out[key] = self._nested(column)
        if self.pos < len(lines) and lines[self.pos][0] > column:
            raise NotInDialect(f"line {lines[self.pos][2]}")
        return out

    def _nested(self, column: int) -> Any:
        if self.pos < len(self.lines) and self.lines[self.pos][0] > column:
            return self.node(self.lines[self.pos][0])
        return None

    @staticmethod
    def _is_key(body: str) -> bool:
        if body.startswith('"'):
            end = _string(body, 0)[1]
            return body[end:end + 1] == ":"
        colon = body.find(":")
        return colon > 0 and (colon == len(body) - 1 or body[colon + 1] == " ")

    @staticmethod
    def _split(body: str) -> tuple[Any, str]:
        plain = _PLAIN_KEY.match(body)  # the hot path: `key: value` with a plain word for a key
        if plain and plain.group(1).lower() not in SPECIAL_WORDS:
            return plain.group(1), body[plain.end():].lstrip(" ")
        if body.startswith('"'):
            key, end = _string(body, 0)
        else:
            end = body.find(":")
            if end <= 0:
                raise NotInDialect(body)
            key = scalar(body[:end])
            if not isinstance(key, str):
                raise NotInDialect(body)
        if body[end:end + 1] != ":" or (len(body) > end + 1 and body[end + 1] != " "):
            raise NotInDialect(body)
        return key, body[end + 2:].lstrip(" ")
