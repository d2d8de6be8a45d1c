"""What Buildkite adds to a pipeline at run time, made static: the steps a `pipeline upload` of a file in
the repository brings, the steps the monorepo-diff plugin uploads for its watched paths, and the
`if_changed` path rules, each turned into the steps' `source_file_dependencies` (path_rules.py).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from pipegen.importer import path_rules
from pipegen.importer.definitions import carry
from pipegen.importer.families import tags
from pipegen.importer.nodes import Node, Pipeline, read_step
from pipegen.importer.said import About, Said
from pipegen.model import Location

UPLOAD = re.compile(r"^\s*buildkite-agent\s+pipeline\s+upload\b(?P<args>.*)$")
DEFAULT_UPLOADS = ("buildkite.yml", "buildkite.yaml", "buildkite.json", ".buildkite/pipeline.yml",
                   ".buildkite/pipeline.yaml", ".buildkite/pipeline.json", "buildkite/pipeline.yml",
                   "buildkite/pipeline.yaml", "buildkite/pipeline.json")
# The fields of a step the plugin's Go structure keeps (buildkite-plugins v1 Step); it drops the rest.
PLUGIN_STEP_FIELDS = ("group", "trigger", "label", "branches", "if", "build", "command", "commands", "agents",
                      "artifact_paths", "artifacts", "env", "plugins", "async", "soft_fail", "retry", "notify",
                      "depends_on", "key", "secrets", "steps", "allow_dependency_failure", "matrix")
PLUGIN_OPTIONS = ("diff", "wait", "log_level", "interpolation", "watch", "env", "notify", "hooks", "meta_data")
DEFAULT_DIFF = "git diff --name-only HEAD~1"
# An upload step's fields that do not hold for the steps it uploads: two uploads of one file that differ
# only in these are one upload under either `if`.
OWN_FIELDS = ("if", "label", "name", "key", "identifier", "id", "agents", "timeout_in_minutes", "retry",
              "soft_fail", "priority", "notify", "artifact_paths", "cancel_on_build_failing")
TAKES = {"branches": ("command", "group", "trigger", "block", "input"), "if_changed": ("command", "group", "trigger")}


def upload_paths(node: Node) -> list[str] | str | None:
    """The files a step's `buildkite-agent pipeline upload` reads (its default files when it names none);
    a reason when it uploads a script's output; None when the step uploads nothing."""
    value = node.fields.get("command", node.fields.get("commands"))
    lines = [str(v) for v in (value if isinstance(value, list) else [value] if value is not None else [])]
    lines = [part for line in lines for part in line.splitlines() if part.strip()]
    uploads = [line for line in lines if "pipeline upload" in line]
    if not uploads:
        return None
    match = UPLOAD.match(uploads[0]) if len(lines) == 1 else None
    if match is None or re.search(r"[|<>;&`]|\$\(", lines[0]):
        return "it uploads a generated pipeline (a command's output, or an upload among other commands)"
    try:
        words = shlex.split(match["args"])
    except ValueError:
        return "its upload command does not parse"
    files = [w for w in words if not w.startswith("-")]
    if len(files) != len([w for w in words if w not in ("--replace", "--no-interpolation")]):
        return "its upload takes options pipegen import does not follow"
    return files or list(DEFAULT_UPLOADS)


def splice_uploads(pipeline: Pipeline, read: Callable[[list[str]], Pipeline | str], missing: list[Said],
                   notes: list[Said], spliced: dict[str, Node] | None = None) -> None:
    """Each step that uploads a static file is replaced by that file's steps (`read`: the paths -> the
    pipeline, or why not), and so on in the uploaded files; a generated pipeline is named as not importable."""
    out: list[Node] = []
    spliced = {pipeline.file: Node("command", {}, Location(pipeline.file, 1, 1))} if spliced is None else spliced
    pipeline.steps = _join_twins(pipeline.steps, notes)
    for node in pipeline.steps:
        found = upload_paths(node) if node.kind == "command" else None
        if found is None:
            out.append(node)
            continue
        if isinstance(found, str):
            missing.append(Said(node.where, f"{_named(node)}: {found}; not importable"))
            out.append(node)
            continue
        uploaded = read(found)
        if isinstance(uploaded, str):
            missing.append(Said(node.where, f"{_named(node)}: {uploaded}"))
            out.append(node)
            continue
        if uploaded.file in spliced:  # one pipeline holds a step once; which upload ran was the build's choice
            first = spliced[uploaded.file]
            at = next((i for i, n in enumerate(pipeline.steps) if n is first), None)
            why = "" if at is None else f"; {_apart(first, node, pipeline.steps[at + 1:])}"
            missing.append(Said(node.where, f"{_named(node)} uploads {uploaded.file} again (also uploaded at "
                                f"{first.where}{why}); its steps are imported once, at the first"))
            continue
        spliced[uploaded.file] = node
        splice_uploads(uploaded, read, missing, notes, spliced)
        notes.append(Said(node.where, f"the upload of {uploaded.file} is replaced by its {len(uploaded.steps)} steps"))
        top = carry(uploaded.steps, uploaded.top, missing, Location(uploaded.file))  # its env: for its steps only
        for step in uploaded.steps:
            _fold_top(step, top)
        _inherit_conditions(node, uploaded.steps, missing, notes)
        out.extend(uploaded.steps)
    pipeline.steps = out


def _join_twins(steps: list[Node], notes: list[Said]) -> list[Node]:
    """Two uploads of one file that differ only in their `if` (one per branch of it, as elastic/elastic-agent
    writes them) -> the first, under `(A) || (B)`: Buildkite uploaded the steps when either held."""
    out: list[Node] = []
    for node in steps:
        found = upload_paths(node) if node.kind == "command" else None
        at = next((i for i, n in enumerate(out) if isinstance(found, list) and n.kind == "command"
                   and upload_paths(n) == found), None)
        if at is None or _apart(out[at], node, out[at + 1:]):
            out.append(node)
            continue
        first, conditions = out[at], (out[at].fields.get("if"), node.fields.get("if"))
        if any(c in (None, "") for c in conditions):  # one upload ran on every build
            first.fields.pop("if", None)
        else:
            first.fields["if"] = f"({conditions[0]}) || ({conditions[1]})"
        notes.append(Said(node.where, f"{_named(node)} uploads {' '.join(found or ())} again (also at {first.where}) "
                          "under another if: its steps are written once, where either upload's if holds"))
    return out


def _apart(first: Node, second: Node, between: list[Node]) -> str:
    """Why two uploads of one file are not one upload under either `if` ("" when they are)."""
    differ = sorted(n for n in {*first.fields, *second.fields} - set(OWN_FIELDS)
                    if first.fields.get(n) != second.fields.get(n))
    if differ:
        return f"the two uploads differ in {', '.join(differ)}"
    return "a wait, block or input lies between them" if any(n.kind in ("wait", "block", "input")
                                                              for n in between) else ""


def _inherit_conditions(upload: Node, steps: list[Node], missing: list[Said], notes: list[Said]) -> None:
    """The upload step ran only when its `if`, `branches` and `if_changed` held, so the steps it uploaded
    existed only then: each uploaded step gets them (an `if` joined to its own with &&; an `if_changed` under
    the step's own is left out, so the step runs at least whenever Buildkite ran it)."""
    where = About(upload.where, f"upload {_named(upload)}")
    for name in ("depends_on", "skip"):
        if upload.fields.get(name) not in (None, False, [], ""):
            missing.append(where(f"its {name} (the uploaded steps would have waited for it)"))
    for name in ("if", "branches", "if_changed"):
        value = upload.fields.get(name)
        if value in (None, "", []):
            continue
        for step in steps:
            own = step.fields.get(name)
            if name == "if":
                step.fields["if"] = value if own is None else f"({value}) && ({own})"
            elif step.kind not in TAKES[name]:
                missing.append(where(f"its {name} for its {step.kind} step {step.where} (no field holds it)"))
            elif name == "if_changed" and (own is not None or _has(step.children, name)):
                shown = value if isinstance(value, str) else json.dumps(value)
                notes.append(where(f"its if_changed ({shown}) is left out for {_named(step)} ({step.where}), "
                                   "which has its own: Buildkite ran it only when both matched; pipegen runs it "
                                   "whenever its own matches, so it may run more often than before (one path list "
                                   "cannot say both)"))
            elif own is not None or _has(step.children, name):
                missing.append(where(f"its {name} for step '{step.label or step.key}', which has its own "
                                     f"{step.where} (no field holds both)"))
            else:
                step.fields[name] = value


def _named(node: Node) -> str:
    name = node.label or node.key
    return f"step '{name}'" if name else "step (no label or key)"


def _has(nodes: list[Node], name: str) -> bool:
    return any(name in n.fields for n in nodes)


def _fold_top(node: Node, top: dict[str, Any]) -> None:
    """An uploaded file's own env and agents hold for its steps only: they move onto them."""
    for child in [node, *node.children]:
        if child.kind != "command":
            continue
        for name in ("env", "agents"):
            if isinstance(top.get(name), dict):
                child.fields[name] = {**top[name], **(child.fields.get(name) or {})}


def plugin_flavour(name: str) -> str:
    """How a monorepo-diff plugin reference reads watch paths (path_rules.py): grep, prefix or glob."""
    version = re.search(r"#v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", name)
    numbers = tuple(int(n or 0) for n in version.groups()) if version else None
    if re.search(r"(chronotc|monebag)/monorepo-diff", name) and numbers is not None:
        if numbers[0] < 2:
            return "grep"
        if numbers < (2, 0, 4):
            return "prefix"
    return "glob"


def monorepo_diff(pipeline: Pipeline, folders: Sequence[str], missing: list[Said], notes: list[Said]) -> None:
    """A monorepo-diff step -> the steps it uploads, each selected by the watch paths that upload it."""
    out: list[Node] = []
    for node in pipeline.steps:
        plugin = _plugin(node)
        if plugin is None:
            out.append(node)
            continue
        name, options = plugin
        out.extend(_watched(node, name, options, folders, missing, notes))
    pipeline.steps = out


def _reads_skip_path(name: str) -> bool:
    """Only buildkite-plugins' Go plugin from v1.2.0 reads `skip_path` (chronotc's and monebag's never did)."""
    version = re.search(r"#v?(\d+)(?:\.(\d+))?", name)
    return not re.search(r"(chronotc|monebag)/", name) and (
        version is None or (int(version[1]), int(version[2] or 0)) >= (1, 2))


def _plugin(node: Node) -> tuple[str, dict[str, Any]] | None:
    plugins = node.fields.get("plugins")
    items = list(plugins.items()) if isinstance(plugins, dict) else \
        [next(iter(p.items())) for p in plugins or () if isinstance(p, dict) and p]
    for name, options in items:
        if "monorepo-diff" in name:
            return name, options if isinstance(options, dict) else {}
    return None


def _watched(node: Node, name: str, options: dict[str, Any], folders: Sequence[str], missing: list[Said],
             notes: list[Said]) -> list[Node]:
    where = About(node.where, f"monorepo-diff {_named(node)}")
    for option in options:
        if option not in ("diff", "wait", "log_level", "watch", "env", "interpolation"):
            missing.append(where(f"its '{option}' option"))
    if options.get("diff", DEFAULT_DIFF) != DEFAULT_DIFF:
        notes.append(where(f"its diff is '{options['diff']}'; pipegen diffs against the merge base"))
    flavour = plugin_flavour(name)
    steps: dict[str, Node] = {}
    for index, watch in enumerate(options.get("watch") or ()):
        for problem in ("default", "except_path", "regex_paths"):
            if isinstance(watch, dict) and watch.get(problem) not in (None, False):
                missing.append(where(f"watch {index + 1}'s {problem} (no source_file_dependencies express it)"))
        skip = watch.get("skip_path") if isinstance(watch, dict) else None
        if skip is not None and not _reads_skip_path(name):
            notes.append(where(f"watch {index + 1}'s skip_path is left out: this plugin version ignores it "
                               "(buildkite-plugins' v1.2.0 added it)"))
            skip = None
        try:
            entries, more = path_rules.watch_rule(watch.get("path"), skip, flavour, folders)
        except path_rules.Untranslatable as exc:
            missing.append(where(str(exc)))
            continue
        notes += [where(text) for text in more]
        configs = watch.get("config")
        for config in configs if isinstance(configs, list) else [configs] if isinstance(configs, dict) else []:
            _add(steps, _go_plugin_step(config, name, notes, where), entries, node, options, missing, where)
    out = list(steps.values())
    if options.get("wait"):
        out.append(Node("wait", {}, node.where))
    _inherit_conditions(node, out, missing, notes)
    notes.append(Said(node.where, f"{where.what} ({flavour} paths) is replaced by the {len(steps)} steps it "
                      "uploads, each selected by its watch paths"))
    return out


def _go_plugin_step(config: Any, name: str, notes: list[Said], where: About) -> Any:
    """A watched step as buildkite-plugins' Go plugin uploads it: `env` and a trigger's `build.env` as
    mappings (it reads `KEY=VALUE` items, keeping the text up to a second `=`; before v1.5.0 it drops a
    mapping), and a trigger's build message, branch and commit defaulting to the build's own."""
    if plugin_flavour(name) != "glob" or re.search(r"(chronotc|monebag)/", name) or not isinstance(config, dict):
        return config
    version = re.search(r"#v?(\d+)\.(\d+)", name)
    maps = version is None or (int(version[1]), int(version[2])) >= (1, 5)
    config = {**config, **({"build": dict(config["build"])} if isinstance(config.get("build"), dict) else {})}
    holders = [config] + ([config["build"]] if "build" in config else [])
    for holder in holders:
        env = holder.get("env")
        if isinstance(env, list):
            items = [str(item).partition("=") for item in env]
            holder["env"] = {key.strip(): value.split("=")[0].strip() if sep else f"${{{key.strip()}}}"
                             for key, sep, value in items if key.strip()}
        elif isinstance(env, dict) and not maps:
            del holder["env"]
            notes.append(where("a watched step's env mapping is left out, as this plugin version left it out "
                               "(it reads KEY=VALUE items only)"))
    if "trigger" in config:
        build = config.setdefault("build", {})
        for field, variable in (("message", "MESSAGE"), ("branch", "BRANCH"), ("commit", "COMMIT")):
            build.setdefault(field, f"${{BUILDKITE_{variable}}}")
    return config


def _add(steps: dict[str, Node], config: dict[str, Any], entries: list[str], node: Node, options: dict[str, Any],
         missing: list[Said], where: About) -> None:
    dropped = [k for k in config if k not in PLUGIN_STEP_FIELDS]
    if dropped:
        missing.append(where(f"a watched step's {', '.join(dropped)} (the plugin drops them; not imported)"))
    fields = {k: v for k, v in config.items() if k in PLUGIN_STEP_FIELDS}
    if "artifacts" in fields:
        fields["artifact_paths"] = fields.pop("artifacts")
    if options.get("env") and ("command" in fields or "commands" in fields):  # the plugin's values win
        fields["env"] = {**tags(fields.get("env")), **tags(options["env"])}
    identity = json.dumps(fields, sort_keys=True, default=str)  # the plugin uploads equal steps once
    if identity not in steps:
        steps[identity] = read_step(fields, node.where, node.where.file)
        steps[identity].watch = ()
    merged = list(steps[identity].watch or ()) + [e for e in entries if e not in (steps[identity].watch or ())]
    steps[identity].watch = tuple(merged)


def if_changed(pipeline: Pipeline, folders: Sequence[str], missing: list[Said], notes: list[Said]) -> None:
    """Each `if_changed` -> the step's (or the group's) source_file_dependencies."""
    for node in pipeline.steps:
        for item in [node, *node.children]:
            if "if_changed" not in item.fields:
                continue
            if item is not node and "if_changed" in node.fields:
                missing.append(Said(item.where, f"if_changed on both a group and its step '{item.label}'"))
                continue
            try:
                entries, more = path_rules.if_changed_rule(item.fields["if_changed"], folders)
            except path_rules.Untranslatable as exc:
                missing.append(Said(item.where, str(exc)))
                continue
            item.watch = tuple(entries)
            notes += [Said(item.where, text) for text in more]
