"""A step of pipegen's own format: pipegen's fields, plus every field of a Buildkite command step.

Buildkite's fields are the ones its schema defines (buildkite/step_fields.py),
each checked at load against its own definition; an error names the file,
line and column, the field, what the schema expects and a did-you-mean. A
steps file's `defaults:` block gives its fields to every step that does not
set them (`env` and `agents` merge, the step's own values winning).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pipegen.declarations.fields import Checker, require_mapping, string
from pipegen.declarations.yamlio import LocDict, LocList
from pipegen.errors import DeclarationError, suggest
from pipegen.model import Group, Location

# Buildkite fields that pipegen reads itself: checked by the schema, then taken apart.
READ = ("depends_on", "soft_fail", "retry", "agents")
MERGED = ("env", "agents", "agent_tags")  # mappings a step merges with its defaults
NOT_DEFAULTS = ("key", "identifier", "id")  # a key names one step


def with_defaults(defaults: LocDict | None, item: LocDict) -> LocDict:
    """The step's fields over its file's defaults; mappings in MERGED merge (the step's keys win)."""
    if not defaults:
        return item
    return _merge(defaults, item, MERGED)


def _merge(base: LocDict, top: LocDict, deep: tuple[str, ...] = ()) -> LocDict:
    out = LocDict()
    out.file, out.mark, out.key_marks = top.file, top.mark, {}
    for source in (base, top):
        for name, value in source.items():
            if name in deep and name in out:
                earlier, value = _tags(out[name]), _tags(value)
                if isinstance(earlier, LocDict) and isinstance(value, LocDict):
                    value = _merge(earlier, value)
            out[name] = value
            out.key_marks[name] = source.key_marks.get(name, source.mark)
    return out


def _tags(value: Any) -> Any:
    """Agent tags written as a list of 'k=v' (Buildkite takes both) as a mapping, to merge."""
    if not isinstance(value, LocList) or not all(isinstance(t, str) and "=" in t for t in value):
        return value
    out = LocDict()
    out.file, out.mark, out.key_marks = value.file, value.mark, {}
    for index, tag in enumerate(value):
        name, text = tag.split("=", 1)
        out[name], out.key_marks[name] = text, value.item_marks[index]
    return out


def check_defaults(defaults: Any, where: Location) -> LocDict | None:
    if defaults is None:
        return None
    data = require_mapping(defaults, where, "'defaults'")
    for name in NOT_DEFAULTS:
        if name in data:
            raise DeclarationError(f"'{name}' cannot be a default: a key names one step", data.loc(name),
                                   f"move '{name}' to the step it names")
    return data


def split(item: LocDict, own: Mapping[str, Checker]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pipegen's fields through its checkers, Buildkite's fields as written, checked by the schema)."""
    from pipegen.buildkite.step_fields import ALIASES, field_names, problems

    mine: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    known: frozenset[str] | None = None
    for name, value in item.items():
        canonical = ALIASES.get(name, name)
        if canonical != name and canonical in item:
            raise DeclarationError(f"'{name}' is Buildkite's other name for '{canonical}', which is also set",
                                   item.loc(name), f"keep only '{canonical}'")
        if canonical in own and (canonical not in READ or _plain(canonical, value)):
            try:
                mine[canonical] = own[canonical](value, item.loc(name))
            except DeclarationError as exc:
                raise DeclarationError(f"step field '{name}': {exc.message}", exc.location, exc.fix) from None
            continue
        known = known or field_names()
        if name not in known:
            raise DeclarationError(f"unknown step field '{name}' (neither pipegen's nor a Buildkite command step's)",
                                   item.loc(name), suggest(name, set(own) | known))
        theirs[name] = value
    for problem in problems(theirs):
        where = _locate(item, problem.field, problem.path)
        inside = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.path)
        fix = problem.hint or f"write {problem.expects} (Buildkite's schema, field '{problem.field}')"
        raise DeclarationError(f"step field '{problem.field}{inside}': {problem.message}; Buildkite's schema "
                               f"expects {problem.expects}", where, fix)
    return mine, theirs


def _plain(name: str, value: Any) -> bool:
    """A value in the shape pipegen's own checker takes (depends_on keys, soft_fail true/false): no schema
    needed, so steps that use no other Buildkite field never load it (`pipegen select` stays fast)."""
    if name == "soft_fail":
        return isinstance(value, bool)
    return name == "depends_on" and (isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)))


def _locate(item: LocDict, name: str, path: tuple[Any, ...]) -> Location:
    """The line and column of the innermost part of a field's value that was written down."""
    where, node = item.loc(name), item.get(name)
    for part in path:
        if (isinstance(node, LocDict) and part in node
                or isinstance(node, LocList) and isinstance(part, int) and part < len(node)):
            where, node = node.loc(part), node[part]
        else:
            break
    return where


def read(theirs: dict[str, Any], item: LocDict) -> dict[str, Any]:
    """Buildkite's fields as Step fields: the ones pipegen reads taken apart, the rest kept verbatim."""
    out: dict[str, Any] = {}
    if "depends_on" in theirs:
        out["depends_on"], out["allow_failure_on"] = _depends_on(theirs["depends_on"], item.loc("depends_on"))
    if "soft_fail" in theirs:
        out["soft_fail"] = _soft_fail(theirs["soft_fail"], item.loc("soft_fail"))
    if "retry" in theirs:
        out["retry"] = theirs["retry"]
    if "agents" in theirs:
        out["agent_tags"] = _agents(theirs["agents"], item)
    out["buildkite"] = tuple((k, v) for k, v in theirs.items() if k not in READ)
    return out


def depends_on(value: Any, where: Location, what: str = "depends_on") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Any depends_on Buildkite takes (a key, keys, `{step, allow_failure}` items): (keys, those whose failure
    is allowed); what the schema refuses is an error naming `what`."""
    if _plain("depends_on", value):  # keys only: no schema needed (select stays fast)
        return _depends_on(value, where)
    from pipegen.buildkite.step_fields import problems

    for problem in problems({"depends_on": value}):
        raise DeclarationError(f"{what}: {problem.message}; Buildkite's schema expects {problem.expects}", where,
                               "write a key, a list of keys, or '- step: KEY' items (with 'allow_failure: true')")
    return _depends_on(value, where)


GROUP_OWN = ("group", "label", "name", "steps")  # a group's name (Buildkite's three spellings); its steps


def group_fields(raw: Any, where: Location) -> tuple[str, Any]:
    """A steps file's `group:`: a name, or a mapping of Buildkite's group-step fields without `steps`
    (`{group: NAME, key, depends_on, if, notify, allow_dependency_failure, ...}`): (name, model.Group or None)."""

    if not isinstance(raw, dict):
        return string(raw, where).strip(), None
    data = require_mapping(raw, where, "'group'")
    names = [n for n in GROUP_OWN[:3] if n in data]
    if len(names) != 1 or "steps" in data:
        raise DeclarationError("a group written as a mapping needs its name under 'group' (once) and no 'steps'",
                               where, "write 'group: {group: NAME, key: KEY, depends_on: [...]}' above 'steps:'")
    from pipegen.buildkite.schema import load_schema

    definition = load_schema()["definitions"]["groupStep"]["properties"]
    for name in data:
        if name not in definition:
            raise DeclarationError(f"unknown group field '{name}'", data.loc(name),
                                   suggest(name, set(definition) - {"steps"}))
    _check_group(data)
    key = data.get("key", data.get("identifier", data.get("id")))
    keys: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    if "depends_on" in data:
        keys, allowed = depends_on(data["depends_on"], data.loc("depends_on"), "group field 'depends_on'")
    rest = tuple((k, v) for k, v in data.items()  # a declared `depends_on: []` is kept as written: it opts out of
                 if k not in (*GROUP_OWN, "key", "identifier", "id") and (k != "depends_on" or not keys))  # the waits
    name = string(data[names[0]], data.loc(names[0])).strip()
    return name, Group(name, data.loc(), key, keys, allowed, rest)


def _check_group(data: LocDict) -> None:
    import fastjsonschema

    from pipegen.buildkite.schema import validator

    try:
        validator()({"steps": [{**data, "steps": [{"command": "true"}]}]})
    except fastjsonschema.JsonSchemaException:
        refuse_field("group field", data, "groupStep", data.loc)


def refuse_field(what: str, fields: Mapping[str, Any], step_type: str, loc: Callable[[str], Location]) -> None:
    """Raise for the first field whose value the schema's `step_type` (groupStep, ...) refuses, naming it and
    what the schema expects (asked only once the whole item failed)."""
    from pipegen.buildkite.schema import load_schema
    from pipegen.buildkite.schema_errors import refusal
    from pipegen.buildkite.step_fields import expects

    definition = load_schema()["definitions"][step_type]["properties"]
    for name, value in fields.items():
        best = refusal(("definitions", step_type, "properties", name), value) if name in definition else None
        if best is not None:
            raise DeclarationError(f"{what} '{name}': {best.message}; Buildkite's schema expects "
                                   f"{expects(definition[name])}", loc(name)) from None


def _depends_on(value: Any, where: Location) -> tuple[tuple[str, ...], tuple[str, ...]]:
    keys: list[str] = []
    allowed: list[str] = []
    for item in [] if value is None else [value] if isinstance(value, str) else value:
        if isinstance(item, str):
            keys.append(item)
            continue
        if "step" not in item:
            raise DeclarationError("a depends_on item written as a mapping needs 'step'", where,
                                   "write '- step: KEY' (and optionally 'allow_failure: true')")
        keys.append(item["step"])
        if item.get("allow_failure") in (True, "true"):
            allowed.append(item["step"])
    return tuple(keys), tuple(allowed)


def _soft_fail(value: Any, where: Location) -> bool | tuple[int | str, ...]:
    if isinstance(value, (bool, str)):
        return value in (True, "true")
    statuses = []
    for item in value:
        if "exit_status" not in item:
            raise DeclarationError("a soft_fail item needs 'exit_status'", where, "write '- exit_status: N' (or '*')")
        statuses.append(item["exit_status"])
    return tuple(statuses)


def _agents(value: Any, item: LocDict) -> tuple[tuple[str, str], ...]:
    pairs = value.items() if isinstance(value, dict) else [tuple(t.split("=", 1)) if "=" in t else (t, "")
                                                            for t in value]
    out = []
    for name, tag in pairs:
        if name == "queue":
            raise DeclarationError("a step cannot set its agent queue: pipegen puts each job on the queue of its "
                                   "hardware", item.loc("agents"),
                                   "remove 'queue' and name the hardware instead, e.g. 'hardware: [cpu]' or "
                                   "'hardware: [h100:2]'; the inventory maps each family and GPU count to a queue")
        out.append((str(name), str(tag).lower() if isinstance(tag, bool) else str(tag)))
    return tuple(out)


# Buildkite's other step types, as a hand-written pipeline.yml has them: what each becomes in pipegen.
OTHER_STEPS = {
    "wait": ("a wait step: pipegen orders steps by depends_on", "remove it and give the steps after it "
             "'depends_on: [KEY, ...]' (a wait step waits for every step before it)"),
    "block": ("a block step: a steps file holds command steps, and every unselected one already waits behind "
              "a block step of its own", ""),
    "input": ("an input step: a steps file holds command steps only", ""),
    "trigger": ("a trigger step: a steps file holds command steps only", ""),
    "steps": ("a group step: a steps file is one group", "move its steps into a steps file of their own, "
              "with 'group: <name>' at the top"),
}
KEEP_OUTSIDE = ("keep it in the pipeline.yml that uploads pipegen's output, and list its key under the config's "
                "external_steps so that steps can depend_on it")


def command_step_only(raw: Any, where: Location) -> None:
    """A wait, block, input, trigger or group step copied from a pipeline.yml: what to do with it, not
    'unknown step field'."""
    if raw in ("wait", "waiter") or isinstance(raw, dict) and "waiter" in raw:
        kind: str | None = "wait"
    else:
        kind = next((k for k in OTHER_STEPS if isinstance(raw, dict) and k in raw), None)
    if kind:
        message, fix = OTHER_STEPS[kind]
        raise DeclarationError(message, where, fix or KEEP_OUTSIDE)
