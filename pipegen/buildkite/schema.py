"""Validate a pipeline against Buildkite's published JSON schema, fast.

The schema is vendored: `pipegen/buildkite/buildkite-pipeline-schema.json` is Buildkite's
https://github.com/buildkite/pipeline-schema (`schema.json`, draft-07, MIT: its LICENSE beside it),
as check-jsonschema 0.39.0 vendors it (`check_jsonschema/builtin_schemas/vendor/buildkite.json`,
sha256 da8e5f1e0413b975...); update it from there, or from Buildkite's repository, and run the tests.
fastjsonschema turns it into Python once, when the wheel is built (setup.py writes
`pipegen/buildkite/compiled_schema.py`, byte-compiled on install like any module): a run imports
it in about a millisecond. Without that module (a checkout), or when it was made from another schema
or fastjsonschema, the schema is compiled in the process (about 300 ms): nothing compiled is ever read
back from a cache. schema_errors.validate says why the schema refuses a pipeline.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import re
from collections.abc import Callable
from typing import Any

import fastjsonschema  # the compiled schema imports it anyway

SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "buildkite-pipeline-schema.json")
COMPILED_MODULE = "pipegen.buildkite.compiled_schema"  # written by setup.py into the wheel
_FIX_VERSION = "2"  # bump when _prepare changes


@functools.cache
def schema_bytes() -> bytes:
    with open(SCHEMA_FILE, "rb") as handle:
        return handle.read()


@functools.cache
def load_schema() -> dict[str, Any]:
    """The schema as Buildkite publishes it, parsed once per process and shared: read it, never change it
    (_prepare makes a changed copy)."""
    schema: dict[str, Any] = json.loads(schema_bytes())
    return schema


_CLASS = re.compile(r"\[(?:\\.|[^\]\\])*\]")


# Step types pipegen writes, tried first (anyOf does not depend on the order of its branches).
_FIRST = ("#/definitions/commandStep", "#/definitions/blockStep", "#/definitions/groupStep")


def _prepare(node: Any) -> Any:
    """The schema as fastjsonschema should compile it; the same language, two adjustments.

    - fastjsonschema rewrites every `$` of a pattern to `\\Z`, even inside `[...]`
      (where it then fails to compile): such a `$` is escaped instead;
    - the branches of the step-type `anyOf`s are reordered so that command, block
      and group steps are tried first (anyOf means "any branch", in any order).
    """
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                value = _CLASS.sub(lambda m: re.sub(r"(?<!\\)\$", r"\\$", m.group()), value)
            elif key == "anyOf" and isinstance(value, list) and any(
                    isinstance(v, dict) and v.get("$ref") in _FIRST for v in value):
                rank = {ref: i for i, ref in enumerate(_FIRST)}
                value = sorted((_prepare(v) for v in value), key=lambda v: rank.get(str(v.get("$ref")), len(_FIRST))
                               if isinstance(v, dict) else len(_FIRST))
            else:
                value = _prepare(value)
            out[key] = value
        return out
    if isinstance(node, list):
        return [_prepare(v) for v in node]
    return node


def prepared(schema: dict[str, Any]) -> Any:
    """A schema that embeds Buildkite's definitions, made ready for fastjsonschema as Buildkite's own is."""
    return _prepare(schema)


def stamp() -> str:
    """What the compiled validator is made from: the schema, fastjsonschema's version, _prepare's."""
    return f"{hashlib.sha256(schema_bytes()).hexdigest()}-{fastjsonschema.VERSION}-{_FIX_VERSION}"


def compiled_source() -> str:
    """The validator as a Python module's text (setup.py writes it into the wheel)."""
    code = fastjsonschema.compile_to_code(_prepare(load_schema()), detailed_exceptions=False, use_default=False)
    return f"# Generated from Buildkite's schema by pipegen's setup.py: do not edit.\nfrom decimal import Decimal\n" \
           f"STAMP = {stamp()!r}\n{code}"


def write_compiled(target: str) -> None:
    """Write the compiled validator to `target` whole or not at all (setup.py, when the wheel is built): an
    interrupted build leaves no module cut short."""
    from pipegen.atomic import write_text

    write_text(target, compiled_source())


@functools.cache
def validator() -> Callable[[Any], Any]:
    """The compiled schema's validate(): the wheel's module, else compiled now from the vendored file."""
    try:
        module = importlib.import_module(COMPILED_MODULE)
    except (ImportError, SyntaxError, ValueError):  # absent, or cut short by an interrupted build: compile now
        module = None
    if module is not None and getattr(module, "STAMP", None) == stamp():
        built: Callable[[Any], Any] = module.validate
        return built
    namespace: dict[str, Any] = {"__name__": "pipegen_buildkite_schema"}
    exec(compile(compiled_source(), "<buildkite schema>", "exec"), namespace)  # noqa: S102 - made now, from the vendored schema
    validate: Callable[[Any], Any] = namespace["validate"]
    return validate
