"""Buildkite's wait, block, input and trigger steps in a steps file of pipegen's own format.

Each becomes a Step of its `kind`: a trigger is selected like a command step
(its `source_file_dependencies`, run-all, ...), a wait, block or input step
is part of the pipeline's structure and always in it. Their fields are
Buildkite's, checked against the schema's definition of that step type and
kept verbatim; a key is written out only where it was declared.
"""

from __future__ import annotations

import os
from typing import Any

from pipegen.buildkite.keys import valid_key
from pipegen.declarations import buildkite_step as bk
from pipegen.declarations.fields import boolean, entry_list, require_mapping
from pipegen.errors import DeclarationError, suggest
from pipegen.model import Location, Step

KINDS = ("wait", "block", "input", "trigger")
NAMES = ("key", "identifier", "id")
OWN = ("source_file_dependencies", "optional")  # pipegen's fields a trigger step takes


def kind_of(raw: Any) -> str | None:
    """The Buildkite step type of a steps-file item other than a command step, or None."""
    if raw in ("wait", "waiter"):
        return "wait"
    if not isinstance(raw, dict):
        return None
    if "waiter" in raw or "wait" in raw or raw.get("type") in ("wait", "waiter"):
        return "wait"
    return next((k for k in KINDS[1:] if k in raw or raw.get("type") == k), None)


def other_step(raw: Any, where: Location, kind: str, group: str, depends: tuple[tuple[str, ...], tuple[str, ...]],
               relpath: str, index: int) -> Step:
    """The Step of a wait, block, input or trigger item; `depends`: the file's depends_on (keys, allowed)."""
    data: Any = {"wait": None} if isinstance(raw, str) else require_mapping(raw, where, f"a {kind} step")
    if "waiter" in data and "wait" not in data:  # the agent's other spelling, which the schema lacks
        data = _renamed(data, "waiter", "wait")
    definition = _definition(kind)
    for name in data:
        if name not in definition and not (kind == "trigger" and name in OWN):
            known = set(definition) | (set(OWN) if kind == "trigger" else set())
            raise DeclarationError(f"unknown {kind} step field '{name}'",
                                   data.loc(name) if hasattr(data, "loc") else where, suggest(name, known))
    theirs = {k: v for k, v in data.items() if k not in OWN}
    _check(kind, theirs, data, where)
    key = next((data[n] for n in NAMES if n in data), None)
    keys, allowed = depends
    if "depends_on" in data:
        keys, allowed = bk.depends_on(data["depends_on"], data.loc("depends_on"), f"the {kind} step's depends_on")
    label: str = next((data[n] for n in ("label", "name", kind, "prompt") if isinstance(data.get(n), str)), kind)
    entries = entry_list(data[OWN[0]], data.loc(OWN[0])) if OWN[0] in data else ()
    optional = boolean(data[OWN[1]], data.loc(OWN[1])) if OWN[1] in data else False
    stem = os.path.splitext(os.path.basename(relpath))[0]
    return Step(
        key=key if isinstance(key, str) else valid_key(f"{kind}-{stem}-{index + 1}"),
        label=label, group=group, location=where, kind=kind, depends_on=keys, allow_failure_on=allowed,
        # a trigger is selected like a command step (its steps file is one of its dependencies)
        dependencies=(*entries, relpath) if kind == "trigger" else (), optional=optional,
        buildkite=(*((("key", key),) if isinstance(key, str) else ()),
                   *((k, v) for k, v in theirs.items() if k not in ("depends_on", *NAMES)),
                   *((("depends_on", []),) if "depends_on" in data and not keys else ())),  # no implicit wait
    )


def _renamed(data: Any, old: str, new: str) -> Any:
    """A yamlio mapping with one key renamed, in place, keeping where each key was written."""
    out = type(data)()
    out.file, out.mark, out.key_marks = data.file, data.mark, dict(data.key_marks)
    for name, value in data.items():
        out[new if name == old else name] = value
    out.key_marks[new] = data.key_marks.get(old, data.mark)
    return out


def _definition(kind: str) -> dict[str, Any]:
    from pipegen.buildkite.schema import load_schema

    properties: dict[str, Any] = load_schema()["definitions"][f"{kind}Step"]["properties"]
    return properties


def _check(kind: str, theirs: dict[str, Any], data: Any, where: Location) -> None:
    import fastjsonschema

    from pipegen.buildkite.schema import validator

    try:
        validator()({"steps": [{**theirs}]})
        return
    except fastjsonschema.JsonSchemaException:
        pass
    bk.refuse_field(f"{kind} step field", theirs, f"{kind}Step",
                    lambda name: data.loc(name) if hasattr(data, "loc") else where)
    raise DeclarationError(f"Buildkite's schema refuses this {kind} step", where,
                           f"write it as Buildkite documents the {kind} step")
