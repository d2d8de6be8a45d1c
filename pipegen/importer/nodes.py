"""A parsed Buildkite pipeline file -> Nodes, each step of the kind Buildkite reads it as.

Buildkite tells a step's kind by its shape: a bare string (`wait`, `block`, `input`), a `type`, or the
key that names it (`wait`/`waiter`, `block`/`manual`, `input`, `trigger`, `group`); anything else
with `command`, `commands` or `plugins` is a command step. Something else is bad input (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipegen.declarations.yamlio import LocDict, LocList
from pipegen.errors import DeclarationError
from pipegen.importer.said import Said
from pipegen.model import Location

STRING_STEPS = {"wait": "wait", "waiter": "wait", "block": "block", "input": "input"}
NAMING_KEYS = (("wait", "wait"), ("waiter", "wait"), ("block", "block"), ("manual", "block"), ("input", "input"),
               ("trigger", "trigger"), ("group", "group"))
COMMAND_KEYS = ("command", "commands", "plugins", "script")
TOP_FIELDS = ("steps", "env", "agents", "notify", "secrets", "image", "priority", "checkout", "if_changed")


@dataclass
class Node:
    """One step as written: its kind, its fields (plain data; a group's without `steps`), its children."""

    kind: str
    fields: dict[str, Any]
    where: Location
    children: list[Node] = field(default_factory=list)
    watch: tuple[str, ...] | None = None  # source_file_dependencies a path rule gave it (path_rules.py)
    ident: str = ""  # the key it has, or the one the import gives it (convert.py)

    @property
    def key(self) -> str | None:
        for name in ("key", "identifier", "id"):
            value = self.fields.get(name)
            if isinstance(value, str):
                return value
        return None

    @property
    def label(self) -> str | None:
        names = ("label", "name", self.kind) if self.kind in ("group", "block", "input") else ("label", "name")
        return next((value for value in map(self.fields.get, names) if isinstance(value, str)), None)


@dataclass
class Pipeline:
    """A pipeline file: its steps and its pipeline-level fields."""

    file: str
    steps: list[Node]
    top: dict[str, Any] = field(default_factory=dict)  # env, agents, notify, ...


def plain(value: Any) -> Any:
    """Parsed YAML (LocDict/LocList) as plain dicts and lists, for writing and comparing."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _loc(data: object, key: object, file: str) -> Location:
    """Where yamlio read an item (a plain dict or list, such as the rendered pipeline's, knows no line)."""
    if isinstance(data, LocDict):
        return data.loc(key)
    if isinstance(data, LocList) and isinstance(key, int):
        return data.loc(key)
    return Location(file)


def read_pipeline(data: object, file: str, notes: list[Said] | None = None) -> Pipeline:
    """A parsed pipeline file (yamlio's LocDict/LocList) as Nodes. A top-level key that is no pipeline field
    (`common:`, a place for YAML anchors) is one Buildkite's schema allows and ignores: left out, noted."""
    where = Location(file, 1, 1)
    if isinstance(data, list):
        return Pipeline(file, read_steps(data, file))
    if not isinstance(data, dict) or "steps" not in data:
        raise DeclarationError("not a Buildkite pipeline: it has no 'steps:'", where,
                               "give the pipeline.yml that 'buildkite-agent pipeline upload' reads")
    for name in (name for name in data if name not in TOP_FIELDS):
        if notes is not None:
            notes.append(Said(_loc(data, name, file), f"the top-level '{name}' is no pipeline field (Buildkite "
                              "ignores it; YAML anchors written there were resolved where they are used); not "
                              "imported"))
    steps = data["steps"]
    if not isinstance(steps, list):
        raise DeclarationError("'steps' must be a list of steps", _loc(data, "steps", file),
                               "write '- command: ...' items")
    top = {k: plain(v) for k, v in data.items() if k != "steps" and k in TOP_FIELDS}
    return Pipeline(file, read_steps(steps, file), top)


def read_steps(steps: list[Any], file: str, inside_group: bool = False) -> list[Node]:
    out: list[Node] = []
    for index, raw in enumerate(steps):
        where = _loc(steps, index, file)
        if raw is None:
            continue  # `- ` with nothing: Buildkite skips an empty item
        out.append(read_step(raw, where, file, inside_group))
    return out


def read_step(raw: object, where: Location, file: str, inside_group: bool = False) -> Node:
    if isinstance(raw, str):
        if raw not in STRING_STEPS:
            raise DeclarationError(f"'{raw}' is not a step", where,
                                   "a step is a mapping, or one of the words wait, block, input")
        return Node(STRING_STEPS[raw], {}, where)
    if not isinstance(raw, dict):
        raise DeclarationError("a step must be a mapping", where, "write '- command: ...'")
    kind = _kind(raw, where)
    fields = {k: plain(v) for k, v in raw.items() if not (kind == "group" and k == "steps")}
    node = Node(kind, fields, where)
    if kind == "group":
        if inside_group:
            raise DeclarationError("a group inside a group", where, "Buildkite's groups hold steps, not other groups")
        children = raw.get("steps")
        if not isinstance(children, list):
            raise DeclarationError("a group needs a 'steps:' list", where, "add 'steps:' with the group's steps")
        node.children = read_steps(children, file, inside_group=True)
    return node


def _kind(raw: dict[str, Any], where: Location) -> str:
    declared = raw.get("type")
    if isinstance(declared, str):
        kinds = dict(NAMING_KEYS) | {"command": "command", "script": "command"}
        if declared in kinds:
            return kinds[declared]
    for name, kind in NAMING_KEYS:
        if name in raw:
            return kind
    if any(name in raw for name in COMMAND_KEYS):
        return "command"
    raise DeclarationError("a step with no command, commands, plugins, trigger, group, wait, block or input", where,
                           "give it 'command: ...' (or the field of the step kind it is)")
