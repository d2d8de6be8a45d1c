"""Validate a pipeline against Buildkite's published JSON schema, fast.

The schema is the copy vendored by check-jsonschema
(`check_jsonschema/builtin_schemas/vendor/buildkite.json`: Buildkite's
github.com/buildkite/pipeline-schema, draft-07, kept current by
check-jsonschema's releases; pipegen depends on check-jsonschema for it; written
against check-jsonschema 0.39.0, whose copy has sha256 da8e5f1e0413b975...).
It is found without importing check_jsonschema, compiled once to Python by
fastjsonschema and cached (marshalled code, keyed by the schema's sha256),
so a run pays about a millisecond for validation instead of ~100 ms for
importing jsonschema. On an error, jsonschema explains it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import marshal
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import fastjsonschema  # the compiled schema imports it anyway

from pipegen.cache import cache_dir
from pipegen.errors import OutputError

SCHEMA_PACKAGE = "check_jsonschema"
SCHEMA_PATH = ("builtin_schemas", "vendor", "buildkite.json")
_FIX_VERSION = "2"  # bump when _prepare changes


def schema_file() -> str:
    spec = importlib.util.find_spec(SCHEMA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise OutputError("cannot validate the pipeline: check-jsonschema (which ships Buildkite's schema) "
                          "is not installed", fix="pip install check-jsonschema")
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, *SCHEMA_PATH)
        if os.path.isfile(path):
            return path
    raise OutputError("cannot validate the pipeline: Buildkite's schema is missing from check-jsonschema",
                      fix="reinstall check-jsonschema")


def load_schema() -> dict[str, Any]:
    with open(schema_file(), encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
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


def _cache_path(digest: str) -> str | None:
    folder = cache_dir()
    if not folder:
        return None
    tag = f"{sys.implementation.cache_tag}-{fastjsonschema.VERSION}-{_FIX_VERSION}"
    return os.path.join(folder, f"buildkite-schema-{digest[:16]}-{tag}.marshal")


@functools.cache
def validator() -> Callable[[Any], Any]:
    path = schema_file()
    with open(path, "rb") as handle:
        raw = handle.read()
    digest = hashlib.sha256(raw).hexdigest()
    cached = _cache_path(digest)
    code = None
    if cached and os.path.isfile(cached):
        try:
            with open(cached, "rb") as handle:
                code = marshal.loads(handle.read())
        except (OSError, ValueError, EOFError, TypeError):
            code = None
    if code is None:
        source = fastjsonschema.compile_to_code(_prepare(json.loads(raw)), detailed_exceptions=False,
                                                use_default=False)
        code = compile(source, "<buildkite schema>", "exec")
        if cached:
            try:
                os.makedirs(os.path.dirname(cached), exist_ok=True)
                temp = f"{cached}.{os.getpid()}.tmp"
                with open(temp, "wb") as handle:
                    handle.write(marshal.dumps(code))
                os.replace(temp, cached)
            except OSError:
                pass
    from decimal import Decimal

    namespace: dict[str, Any] = {"Decimal": Decimal, "__name__": "pipegen_buildkite_schema"}
    exec(code, namespace)  # noqa: S102 - code compiled from the vendored schema
    validate: Callable[[Any], Any] = namespace["validate"]
    return validate


def validate(data: Any) -> None:
    """Raise OutputError naming the first step Buildkite's schema refuses (`step_key`: its key)."""
    check = validator()  # outside the try: a schema that fails to compile is no verdict on the data
    try:
        check(data)
    except fastjsonschema.JsonSchemaException as exc:
        text, key = explain(data, exc)
        error = OutputError(f"the rendered pipeline does not match Buildkite's schema: {text}",
                            fix="this is a bug in pipegen or in a --templates override; nothing was printed")
        error.step_key = key
        raise error from None


# A step's own definition, by the field that says its type: its errors name the field at fault, where the
# whole schema's anyOf over every step type blames whichever branch got furthest.
_STEP_TYPES = (("commands", "commandStep"), ("command", "commandStep"), ("block", "blockStep"),
               ("group", "groupStep"))


def explain(data: Any, exc: Exception) -> tuple[str, str | None]:
    """The most specific reason jsonschema gives, with the step it concerns; and that step's key."""
    where = getattr(exc, "name", None) or ""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema comes with check-jsonschema
        return f"{_step_at(data, where) + ': ' if _step_at(data, where) else ''}{getattr(exc, 'message', exc)}", None
    schema = load_schema()
    best = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(data))
    if best is None:
        return str(getattr(exc, "message", exc)), None
    path = list(best.absolute_path)
    prefix: list[Any] = []
    for _ in range(2):  # a group, then a step inside it
        prefix = _step_prefix(path)
        step = _at(data, prefix)
        inner = _own_error(schema, step, jsonschema) if prefix else None
        if inner is None:
            break
        best, path = inner, prefix + list(inner.absolute_path)
        if _step_prefix(path) == prefix:
            break
    text = "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    named = _step_at(data, text)
    step = _at(data, _step_prefix(path))
    key = step.get("key") if isinstance(step, dict) and isinstance(step.get("key"), str) else None
    return f"{named + ': ' if named else ''}{text}: {best.message}", key


def _step_prefix(path: list[Any]) -> list[Any]:
    """The path of the step a data path is in: steps[i], or steps[i].steps[j] inside a group."""
    return path[:4] if path[2:3] == ["steps"] and len(path) >= 4 else path[:2] if path[:1] == ["steps"] else []


def _own_error(schema: dict[str, Any], step: Any, jsonschema: Any) -> Any:
    """The best error of a step against the definition of its own type; None when it has none."""
    for field, definition in _STEP_TYPES if isinstance(step, dict) else ():
        if field in step:
            own = {**schema["definitions"][definition], "definitions": schema["definitions"]}
            return jsonschema.exceptions.best_match(jsonschema.Draft7Validator(own).iter_errors(step))
    return None


def _at(data: Any, path: list[Any]) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _step_at(data: Any, path: str) -> str:
    """'step KEY (LABEL)' for a path like data.steps[3].steps[1].key."""
    match = re.match(r"data\.steps\[(\d+)\](?:\.steps\[(\d+)\])?", path or "")
    if not match or not isinstance(data, dict):
        return ""
    try:
        step = data["steps"][int(match.group(1))]
        if match.group(2) is not None:
            step = step["steps"][int(match.group(2))]
    except (KeyError, IndexError, TypeError):
        return ""
    if not isinstance(step, dict):
        return ""
    name = step.get("label") or step.get("block") or step.get("group") or ""
    return f"step '{step.get('key', '')}' ({name})" if step.get("key") else f"step ({name})"
