"""Buildkite pipelines (Nodes) -> pipegen's declarations as plain data, with what could not be carried over.

The pipeline's structure is kept as written: one steps file per top-level group (its own fields in
`group:`) and per run of top-level steps between groups, in pipeline order (`NN-name.yaml`); `wait`,
`block`, `input` and `trigger` steps where they were; the pipeline's `env`, `agents`, `notify` in the
config's `pipeline:`. pipegen owns two things, so they move: a step's agents (a family of the inventory)
and a path rule (`if_changed`, a monorepo-diff `watch`: `source_file_dependencies`). The config says what
the pipeline did before: steps without dependencies run on every build, an unselected step is skipped
(as `if_changed` skips it), `$` is Buildkite's syntax throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipegen.importer.definitions import carry
from pipegen.importer.families import Families, slug, tags
from pipegen.importer.nodes import Node, Pipeline
from pipegen.importer.said import About, Said
from pipegen.importer.typed_fields import typed_fields
from pipegen.importer.view import Record, depends, read_view
from pipegen.model import Location

MOVED = ("key", "identifier", "id", "depends_on", "agents", "if_changed", "label", "name")
SELECTED = ("command", "trigger")  # the step kinds a change selects (the others are structure)
TOP_CARRIED = ("env", "agents", "notify", "secrets", "image", "priority")  # Buildkite's top-level fields


@dataclass
class Imported:
    """What `pipegen import` writes (plain data by file name, relative to the output folder) and says."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[Said] = field(default_factory=list)  # said, exit 0
    missing: list[Said] = field(default_factory=list)  # could not be carried over: exit 1
    steps: int = 0
    families: dict[str, str] = field(default_factory=dict)  # name -> its agent tags
    selecting: list[str] = field(default_factory=list)  # keys of steps that now have dependencies
    views: list[dict[str, Record]] = field(default_factory=list)  # each input as Buildkite reads it
    blocks_written: bool = False  # a block step is written (later files' steps opt out of it)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # group name -> the fields written for it


def assign_idents(pipelines: list[Pipeline], notes: list[Said]) -> dict[str, dict[str, str]]:
    """Every command and trigger step gets the key it has, or one made from its label; the same key in two
    files is renamed (the file's renames are returned, for its depends_on)."""
    owner: dict[str, str] = {}
    renames: dict[str, dict[str, str]] = {p.file: {} for p in pipelines}
    for pipeline in pipelines:
        for node in _walk(pipeline.steps):
            key = node.key
            if key is not None and key in owner and owner[key] != pipeline.file:
                base = f"{key}-{slug(pipeline.file.rsplit('/', 1)[-1].rsplit('.', 1)[0], 30)}"
                node.ident = renames[pipeline.file][key] = _unique(base, owner)
                notes.append(Said(node.where, f"key '{key}' is also a key in {owner[key]}: renamed '{node.ident}' "
                                  "(this file's depends_on follow it)"))
            elif key is not None:
                node.ident = key
            if node.ident:
                owner.setdefault(node.ident, pipeline.file)
    # then the steps without a key, around the keys written (a block too where waits become depends_on)
    keyed = SELECTED + (("block",) if len(pipelines) > 1 else ())
    for pipeline in pipelines:
        for node in _walk(pipeline.steps):
            if not node.ident and node.kind in keyed:
                node.ident = _unique(slug(node.label or _first_line(node) or node.kind), owner)
                owner[node.ident] = pipeline.file
    return renames


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


def convert(pipelines: list[Pipeline], out_dir: str, paths_field: str | None = None) -> Imported:
    """`out_dir`: the output folder relative to the repository root (the config names its files by it);
    `paths_field`: another selector's path-list field, read as source_file_dependencies."""
    result = Imported()
    renames = assign_idents(pipelines, result.notes)
    families = Families()
    written: list[tuple[str, dict[str, Any]]] = []
    top = _shared_top(pipelines)
    for pipeline in pipelines:
        view = read_view(pipeline)
        result.views.append(view)
        own = carry(pipeline.steps, _own_top(pipeline, top, result), result.missing, Location(pipeline.file))
        # Files rendered as one pipeline: a wait of one would also wait for the steps of the files before it.
        context = _Context(renames[pipeline.file], families, result, own, view if len(pipelines) > 1 else None,
                           paths_field)
        written += _steps_files(pipeline, context)
    width = max(2, len(str(len(written))))  # names sort in pipeline order past 99 files too
    result.files.update({f"steps/{number:0{width}d}-{name}.yaml": data for number, (name, data) in
                         enumerate(written, 1)})
    known = {ident for view in result.views for ident in view} | {
        n.key for p in pipelines for n in _walk(p.steps) if n.key}
    external = list(dict.fromkeys(d for view in result.views for r in view.values() for d in r.deps if d not in known))
    _dependencies_selected(pipelines, result)
    inventory = families.inventory()
    config: dict[str, Any] = {"steps": [f"{out_dir}/steps"]}
    if inventory is not None:
        config["hardware"] = f"{out_dir}/hardware.yaml"
        result.files["hardware.yaml"] = inventory
        result.families = families.described()
    config.update({"no_dependencies": "run", "unselected": "skip", "interpolate": ["*"]})
    if top:
        config["pipeline"] = top
    if external:
        config["external_steps"] = external
    result.files["pipegen.yaml"] = config
    return result


def _dependencies_selected(pipelines: list[Pipeline], result: Imported) -> None:
    """pipegen runs every step a step it runs depends on; the path rule skipped it and ran the dependent."""
    selecting = set(result.selecting)
    groups = {n.key: [c.ident for c in n.children] for p in pipelines for n in p.steps if n.kind == "group" and n.key}
    for node in (n for p in pipelines for n in _walk(p.steps)):
        for target in (t for key, _ in depends(node.fields.get("depends_on")) for t in groups.get(key, [key])):
            if target in selecting:
                result.notes.append(Said(None, f"step '{target}' is a dependency of '{node.ident or node.label}': "
                                         f"pipegen runs it whenever '{node.ident or node.label}' runs (its path rule "
                                         "skipped it before)"))
                selecting.discard(target)


def _shared_top(pipelines: list[Pipeline]) -> dict[str, Any]:
    """The pipeline-level fields every input file has alike: the config's `pipeline:`."""
    first = pipelines[0].top
    shared = {name: value for name, value in first.items() if name in TOP_CARRIED and name != "notify"
              and all(p.top.get(name) == value for p in pipelines[1:])}
    # Each upload's notify joins the build's (docs: pipelines/configure/notify): all of them, in upload order.
    notify = [item for p in pipelines for item in (p.top.get("notify") or [])]
    return {**shared, "notify": notify} if notify else shared


def _own_top(pipeline: Pipeline, shared: dict[str, Any], result: Imported) -> dict[str, Any]:
    """A file's own pipeline-level env and agents (the other files have others): onto its steps."""
    own = {name: value for name, value in pipeline.top.items() if name not in shared and name != "notify"}
    for name in own:
        if name not in ("env", "agents"):
            result.missing.append(Said(Location(pipeline.file), f"the pipeline's '{name}' (" + (
                "another input file has another; one pipeline has one)" if name in TOP_CARRIED else
                "no place for it in pipegen's config)")))
    return own


@dataclass
class _Context:
    renames: dict[str, str]
    families: Families
    result: Imported
    top: dict[str, Any]  # the file's own pipeline-level env and agents
    dissolve: dict[str, Record] | None  # a later file's view: its waits become depends_on
    paths_field: str | None = None


def _steps_files(pipeline: Pipeline, context: _Context) -> list[tuple[str, dict[str, Any]]]:
    files: list[tuple[str, dict[str, Any]]] = []
    loose: list[Node] = []
    stem = slug(pipeline.file.rsplit("/", 1)[-1].rsplit(".", 1)[0], 40)
    for node in [*pipeline.steps, None]:
        if node is not None and node.kind != "group":
            loose.append(node)
            continue
        steps = [s for s in (_step(n, None, context) for n in loose) if s is not None]
        if steps:
            files.append((stem, _with_env({"steps": steps}, context)))
        loose = []
        if node is not None:
            head = {k: v for k, v in node.fields.items() if k not in ("steps", "if_changed")}
            head["key"] = context.renames.get(node.key or "", node.key) if node.key else None
            data: dict[str, Any] = {"group": {k: _renamed(k, v, context.renames) for k, v in head.items()
                                              if v is not None and not (context.dissolve and k == "depends_on")}}
            if context.dissolve is not None and context.result.blocks_written:  # its steps say what they wait for
                data["group"]["depends_on"] = []
            data["group"] = _group_once(data["group"], node, context.result)
            data["steps"] = [s for s in (_step(n, node, context) for n in node.children) if s is not None]
            files.append((slug(node.label or "group", 40), _with_env(data, context)))
    return files


def _group_once(head: dict[str, Any], node: Node, result: Imported) -> dict[str, Any] | str:
    """pipegen joins steps files of one group name into one group, its fields written in one of them: a
    second file of the name writes the name alone (its fields, where they differ, are named)."""
    name = head.get("group")
    first = result.groups.setdefault(str(name), head)
    if first is head:
        return head
    if {k: v for k, v in head.items() if k != "key"} != {k: v for k, v in first.items() if k != "key"}:
        result.missing.append(Said(node.where, f"group '{name}' is also in another file, with other fields; "
                                   "pipegen writes one group of a name: this one's fields are left out"))
    return str(name)


def _with_env(data: dict[str, Any], context: _Context) -> dict[str, Any]:
    if isinstance(context.top.get("env"), dict) and context.top["env"]:
        return {**{k: v for k, v in data.items() if k != "steps"}, "defaults": {"env": context.top["env"]},
                "steps": data["steps"]}
    return data


def _renamed(name: str, value: Any, renames: dict[str, str]) -> Any:
    """A `depends_on` with the file's renamed keys (the rest as written)."""
    if name != "depends_on" or not renames:
        return value
    items = value if isinstance(value, list) else [value]
    out = [renames.get(i, i) if isinstance(i, str) else {**i, "step": renames.get(i.get("step"), i.get("step"))}
           for i in items]
    return out if isinstance(value, list) else out[0]


def _step(node: Node, group: Node | None, context: _Context) -> dict[str, Any] | str | None:
    """A step as the steps file writes it: a mapping, `wait`, or None where a dissolved wait leaves nothing."""
    if node.kind == "wait" and (not node.fields or context.dissolve is not None and node.ident not in context.dissolve):
        return None if context.dissolve is not None else "wait"
    out: dict[str, Any] = {}
    context.result.steps += node.kind != "wait"
    if node.kind == "command":
        out["label"] = node.label or _first_line(node) or node.ident
    elif "label" in node.fields:
        out["label"] = node.fields["label"]
    if node.ident or node.key:
        out["key"] = node.ident or node.key
    out.update({k: _renamed(k, v, context.renames) for k, v in node.fields.items()
                if k not in MOVED or k == "depends_on"})
    if node.kind in ("block", "input", "wait", "trigger") and "name" in node.fields:
        out["name"] = node.fields["name"]
    if context.dissolve is not None and node.ident in context.dissolve:
        deps = [d if not allow else {"step": d, "allow_failure": True}
                for d, allow in context.dissolve[node.ident].deps.items() if not d.startswith("#")]
        out.pop("depends_on", None)
        # a block written before (another file's) is a wait in the one rendered file: `[]` opts out of it;
        # a block itself would wait for every step written before it
        out.update({"depends_on": deps} if deps or context.result.blocks_written or node.kind == "block" else {})
        context.result.blocks_written |= node.kind == "block"
    if node.kind == "command":
        agents = {**tags(context.top.get("agents")), **tags(node.fields.get("agents"))}
        family = context.families.place(agents)
        if family is not None:
            out["hardware"] = [family]
    elif "agents" in node.fields:
        out["agents"] = node.fields["agents"]
    if node.kind == "command" and typed_fields(out, About(node.where, f"step '{out.get('key')}'"), context.paths_field,
                                               context.result.missing):
        context.result.selecting.append(node.ident)
    watch = node.watch if node.watch is not None else group.watch if group is not None else None
    if watch is not None and node.kind in SELECTED:
        out["source_file_dependencies"] = list(watch)
        context.result.selecting.append(node.ident)
    return out
