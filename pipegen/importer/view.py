"""A pipeline as Buildkite reads it: one record per step, each field in one spelling, dependencies resolved.

What Buildkite treats as the same reads the same here: `command` and `commands` (the lines the job
runs), `name` and `label`, agents as `k=v` items or a mapping, the pipeline's `env` and `agents`
under the step's own, `branches` as a string or a list, a field at its default and the field left out.
A `wait` is what it does: every later step of its scope depends on every step before it
(`continue_on_failure`: allowing their failure). A group's `depends_on`, `if` and
`allow_dependency_failure` hold for each of its steps; a key naming a group or a wait stands for its
steps. Dependencies are compared after transitive reduction (steps.py's order is what they say, not
how they say it). A record not of a step (the pipeline's or a group's `notify`) is a record of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipegen.importer.families import tags
from pipegen.importer.nodes import Node, Pipeline
from pipegen.model import Location

DROPPED = ("key", "identifier", "id", "label", "name", "type", "depends_on", "command", "commands", "script",
           "if_changed", "steps", "group", "wait", "waiter")
DEFAULTS: dict[str, Any] = {"soft_fail": False, "skip": False, "allow_dependency_failure": False,
                            "cancel_on_build_failing": False, "parallelism": 1, "priority": 0, "async": False,
                            "continue_on_failure": False}
GROUP_DOWN = ("if", "allow_dependency_failure")  # a group's fields that hold for each of its steps


@dataclass
class Record:
    ident: str
    kind: str
    label: str | None
    group: str | None
    fields: dict[str, Any]
    where: Location
    deps: dict[str, bool] = field(default_factory=dict)  # ident -> allow_failure
    raw_deps: list[tuple[str, bool]] = field(default_factory=list)


class _Reader:
    def __init__(self, pipeline: Pipeline) -> None:
        self.top = pipeline.top
        self.records: dict[str, Record] = {}
        self.aliases: dict[str, list[str]] = {}  # group and wait keys -> the steps they stand for
        self.count = 0

    def scope(self, nodes: list[Node], group: Node | None, inherited: dict[str, bool]) -> list[str]:
        seen: list[str] = []
        barrier: dict[str, bool] = {}
        for node in nodes:
            if node.kind == "wait" and not _conditional_wait(node):
                barrier = {i: bool(node.fields.get("continue_on_failure")) for i in seen}
                if node.key:
                    self.aliases[node.key] = list(seen)
                continue
            if node.kind == "group":  # its steps wait for what it waits for (its depends_on replaces the waits)
                outer = {**inherited, **({} if "depends_on" in node.fields else barrier)}
                members = self.scope(node.children, node, outer)
                self.aliases[node.key or f"group:{node.label}"] = members
                self._group_record(node)
                seen += members
                continue
            if node.kind == "block":  # a block waits for every step before it, and every later step for it
                seen.append(self.step(node, group, inherited, dict.fromkeys(seen, False) or barrier))
                barrier = {seen[-1]: False}
                continue
            seen.append(self.step(node, group, inherited, barrier))
        return seen

    def step(self, node: Node, group: Node | None, inherited: dict[str, bool], waits: dict[str, bool]) -> str:
        self.count += 1
        ident = node.ident or node.key or f"#{self.count}"
        if node.key and node.key != ident:  # renamed by the import: the file's own references follow it
            self.aliases[node.key] = [ident]
        fields = normal_fields(node, self.top)
        # docs (depends-on): a step with depends_on runs "without waiting for block or wait steps"
        raw = list(inherited.items()) + ([] if "depends_on" in node.fields else list(waits.items())) + \
            depends(node.fields.get("depends_on"))
        if group is not None:
            raw += depends(group.fields.get("depends_on"))
            for name in GROUP_DOWN:
                if name in group.fields and group.fields[name] not in (None, False):
                    mine = fields.get(name)
                    fields[name] = group.fields[name] if mine in (None, group.fields[name]) else \
                        f"({group.fields[name]}) && ({mine})"
        record = Record(ident, node.kind, node.label, group.label if group else None, fields, node.where, raw_deps=raw)
        self.records[ident] = record
        return ident

    def _group_record(self, node: Node) -> None:
        fields = {k: v for k, v in node.fields.items() if k not in DROPPED and k not in GROUP_DOWN
                  and v not in (None, False, [], {})}
        if fields:
            ident = f"group:{node.label}"
            self.records[ident] = Record(ident, "group", node.label, None, fields, node.where)


def _conditional_wait(node: Node) -> bool:
    """A wait Buildkite may skip or that waits on something itself is a step of its own, not only an order."""
    return any(node.fields.get(name) for name in ("if", "depends_on", "allow_dependency_failure"))


def depends(value: object) -> list[tuple[str, bool]]:
    """`depends_on` in every form Buildkite takes: a key, keys, `{step, allow_failure}` items."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out: list[tuple[str, bool]] = []
    for item in items:
        if isinstance(item, str):
            out.append((item, False))
        elif isinstance(item, dict) and isinstance(item.get("step"), str):
            out.append((item["step"], bool(item.get("allow_failure"))))
    return out


def normal_fields(node: Node, top: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in node.fields.items():
        if name in DROPPED or DEFAULTS.get(name, object()) == value or value in (None, [], {}):
            continue
        out[name] = value
    lines = _commands(node.fields)
    if lines:
        out["commands"] = "\n".join(lines)
    if node.kind == "command":
        for name in ("env", "agents"):
            merged = {k: _text(v) for k, v in {**tags(top.get(name)), **tags(out.get(name))}.items()}
            if merged:
                out[name] = merged
    if isinstance(out.get("branches"), str):
        out["branches"] = out["branches"].split()
    if isinstance(out.get("plugins"), dict):
        out["plugins"] = [{k: v} for k, v in out["plugins"].items()]
    return out


def _text(value: object) -> object:
    """An env or agents value as the job gets it: YAML's `true` and `4` are the strings "true" and "4"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (int, float)) else value


def _commands(fields: dict[str, Any]) -> list[str]:
    for name in ("commands", "command", "script"):
        value = fields.get(name)
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [str(v) for v in value]
    return []


def read_view(pipeline: Pipeline) -> dict[str, Record]:
    """Every record of the pipeline by its ident, dependencies resolved and transitively reduced."""
    reader = _Reader(pipeline)
    reader.scope(pipeline.steps, None, {})
    if pipeline.top.get("notify"):
        reader.records["pipeline"] = Record("pipeline", "pipeline", None, None, {"notify": pipeline.top["notify"]},
                                            Location(pipeline.file))
    for record in reader.records.values():
        for target, allow in record.raw_deps:
            for ident in reader.aliases.get(target, [target]):
                record.deps[ident] = record.deps.get(ident, False) or allow
    _reduce(reader.records)
    return reader.records


def _reduce(records: dict[str, Record]) -> None:
    """Drop a dependency that another dependency already implies (a wait's 'everything before')."""
    reach: dict[str, set[str]] = {}

    def closure(ident: str, trail: frozenset[str] = frozenset()) -> set[str]:
        if ident in reach:
            return reach[ident]
        record = records.get(ident)
        out: set[str] = set()
        if record is not None and ident not in trail:
            for dep in record.deps:
                out |= {dep} | closure(dep, trail | {ident})
        reach[ident] = out
        return out

    for record in records.values():
        implied = set().union(*(closure(d) for d in record.deps)) if record.deps else set()
        record.deps = {d: allow for d, allow in record.deps.items() if d not in implied}
