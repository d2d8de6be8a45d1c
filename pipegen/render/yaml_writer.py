"""YAML output that Buildkite takes exactly as meant: safe scalars, `$` escaped, valid keys.

Why it exists: no user string reaches the YAML raw. Every value a template
prints goes out through `scalar()` (a JSON-style double-quoted YAML string,
or a plain word that reads back as the same string), `flow()` or `block()`
unless it is explicitly marked `Safe`. A `$` in user text (labels, commands,
env, working_dir, group names) is escaped by `Dollars` (buildkite/upload_escape.py)
so that it reaches the job's shell as written, except variables listed in the
config's `interpolate:`; vLLM's files are written in Buildkite's syntax already (they
spell `$$VAR`), so the vLLM preset's `interpolate: ["*"]` leaves every `$` as
it is. And every step key is made one Buildkite accepts (`valid_key`), unique
in the pipeline (`key_map`, `unique_key`).
"""

from __future__ import annotations

import functools
import re
from typing import Any

# A plain word that every YAML reader takes as this very string (fastyaml reads the same dialect back).
PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")
# YAML 1.1 words that a plain scalar would turn into a bool or null: these are always quoted.
SPECIAL_WORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null"})

# Characters that cannot stand raw inside a double-quoted YAML scalar, or that a
# YAML reader would fold or drop: controls, NEL and the Unicode line separators,
# the BOM, non-characters, lone surrogates; plus the quote and the backslash.
_UNSAFE = re.compile("[\x00-\x1f\"\\\\\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}  # JSON-compatible escapes


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


class Safe(str):
    """Text that is already YAML (a quoted scalar, a flow collection): emitted as is."""

    __slots__ = ()


def scalar(value: Any) -> Safe:
    """Any value as a YAML scalar that parses back to exactly that value."""
    if type(value) is not str:  # a plain str, the common case, goes straight to the end
        if isinstance(value, Safe):
            return value
        if value is None:
            return Safe("null")
        if value is True or value is False:
            return Safe("true" if value else "false")
        if isinstance(value, int):
            return Safe(str(value))
        if isinstance(value, float):
            return Safe(repr(value)) if value == value and value not in (float("inf"), float("-inf")) else \
                Safe('"' + repr(value) + '"')
        if isinstance(value, (dict, list, tuple)):
            return flow(value)
        value = str(value)
    return _text(value)


@functools.lru_cache(maxsize=4096)  # a pipeline writes the same keys, queues and images on every step
def _text(value: str) -> Safe:
    if PLAIN.match(value) and value.lower() not in SPECIAL_WORDS:
        return Safe(value)  # a plain word every YAML reader takes as this string
    return quoted(value)


def quoted(text: str) -> Safe:
    """A JSON-style double-quoted YAML string (valid JSON too)."""
    if text.isascii() and text.isprintable():  # of the unsafe characters, only the quote and the backslash
        return Safe('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return Safe('"' + _UNSAFE.sub(_escape_char, text) + '"')


def flow(value: Any) -> Safe:
    """A structure as YAML flow style, written as JSON (strings always quoted)."""
    if isinstance(value, dict):
        return Safe("{" + ", ".join(f"{quoted(str(k))}: {flow(v)}" for k, v in value.items()) + "}")
    if isinstance(value, (list, tuple)):
        return Safe("[" + ", ".join(flow(v) for v in value) + "]")
    if isinstance(value, str):
        return quoted(value)
    return scalar(value)


def block(value: Any, indent: int = 0) -> Safe:
    """A structure as block-style YAML lines at `indent` spaces, every leaf through scalar()."""
    return Safe("\n".join(_block_lines(value, indent)))


def _block_lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict) and value:
        out = []
        for key, item in value.items():
            if isinstance(item, (dict, list, tuple)) and item:
                out.append(f"{pad}{scalar(str(key))}:")
                out += _block_lines(item, indent + 2)
            else:
                out.append(f"{pad}{scalar(str(key))}: {scalar(item)}")
        return out
    if isinstance(value, (list, tuple)) and value:
        out = []
        for item in value:
            if isinstance(item, (dict, list, tuple)) and item:
                inner = _block_lines(item, indent + 2)
                out.append(f"{pad}- {inner[0].lstrip()}")
                out += inner[1:]
            else:
                out.append(f"{pad}- {scalar(item)}")
        return out
    return [pad + scalar(value)]
