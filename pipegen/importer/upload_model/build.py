"""The build Buildkite makes of some uploads: its jobs, what each waits for, the build's notify.

Each upload (`buildkite-agent pipeline upload FILE`) is read on its own (docs: agent/cli/reference/pipeline;
pipelines/configure/environment-variables):
- the file's top-level `env:` is interpolated in order, each value against the uploader's environment and
  the values before it; the rest of the file is interpolated with those (interpolation.py); the values
  are also the environment of the upload's command steps, under each step's own `env`;
- the top-level `agents` are each command step's, under the step's own; `notify` is the build's;
- a `wait` makes every later step of its scope (the file, or the group it is in) wait for every step
  before it (`continue_on_failure`: also when they failed); a `block` does the same and is a job; an
  `input` makes no dependency (pipelines/configure/depends-on);
- a step with `depends_on` (also `~` or `[]`) waits only for those: "without waiting for block or wait
  steps unless those are also explicit dependencies"; a group's key stands for its steps; a group's
  steps wait for what the group waits for;
- a step that only runs `buildkite-agent pipeline upload FILE` of a file that exists is replaced by that
  file's upload, where it stood: its uploader's environment is the step's job's (the file's env and the
  step's own), its steps exist only where the step's `if` and `branches` held;
- a key used twice in one build, or a `depends_on` naming no step, fails the build (a refusal).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipegen.importer.upload_model import monorepo_diff, step_fields
from pipegen.importer.upload_model.agent_yaml import UploadYamlError, parse
from pipegen.importer.upload_model.interpolation import InterpolationError, Parts, interpolate, join, value

UPLOAD = re.compile(r"^\s*buildkite-agent\s+pipeline\s+upload\s+(\S+)\s*$")


@dataclass
class Job:
    uid: str  # upload and position: 'pipeline.yml#3.1'
    kind: str  # command, trigger, block, input, wait (a conditional one), group
    key: str | None
    label: Any
    group: str | None  # the uid of its group
    fields: dict[str, Any]
    deps: dict[str, bool] = field(default_factory=dict)  # uid (or 'key:K', a key of no step) -> allow_failure
    named: list[tuple[str, bool]] | None = None  # its depends_on as written (None: none written)


@dataclass
class Build:
    jobs: dict[str, Job] = field(default_factory=dict)
    notify: list[Any] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # why Buildkite would fail an upload or the build
    unknown: list[str] = field(default_factory=list)  # what the model cannot tell (nothing is proven)
    keys: dict[str, list[str]] = field(default_factory=dict)  # key -> the jobs it stands for
    consumed: tuple[str, ...] = ()


@dataclass
class _Upload:
    name: str
    env: dict[str, Any]  # the upload's environment for its command steps
    agents: object
    defined: dict[str, Parts]  # what interpolation knows
    condition: dict[str, Any]  # the `if` and `branches` of the step that uploaded it


def build(uploads: list[tuple[str, str]], read: Callable[[str], str | None] = lambda path: None,
          consumed: tuple[str, ...] = ()) -> Build:
    """`uploads`: (name, text) of each upload, in order; `read`: a followed upload's file text, or None;
    `consumed`: step fields the user's own script reads and removes before the upload (`--paths-field`)."""
    out = Build(consumed=consumed)
    for name, text in uploads:
        _upload(out, name, text, {}, {}, {}, read, {})
    _resolve(out)
    return out


def _upload(out: Build, name: str, text: str, defined: dict[str, Parts], inherited_env: dict[str, Any],
            condition: dict[str, Any], read: Callable[[str], str | None], barrier: dict[str, bool]) -> list[str]:
    try:
        data = parse(text, name)
        steps, top = (data, {}) if isinstance(data, list) else (data.get("steps"), data) \
            if isinstance(data, dict) else (None, {})
        if not isinstance(steps, list):
            raise step_fields.StepError("no steps list")
        known = dict(defined)
        env = dict(inherited_env)
        for key, raw in (top.get("env") or {}).items():
            parts = interpolate(str(step_fields.as_text(raw)), known)
            known[str(key)] = parts
            env[str(key)] = value(parts)
        upload = _Upload(name, env, _deep(top.get("agents"), known), known, condition)
        out.notify += list(_deep(top.get("notify"), known) or [])
        return _scope(out, upload, _deep(steps, known), f"{name}#", None, {}, read, barrier)
    except (UploadYamlError, InterpolationError, step_fields.StepError) as exc:
        out.refused.append(f"{name}: {exc}")
    except RecursionError:  # `${A:-${A:-...` nested past Python's stack: no upload reads it either
        out.refused.append(f"{name}: values nested too deeply to read")
    except monorepo_diff.NotModelled as exc:
        out.unknown.append(f"{name}: {exc}")
    return []


def _deep(data: Any, known: dict[str, Parts]) -> Any:
    """Every string of the data interpolated, mapping keys too."""
    if isinstance(data, str):
        return data if "$" not in data else value(interpolate(data, known))
    if isinstance(data, dict):
        return {_key(_deep(k, known)): _deep(v, known) for k, v in data.items()}
    if isinstance(data, list):
        return [_deep(v, known) for v in data]
    return data


def _key(key: Any) -> Any:
    return key if not isinstance(key, tuple) else "".join(str(p) for p in key)


def _scope(out: Build, upload: _Upload, steps: list[Any], prefix: str, group: str | None, outer: dict[str, bool],
           read: Callable[[str], str | None], barrier_in: dict[str, bool]) -> list[str]:
    """The steps of one scope; returns the uids of its jobs (for a group's key and a later wait)."""
    before: list[str] = []
    barrier = dict(barrier_in)  # what the scope's first steps wait for (an uploading step's waits)
    for index, raw in _exclusive_twins(steps, read):
        uid, kind = f"{prefix}{index + 1}", step_fields.kind_of(raw)
        raw = {} if isinstance(raw, str) else raw
        plugin = monorepo_diff.plugin(raw) if kind == "command" and group is None else None
        if plugin is not None:
            cond = {k: raw[k] for k in ("if", "branches") if raw.get(k) not in (None, "")}
            generated = _Upload(f"{uid} (monorepo-diff)", upload.env, None, upload.defined,
                                {**upload.condition, **cond})
            before += _scope(out, generated, monorepo_diff.uploaded(*plugin, upload.env), f"{uid}.", None, {}, read,
                             dict(barrier))
            continue
        followed = _followed(raw, kind, read)
        if followed is not None and group is None:
            path, text = followed
            child_env = {**upload.env, **step_fields.mapping(raw.get("env"))}
            defined = {**upload.defined, **{k: join([v]) if isinstance(v, str) else v for k, v in
                                             step_fields.mapping(raw.get("env")).items()}}
            cond = {k: raw[k] for k in ("if", "branches") if raw.get(k) not in (None, "")}
            before += _upload(out, path, text, defined, child_env, {**upload.condition, **cond}, read,
                              dict(barrier))
            continue
        if kind == "wait" and not any(raw.get(k) for k in ("if", "depends_on", "allow_dependency_failure")):
            allow = bool(raw.get("continue_on_failure"))
            barrier = dict.fromkeys(before, allow) or barrier
            continue
        job = _job(out, upload, raw, kind, uid, group)
        implicit = (dict.fromkeys(before, False) or barrier) if kind == "block" else barrier  # a block waits too
        job.deps = {**outer, **({} if job.named is not None else implicit)}
        if kind == "group":
            members = _scope(out, upload, raw.get("steps") or [], f"{uid}.", uid, {}, read, {})
            for member in members:
                out.jobs[member].deps = {**job.deps, **out.jobs[member].deps}
                out.jobs[member].named = (out.jobs[member].named or []) + (job.named or []) \
                    if job.named is not None or out.jobs[member].named is not None else None
            _keyed(out, job.key, members)
            before += members
            continue
        before.append(uid)
        if kind in ("block", "wait"):
            barrier = {uid: False}
    return before


def _exclusive_twins(steps: list[Any], read: Callable[[str], str | None]) -> list[tuple[int, Any]]:
    """Two uploads of one file with nothing between them but other steps, under exclusive ifs (`A == B` and
    `A != B`): in any build one of them ran, so they are one upload under `(first) || (second)`."""
    out: list[tuple[int, Any]] = []
    uploading: dict[tuple[str, str], list[int]] = {}  # a followed upload -> the places in `out` of its steps
    for index, raw in enumerate(steps):
        if raw is None:
            continue
        mine = _followed(raw, "command", read) if isinstance(raw, dict) else None  # each file read once
        twin = next((i for i in uploading.get(mine, ()) if _exclusive(out[i][1].get("if"), raw.get("if"))),
                    None) if mine is not None else None
        between = out[twin + 1:] if twin is not None else []
        if twin is None or any(step_fields.kind_of(r) in ("wait", "block") for _, r in between) or \
                {k: v for k, v in out[twin][1].items() if k not in ("if", "label", "key")} != \
                {k: v for k, v in raw.items() if k not in ("if", "label", "key")}:
            if mine is not None:
                uploading.setdefault(mine, []).append(len(out))
            out.append((index, raw))
            continue
        first = out[twin][1]
        out[twin] = (out[twin][0], {**first, "if": f"({first['if']}) || ({raw['if']})"})
    return out


def _exclusive(first: object, second: object) -> bool:
    if not isinstance(first, str) or not isinstance(second, str):
        return False
    a, b = (" ".join(t.split()) for t in (first, second))
    return a.replace("==", "!=") == b or a.replace("!=", "==") == b


def _followed(raw: dict[str, Any], kind: str, read: Callable[[str], str | None]) -> tuple[str, str] | None:
    found = step_fields.commands(raw) if kind == "command" else None
    match = UPLOAD.match(found) if isinstance(found, str) else None
    if match is None:
        return None
    try:
        words = shlex.split(match[1])
    except ValueError:
        return None
    text = read(words[0]) if len(words) == 1 else None
    return (words[0], text) if text is not None else None


def _job(out: Build, upload: _Upload, raw: dict[str, Any], kind: str, uid: str, group: str | None) -> Job:
    fields = step_fields.fields({k: v for k, v in raw.items() if k not in out.consumed}, kind, upload.env,
                                upload.agents)
    for name, held in upload.condition.items():
        if name == "if":
            fields["if"] = held if fields.get("if") is None else f"({held}) && ({fields['if']})"
        else:
            fields.setdefault(name, held.split() if isinstance(held, str) else held)
    named = _named(raw["depends_on"]) if "depends_on" in raw else None
    job = Job(uid, kind, step_fields.key_of(raw), step_fields.label_of(raw, kind), group, fields, named=named)
    out.jobs[uid] = job
    if kind != "group":
        _keyed(out, job.key, [uid])
    return job


def _keyed(out: Build, key: str | None, uids: list[str]) -> None:
    if key is None:
        return
    if key in out.keys:
        out.refused.append(f"the key '{key}' is used twice in the build")
    out.keys[key] = uids


def _named(value: object) -> list[tuple[str, bool]]:
    items = value if isinstance(value, list) else [] if value is None else [value]
    out: list[tuple[str, bool]] = []
    for item in items:
        if isinstance(item, dict):
            out.append((str(item.get("step")), item.get("allow_failure") in (True, "true")))
        else:
            out.append((str(item), False))
    return out


def _resolve(out: Build) -> None:
    """Written depends_on -> jobs; waits passed through; what another dependency implies dropped. A cycle
    (a job that waits for itself through its depends_on) fails the build: refused, nothing reduced."""
    for job in out.jobs.values():
        for key, allow in job.named or []:
            for uid in out.keys.get(key, [f"key:{key}"]):
                job.deps[uid] = job.deps.get(uid, False) or allow
    loop = _cycle(out.jobs)
    if loop:
        names = [str(out.jobs[uid].key or uid) for uid in loop]
        out.refused.append(f"the depends_on of {', '.join(names[:-1])} form a cycle ({' -> '.join(names)}): "
                           "no step of it can start")
        return
    reach: dict[str, set[str]] = {}

    def closure(uid: str, trail: frozenset[str]) -> set[str]:
        if uid not in reach:
            found = out.jobs.get(uid)
            reach[uid] = set() if found is None or uid in trail else \
                set().union(*[{d} | closure(d, trail | {uid}) for d in found.deps])
        return reach[uid]

    for job in out.jobs.values():
        implied = set().union(*[closure(d, frozenset({job.uid})) for d in job.deps])
        job.deps = {d: a for d, a in job.deps.items() if d not in implied}


def _cycle(jobs: dict[str, Job]) -> list[str]:
    """The uids of a depends_on cycle, its first repeated at its end ([] where there is none): a walk of each
    job's dependencies without recursion (a chain of thousands of jobs)."""
    done: set[str] = set()
    for start in jobs:
        if start in done:
            continue
        path, on_path = [start], {start}
        pending = [iter(jobs[start].deps)]
        while pending:
            nxt = next((d for d in pending[-1] if d in jobs and d not in done), None)
            if nxt is None:
                done.add(path[-1])
                on_path.discard(path.pop())
                pending.pop()
            elif nxt in on_path:
                return [*path[path.index(nxt):], nxt]
            else:
                path.append(nxt)
                on_path.add(nxt)
                pending.append(iter(jobs[nxt].deps))
    return []
