"""Each checker of declarations/fields.py as a JSON Schema fragment (draft-07) and in words.

A fragment accepts what its checker accepts, so an editor never marks a value the loader takes;
what a fragment cannot say (a glob that does not compile, a regular expression) the loader still
refuses, naming the file and line. A checker without an entry here is a KeyError when the schema
is made: a new checker cannot be left out of it.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations import fields as f
from pipegen.declarations.policy import dependency_sets

NO_NUL = "^[^\\u0000]*$"  # fields.string refuses a NUL: no command line, variable or name can hold one
STRING = {"type": ["string", "number"], "pattern": NO_NUL}  # a number is read as its text
ITEM = "#/definitions/pipegen-entry"
ENTRIES = "#/definitions/pipegen-entries"
# One upload-time variable, unquoted, as Buildkite's parser reads it (upload_escape.upload_variable): a name
# starting with a letter; a default (`:-`, `-`) that is a whole number >= 1 (fields.minutes), a `?` message
# (no `${` in it), or a substring `:OFFSET[:LENGTH]`.
_NAME = "[A-Za-z][A-Za-z0-9_]*"
_MESSAGE = "(?:[^}\\s#'\"$]|\\$(?!\\{))*"
UPLOAD_MINUTES = (f"^\\s*\\$(?:{_NAME}|\\{{{_NAME}(?::?-0*[1-9][0-9]*|\\?{_MESSAGE}|:\\+?[0-9]+(?::[+-]?[0-9]+)?)?"
                  "\\})\\s*$")

# A glob (it has * ? or [) that starts with '#', after an exclusion's '!': gitignore reads it as a comment.
_COMMENT = {"type": "string", "pattern": "^!?#.*[*?\\[]"}
# Shared parts the fragments point to ($ref), merged into the schema's definitions.
DEFINITIONS: dict[str, Any] = {
    # An entry list: a string, or a list whose items may be lists (an alias of an anchored list: `[*core, src/]`).
    "pipegen-entries": {"type": ["array", "string", "null"], "pattern": NO_NUL, "not": _COMMENT,
                        "items": {"$ref": ITEM}},
    "pipegen-entry": {"anyOf": [{**STRING, "not": _COMMENT}, {"type": "array", "items": {"$ref": ITEM}}]},
}


def _strings(words: str = "string or list of strings") -> tuple[str, dict[str, Any]]:
    return words, {"type": ["array", "string", "null"], "pattern": NO_NUL, "items": STRING}


_ROOTS = {"anyOf": [STRING, {"type": "array", "items": STRING, "minItems": 1}]}
_NAME_VALUE = {"type": ["object", "null"], "propertyNames": {"minLength": 1, "pattern": "^[^=\\u0000]*$"},
               "additionalProperties": {"type": ["string", "number", "boolean"], "pattern": NO_NUL}}

TYPES: dict[Any, tuple[str, dict[str, Any]]] = {
    f.string: ("string", STRING),
    f.optional_string: ("string", {**STRING, "type": ["string", "number", "null"]}),
    f.boolean: ("true or false", {"type": "boolean"}),
    f.positive_int: ("whole number >= 1", {"type": "integer", "minimum": 1}),
    f.minutes: ("whole number >= 1, or one upload-time variable ('${TIMEOUT:-30}')",
                {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": UPLOAD_MINUTES}]}),
    f.string_list: _strings(),
    f.regex_list: _strings("regular expression or list of them (Python's re.match)"),
    f.nested_command_list: ("string or list of strings (lists in it are flattened)",
                            {"type": ["array", "string", "null"], "pattern": NO_NUL,
                             "items": {"$ref": ITEM}}),
    f.entry_list: ("entries: a path or glob, or a list of them ('!' excludes)", {"$ref": ENTRIES}),
    f.env_map: ("mapping of NAME: value", _NAME_VALUE),
    f.soft_fail: ("true, false or a list of {exit_status: N}",
                  {"anyOf": [{"type": "boolean"},
                             {"type": "array", "items": {"type": "object", "required": ["exit_status"],
                                                         "properties": {"exit_status": {"type": "integer"}}}}]}),
    f.mapping: ("mapping", {"type": ["object", "null"]}),
    f.anything: ("any", {}),
    f.derive_map: ("mapping of python/cargo roots, and use: select|check", {
        "type": "object", "additionalProperties": False,
        "properties": {kind: _strings()[1] for kind in f.DERIVE_KINDS} | {"use": {"enum": ["select", "check"]}},
        "anyOf": [{"required": [kind], "properties": {kind: _ROOTS}} for kind in f.DERIVE_KINDS]}),
    dependency_sets: ("mapping of set name: entries", {"type": "object", "additionalProperties": {"$ref": ENTRIES}}),
}


def type_of(check: Any) -> tuple[str, dict[str, Any]]:
    """The words and the JSON Schema fragment of a checker (a Field's own fragment first)."""
    inner = getattr(check, "check", check)
    if isinstance(inner, f.choice):
        words, fragment = " | ".join(inner.options), {"enum": list(inner.options)}
    else:
        words, fragment = TYPES[inner]
    schema = getattr(check, "schema", None)
    return getattr(check, "words", "") or words, dict(fragment if schema is None else schema)
