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

from pipegen.declarations.yamlio import load_text

# The writer's dialect: plain words it writes unquoted (unless special) are read back as strings.
from pipegen.render.yaml_writer import PLAIN, SPECIAL_WORDS


class NotInDialect(Exception):
    """The text uses YAML this reader does not handle: use PyYAML."""


_INT = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # C: a JSON string body -> (text, end); not in typeshed
# Inside a quoted scalar, what JSON keeps and a YAML reader does not: raw characters it folds or refuses,
# and escaped surrogates (JSON pairs them, YAML keeps them apart).
_RAW_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]")
_SURROGATE = re.compile(r"\\u[dD][89abAB]")


def _no_float(text: str) -> Any:
    raise NotInDialect(f"float {text}")


_json = json.JSONDecoder(parse_float=_no_float, parse_constant=_no_float)
# A plain-word key and its colon, then the end of the line or a space.
_PLAIN_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_./-]*):(?= |\Z)")
# Tokens already read once (keys and plain scalars repeat on every step): text -> value.
_PLAIN_KEYS: set[str] = set()
_SCALARS: dict[str, Any] = {}


def load(text: str) -> Any:
    """The data of `text`, as a YAML reader sees it."""
    try:
        return Reader(text).document()
    except NotInDialect:
        return load_text(text, "the rendered pipeline")


def scalar(token: str, careful: bool = True) -> Any:
    """One complete scalar token of the dialect, or NotInDialect. `careful`: the token may hold characters
    that JSON keeps and YAML does not (Reader knows when a whole text holds none)."""
    first = token[:1]
    if first == '"':
        text, end = _string(token, 0, careful)
        if end != len(token):
            raise NotInDialect(token)
        return text
    if token in _SCALARS:
        return _SCALARS[token]
    if first in "[{":
        try:
            value = _json.decode(token)
        except ValueError:
            raise NotInDialect(token) from None
        if careful and _RAW_UNSAFE.search(token):
            raise NotInDialect(token)
        return value  # mutable: never shared between two reads
    if _INT.match(token):
        value = int(token)
    elif token in ("true", "false"):
        value = token == "true"
    elif token in ("null", "~"):
        value = None
    elif PLAIN.match(token) and token.lower() not in SPECIAL_WORDS:
        value = token
    else:
        raise NotInDialect(token)
    _SCALARS[token] = value
    return value


def _string(text: str, start: int, careful: bool = True) -> tuple[str, int]:
    """The JSON-style quoted string at text[start] (a '"'): (value, index after it)."""
    try:
        value, end = _scanstring(text, start + 1, True)
    except ValueError:  # unterminated, a raw control character, or a YAML-only escape (\x41, \U...)
        raise NotInDialect(text) from None
    if careful and (_RAW_UNSAFE.search(text, start, end) or _SURROGATE.search(text, start, end)):
        raise NotInDialect(text)
    return value, end


class Reader:
    """The dialect, line by line: `cols[i]` is the indent of the i-th line that holds data and
    `bodies[i]` its text after the indent; a last line at column -1 ends every block. Each block
    method takes the line it starts at and returns its value and the line after it."""

    def __init__(self, text: str):
        if "\t" in text or "\r" in text or " \n" in text or text.endswith(" "):
            raise NotInDialect("tabs, carriage returns or trailing spaces")
        lines = text.split("\n")
        stripped = [line.lstrip(" ") for line in lines]
        # Blank lines and comments hold no data. (A directive or a document marker is neither a key nor an
        # item, so no block takes its line: it goes to PyYAML like any other line outside the dialect.)
        self.cols = [len(line) - len(body) for line, body in zip(lines, stripped, strict=True)
                     if body and body[0] != "#"]
        self.bodies = [body for body in stripped if body and body[0] != "#"]
        self.end = len(self.cols)
        self.cols.append(-1)
        self.bodies.append("")
        # Quoted strings need their characters checked only where the text has any JSON keeps and YAML does not.
        self.careful = not text.isascii() or "\x7f" in text or "\\u" in text

    def document(self) -> Any:
        if not self.end:
            raise NotInDialect("empty")
        value, pos = self.node(0)
        if pos != self.end:
            raise NotInDialect(f"data line {pos}")
        return value

    def node(self, pos: int) -> tuple[Any, int]:
        """The block that starts at line `pos`: a sequence or a mapping."""
        body = self.bodies[pos]
        if body[:2] == "- " or body == "-":
            return self.sequence(pos)
        return self.mapping(pos)

    def sequence(self, pos: int) -> tuple[list[Any], int]:
        cols, bodies, careful = self.cols, self.bodies, self.careful
        column = cols[pos]
        out: list[Any] = []
        value: Any
        while cols[pos] == column:
            body = bodies[pos]
            if body[:3] == '- "':  # the hot path: one quoted string per line (commands)
                value, end = _string(body, 2, careful)
                if end == len(body):
                    out.append(value)
                    pos += 1
                    continue
            elif not (body[:2] == "- " or body == "-"):
                break  # a key at the column of the sequence's own key
            inner = body[2:].lstrip(" ")
            if not inner:  # the item's block is on the lines below
                value, pos = self.node(pos + 1) if cols[pos + 1] > column else (None, pos + 1)
            elif inner[0] in "[{":  # a flow collection (depends_on's {"step": ..., "allow_failure": true})
                value, pos = scalar(inner, careful), pos + 1
            elif inner[:2] == "- " or inner == "-" or self._is_key(inner):  # the item's block starts here
                cols[pos], bodies[pos] = column + len(body) - len(inner), inner
                value, pos = self.node(pos)
            else:
                value, pos = scalar(inner, careful), pos + 1
            out.append(value)
        if cols[pos] > column:
            raise NotInDialect(f"data line {pos}")
        return out, pos

    def mapping(self, pos: int) -> tuple[dict[Any, Any], int]:
        cols, bodies, careful = self.cols, self.bodies, self.careful
        column = cols[pos]
        out: dict[Any, Any] = {}
        while cols[pos] == column:
            body = bodies[pos]
            key, colon, rest = body.partition(": ")
            if not colon and body[-1] == ":":
                key, colon = body[:-1], ":"
            if colon and key in _PLAIN_KEYS:  # the hot path: a plain word already read as a key
                rest = rest.lstrip(" ")
            elif body[:2] == "- " or body == "-":
                break
            else:
                key, rest = self._split(body)
            if key in out:  # yamlio's loader reports it, naming both lines
                raise NotInDialect(f"data line {pos}: the key {key!r} again")
            pos += 1
            if rest:
                out[key] = scalar(rest, careful)
            elif cols[pos] > column or (cols[pos] == column and (bodies[pos][:2] == "- " or bodies[pos] == "-")):
                out[key], pos = self.node(pos)  # a sequence may sit at its key's column
            else:
                out[key] = None
        if cols[pos] > column:
            raise NotInDialect(f"data line {pos}")
        return out, pos

    def _is_key(self, body: str) -> bool:
        if body.startswith('"'):
            end = _string(body, 0, self.careful)[1]
            return body[end:end + 1] == ":"
        colon = body.find(":")
        return colon > 0 and (colon == len(body) - 1 or body[colon + 1] == " ")

    def _split(self, body: str) -> tuple[Any, str]:
        plain = _PLAIN_KEY.match(body)
        if plain and plain.group(1).lower() not in SPECIAL_WORDS:
            _PLAIN_KEYS.add(plain.group(1))
            return plain.group(1), body[plain.end():].lstrip(" ")
        if body.startswith('"'):
            key, end = _string(body, 0, self.careful)
        else:
            end = body.find(":")
            if end <= 0:
                raise NotInDialect(body)
            key = scalar(body[:end], self.careful)
            if not isinstance(key, str):
                raise NotInDialect(body)
        if body[end:end + 1] != ":" or (len(body) > end + 1 and body[end + 1] != " "):
            raise NotInDialect(body)
        return key, body[end + 2:].lstrip(" ")
