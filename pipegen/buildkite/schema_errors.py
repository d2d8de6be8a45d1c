"""Why Buildkite's schema refuses a value, in words: asked only once the fast validator said no
(schema.validator); validate() raises with that reason.

fastjsonschema compiled with detailed exceptions names the rule and the path; each part of the schema
asked about is compiled once, when first asked (about 300 ms for a whole step type, an error's price).
Where an `anyOf` refuses, the branch of the value's own type that got furthest says why.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import fastjsonschema

from pipegen.buildkite.schema import _prepare, load_schema, validator
from pipegen.errors import OutputError
from pipegen.frozen import frozen

Pointer = tuple[str | int, ...]  # keys from the schema's root to one of its parts


@frozen
class Refusal:
    """One reason the schema refuses a value."""

    path: tuple[str | int, ...]  # inside the value
    rule: str  # the schema keyword: type, enum, anyOf, ...
    rule_value: Any  # that keyword's value in the schema (enum: the accepted values)
    value: Any  # the part of the value refused
    says: str  # fastjsonschema's words: 'must be string'

    @property
    def message(self) -> str:
        """'queue: 5 must be string' (the path inside the value, when there is one)."""
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")
        return f"{where + ': ' if where else ''}{self.subject} {self.says}"

    @property
    def subject(self) -> str:
        shown = repr(self.value)
        return shown if len(shown) <= 60 else f"the {_NOUNS.get(type(self.value), type(self.value).__name__)}"


_NOUNS: dict[type, str] = {dict: "mapping", list: "list", str: "text"}


def refusal(pointer: Pointer, value: Any) -> Refusal | None:
    """Why the schema's part at `pointer` refuses `value`; None when it accepts it."""
    try:
        _detailed(pointer)(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        path = _path(str(exc.name))
        if exc.rule in ("anyOf", "oneOf") and isinstance(exc.rule_definition, list):
            deeper = _best_branch(pointer, path, exc)
            if deeper is not None:
                return Refusal(path + deeper.path, deeper.rule, deeper.rule_value, deeper.value, deeper.says)
        says = str(exc.message)[len(str(exc.name)):].strip()  # 'data.queue must be string' less its path
        return Refusal(path, str(exc.rule), exc.rule_definition, exc.value, says)
    return None


def _best_branch(pointer: Pointer, path: tuple[str | int, ...], exc: Any) -> Refusal | None:
    """The refusal of the anyOf branch that accepts the value's type and fails deepest; None when no
    branch takes its type (the anyOf's own words are then the clearest)."""
    where = _locate(pointer, path)
    if where is None:
        return None
    found: list[Refusal] = []
    for index in range(len(exc.rule_definition)):
        reason = refusal((*where, exc.rule, index), exc.value)
        if reason is not None and not (reason.rule == "type" and not reason.path):
            found.append(reason)
    return max(found, key=lambda r: len(r.path)) if found else None


def _locate(pointer: Pointer, path: tuple[str | int, ...]) -> Pointer | None:
    """The pointer of the schema part that judged `path` inside a value of `pointer`: followed through
    properties, items and $ref; None where the way is not that plain."""
    root = load_schema()
    here = _at(root, pointer)
    out = list(pointer)
    for part in (*path, None):
        while isinstance(here, dict) and "$ref" in here:
            out = [p for p in str(here["$ref"]).lstrip("#/").split("/") if p]
            here = _at(root, tuple(out))
        if part is None or not isinstance(here, dict):
            break
        if isinstance(part, int) and isinstance(here.get("items"), dict):
            out, here = [*out, "items"], here["items"]
        elif isinstance(part, str) and part in here.get("properties", {}):
            out, here = [*out, "properties", part], here["properties"][part]
        else:
            return None
    return tuple(out) if isinstance(here, dict) else None


def _at(node: Any, pointer: Pointer) -> Any:
    for part in pointer:
        node = node[part]
    return node


@functools.cache
def _detailed(pointer: Pointer) -> Callable[[Any], Any]:
    """A validator of the schema's part at `pointer` (its definitions beside it), with detailed errors."""
    root = _prepare(load_schema())
    part = _at(root, pointer)
    schema = {**part, "definitions": root["definitions"]} if isinstance(part, dict) else part
    return fastjsonschema.compile(schema, use_default=False)


_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _path(name: str) -> tuple[str | int, ...]:
    """('steps', 0, 'key') for fastjsonschema's 'data.steps[0].key'."""
    return tuple(int(index) if index else key for key, index in _PART.findall(name.removeprefix("data")))


# A step's own definition, by the field that says its type: its errors name the field at fault, where the
# whole schema's anyOf over every step type blames whichever branch got furthest.
_STEP_TYPES = (("commands", "commandStep"), ("command", "commandStep"), ("block", "blockStep"),
               ("group", "groupStep"), ("trigger", "triggerStep"), ("input", "inputStep"), ("wait", "waitStep"))


def validate(data: Any) -> None:
    """Raise OutputError naming the first step Buildkite's schema refuses (`step_key`: its key)."""
    check = validator()  # outside the try: a schema that fails to compile is no verdict on the data
    try:
        check(data)
    except fastjsonschema.JsonSchemaException:
        text, key = explain(data)
        error = OutputError(f"the rendered pipeline does not match Buildkite's schema: {text}",
                            fix="this is a bug in pipegen or in a --templates override; nothing was printed")
        error.step_key = key
        raise error from None


def explain(data: Any) -> tuple[str, str | None]:
    """The most specific reason the schema gives, with the step it concerns; and that step's key."""
    check = validator()
    steps = data.get("steps") if isinstance(data, dict) else None
    for index, step in enumerate(steps if isinstance(steps, list) else ()):
        if _accepts(check, [step]):
            continue
        inner = step.get("steps") if isinstance(step, dict) and "group" in step else None
        for number, member in enumerate(inner if isinstance(inner, list) else ()):
            if not _accepts(check, [member]):
                return _step_reason(member, ("steps", index, "steps", number), data)
        return _step_reason(step, ("steps", index), data)
    reason = refusal((), data)
    return (_text((), reason) if reason else "refused", None)


def _accepts(check: Callable[[Any], Any], steps: list[Any]) -> bool:
    try:
        check({"steps": steps})
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _step_reason(step: Any, at: tuple[str | int, ...], data: Any) -> tuple[str, str | None]:
    kind = next((d for field, d in _STEP_TYPES if isinstance(step, dict) and field in step), None)
    reason = refusal(("definitions", kind), step) if kind else refusal((), {"steps": [step]})
    if reason is not None and not kind:  # found through {"steps": [step]}
        reason = Refusal(reason.path[2:], reason.rule, reason.rule_value, reason.value, reason.says)
    key = step.get("key") if isinstance(step, dict) and isinstance(step.get("key"), str) else None
    named = _step_name(step)
    return f"{named + ': ' if named else ''}{_text(at, reason) if reason else 'refused'}", key


def _text(at: tuple[str | int, ...], reason: Refusal) -> str:
    """'data.steps[3].agents: 5 must be object' for a reason found inside the value at `at`."""
    path = "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in (*at, *reason.path))
    return f"{path}: {reason.subject} {reason.says}"


def _step_name(step: Any) -> str:
    """'step KEY (LABEL)'."""
    if not isinstance(step, dict):
        return ""
    name = step.get("label") or step.get("block") or step.get("group") or ""
    return f"step '{step.get('key', '')}' ({name})" if step.get("key") else f"step ({name})"
