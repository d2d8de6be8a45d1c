"""Buildkite pipelines (Nodes) -> pipegen's declarations as plain data, with what could not be carried over.

One steps file per top-level group (and per run of top-level steps between groups), in pipeline order
(`NN-name.yaml`). Each command step keeps its fields as written; pipegen owns three things, so they
move: the queue (a family of the inventory), `wait` (the `depends_on` it means, read as Buildkite reads
it: view.py) and a path rule (`if_changed`, a monorepo-diff `watch`: `source_file_dependencies`).
The config says what the pipeline did before: steps without dependencies run on every build, an
unselected step is skipped (as `if_changed` skips it), `$` is Buildkite's syntax throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipegen.importer.families import Families, slug, tags
from pipegen.importer.pipeline import Node, Pipeline
from pipegen.importer.view import Record, read_view

MOVED = ("key", "identifier", "id", "type", "depends_on", "agents", "if_changed", "label", "name")
GROUP_FIELDS = ("group", "label", "name", "key", "steps", "depends_on", "if", "allow_dependency_failure",
                "if_changed")  # what a steps file can say of its group (the rest is named as not carried)
TOP_CARRIED = ("env", "agents")


@dataclass
class Imported:
    """What `pipegen import` writes (plain data by file name, relative to the output folder) and says."""

    files: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # said, exit 0
    missing: list[str] = field(default_factory=list)  # could not be carried over: exit 1
    steps: int = 0
    families: dict[str, str] = field(default_factory=dict)  # name -> queue
    selecting: list[str] = field(default_factory=list)  # keys of steps that now have dependencies
    views: list[dict[str, Record]] = field(default_factory=list)  # each input as Buildkite reads it


def assign_idents(pipelines: list[Pipeline], notes: list[str]) -> None:
    """Every step gets the key it has, or one made from its label; the same key in two files is renamed."""
    owner: dict[str, str] = {}
    for pipeline in pipelines:
        for node in _walk(pipeline.steps):
            key = node.key
            if key is not None and key in owner and owner[key] != pipeline.file:
                base = f"{key}-{slug(pipeline.file.rsplit('/', 1)[-1].rsplit('.', 1)[0], 30)}"
                node.ident = _unique(base, owner)
                notes.append(f"{node.where}: key '{key}' is also a key in {owner[key]}: renamed '{node.ident}' "
                             "(this file's depends_on follow it)")
            elif key is not None:
                node.ident = key
            owner.setdefault(node.ident, pipeline.file) if node.ident else None
    for pipeline in pipelines:  # then the steps without a key, around the keys written
        for node in _walk(pipeline.steps):
            if not node.ident and node.kind != "group":
                node.ident = _unique(slug(node.label or _first_line(node) or node.kind), owner)
                owner[node.ident] = pipeline.file


def _unique(base: str, taken: dict[str, str]) -> str:
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    return name


def _walk(nodes: list[Node]) -> list[Node]:
    return [n for node in nodes for n in ([node] + _walk(node.children))]


def _first_line(node: Node) -> str:
    value = node.fields.get("command", node.fields.get("commands"))
    lines = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return str(lines[0]).strip().splitlines()[0] if lines and str(lines[0]).strip() else ""


def convert(pipelines: list[Pipeline], out_dir: str) -> Imported:
    """`out_dir`: the output folder relative to the repository root (the config names its files by it)."""
    result = Imported()
    assign_idents(pipelines, result.notes)
    families = Families()
    number = 0
    for pipeline in pipelines:
        view = read_view(pipeline)
        result.views.append(view)
        _pipeline_level(pipeline, result)
        for name, data in _steps_files(pipeline, view, families, result):
            number += 1
            result.files[f"steps/{number:02d}-{name}.yaml"] = data
    known = {ident for view in result.views for ident in view}
    external = list(dict.fromkeys(d for view in result.views for r in view.values() for d in r.deps if d not in known))
    _dependencies_selected(result)
    inventory = families.inventory()
    config: dict[str, Any] = {"steps": [f"{out_dir}/steps"]}
    if inventory is not None:
        config["hardware"] = f"{out_dir}/hardware.yaml"
        result.files["hardware.yaml"] = inventory
        result.families = {name: queue for queue, name in families.by_queue.items()}
    config.update({"no_dependencies": "run", "unselected": "skip", "interpolate": ["*"]})
    if external:
        config["external_steps"] = external
    result.files["pipegen.yaml"] = config
    return result


def _dependencies_selected(result: Imported) -> None:
    """pipegen runs every dependency of a step it runs; the path rule skipped it and ran the dependent."""
    selecting = set(result.selecting)
    for view in result.views:
        for record in view.values():
            for target in record.deps:
                if target in selecting:
                    result.notes.append(f"step '{target}' is a dependency of '{record.ident}': pipegen runs it "
                                        f"whenever '{record.ident}' runs (its path rule skipped it before)")
                    selecting.discard(target)


def _pipeline_level(pipeline: Pipeline, result: Imported) -> None:
    for name in pipeline.top:
        if name not in TOP_CARRIED:
            result.missing.append(f"{pipeline.file}: the pipeline's '{name}' (pipegen's config has no place for it)")


def _steps_files(pipeline: Pipeline, view: dict[str, Record], families: Families,
                 result: Imported) -> list[tuple[str, dict[str, Any]]]:
    files: list[tuple[str, dict[str, Any]]] = []
    loose: list[Node] = []

    def flush() -> None:
        if any(node.kind != "wait" or node.ident in view for node in loose):
            files.append((slug(pipeline.file.rsplit("/", 1)[-1].rsplit(".", 1)[0], 40),
                          _file(None, list(loose), pipeline, view, families, result)))
        loose.clear()

    for node in pipeline.steps:
        if node.kind != "group":
            loose.append(node)
            continue
        flush()
        for name in node.fields:
            if name not in GROUP_FIELDS:
                result.missing.append(f"{node.where}: group '{node.label}': its '{name}' (a steps file's group "
                                      "has no such field)")
        files.append((slug(node.label or "group", 40), _file(node, node.children, pipeline, view, families, result)))
    flush()
    return files


def _file(group: Node | None, nodes: list[Node], pipeline: Pipeline, view: dict[str, Record], families: Families,
          result: Imported) -> dict[str, Any]:
    data: dict[str, Any] = {"group": group.label} if group is not None else {}
    if isinstance(pipeline.top.get("env"), dict) and pipeline.top["env"]:
        data["defaults"] = {"env": pipeline.top["env"]}
    steps = []
    for node in nodes:
        if node.kind == "wait" and node.ident not in view:
            continue  # an order only: the depends_on of the steps after it
        if node.kind != "command":
            result.missing.append(f"{node.where}: {_kind_name(node)} '{node.label or node.ident}' (pipegen's steps "
                                  "files hold command steps only)")
            continue
        steps.append(_step(node, group, view[node.ident], pipeline, view, families, result))
    data["steps"] = steps
    return data


def _kind_name(node: Node) -> str:
    return {"wait": "a wait step with if/depends_on", "block": "a block step", "input": "an input step",
            "trigger": "a trigger step"}.get(node.kind, f"a {node.kind} step")


def _step(node: Node, group: Node | None, record: Record, pipeline: Pipeline, view: dict[str, Record],
          families: Families, result: Imported) -> dict[str, Any]:
    result.steps += 1
    step: dict[str, Any] = {"label": node.label or _first_line(node) or node.ident, "key": node.ident}
    step.update({k: v for k, v in node.fields.items() if k not in MOVED})
    for name in ("if", "allow_dependency_failure"):  # a group's, for each of its steps (as view reads them)
        if name in record.fields:
            step[name] = record.fields[name]
    depends = [d if not allow else {"step": d, "allow_failure": True} for d, allow in record.deps.items()
               if d not in view or view[d].kind == "command"]
    if depends:
        step["depends_on"] = depends
    family, rest = families.place({**tags(pipeline.top.get("agents")), **tags(node.fields.get("agents"))})
    if family is not None and family != families.default():
        step["hardware"] = [family]
    if rest:
        step["agents"] = rest
    selection = _selection(node, group)
    if selection is not None:
        step["source_file_dependencies"] = selection
        result.selecting.append(node.ident)
    return step


def _selection(node: Node, group: Node | None) -> list[str] | None:
    if node.watch is not None:
        return list(node.watch)
    if group is not None and group.watch is not None:
        return list(group.watch)
    return None
