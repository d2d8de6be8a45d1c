"""One step's fields as the build holds them after its upload (docs: pipelines/configure/step-types/*).

A step's kind is read off its shape: a bare `wait`/`waiter`/`block`/`manual`/`input` string, a `type`, or the
key naming it; a mapping with `command`, `commands`, `script` or `plugins` is a command step. Forms
Buildkite takes as the same are written one way: `commands` as one text, `agents` and `env` as mappings
of strings (a list of `k=v` is that mapping; YAML's `true` and `4` are the strings a job gets), `plugins`
as a list of one-key mappings, `branches` as a list; a field at its default value is no field.
"""

from __future__ import annotations

from typing import Any

from pipegen.importer.upload_model.interpolation import join, value

STRING_KINDS = {"wait": "wait", "waiter": "wait", "block": "block", "manual": "block", "input": "input"}
NAMING = (("wait", "wait"), ("waiter", "wait"), ("block", "block"), ("manual", "block"), ("input", "input"),
          ("trigger", "trigger"), ("group", "group"))
TYPES = {**dict(NAMING), "command": "command", "script": "command", "commands": "command"}
NOT_FIELDS = ("type", "key", "identifier", "id", "label", "name", "depends_on", "command", "commands", "script",
              "steps", "if_changed")  # if_changed: the agent's own path rule; every step runs when all changed
DEFAULTS: dict[str, Any] = {"soft_fail": False, "skip": False, "allow_dependency_failure": False,
                            "cancel_on_build_failing": False, "parallelism": 1, "priority": 0, "async": False,
                            "continue_on_failure": False}


class StepError(ValueError):
    """A step Buildkite would not accept (the upload fails)."""


def kind_of(raw: object) -> str:
    if isinstance(raw, str) and raw in STRING_KINDS:
        return STRING_KINDS[raw]
    if not isinstance(raw, dict):
        raise StepError(f"{raw!r} is not a step")
    if isinstance(raw.get("type"), str) and raw["type"] in TYPES:
        return TYPES[raw["type"]]
    for name, kind in NAMING:
        if name in raw:
            return kind
    if any(name in raw for name in ("command", "commands", "script", "plugins")):
        return "command"
    raise StepError(f"a step of no known kind (fields {', '.join(map(str, raw))})")


def key_of(raw: dict[str, Any]) -> str | None:
    for name in ("key", "identifier", "id"):
        if raw.get(name) is not None:
            return str(raw[name])
    return None


def label_of(raw: dict[str, Any], kind: str) -> Any:
    names = ("label", "name", kind) if kind in ("group", "block", "input", "trigger") else ("label", "name")
    return next((raw[n] for n in names if raw.get(n) is not None and n != "trigger"), None)


def as_text(value: object) -> object:
    """A scalar as the job's environment holds it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value) if isinstance(value, (int, float)) else value


def mapping(value: object) -> dict[str, Any]:
    """`agents`/`env` as a mapping of strings (a list of `k=v`; a bare `k` is `k=true`)."""
    if isinstance(value, dict):
        return {str(k): as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        pairs = [str(item).partition("=") for item in value]
        return {k: v if sep else "true" for k, sep, v in pairs}
    return {}


def plugins(value: object) -> list[Any]:
    items = [{k: v} for k, v in value.items()] if isinstance(value, dict) else list(value or [])  # type: ignore[call-overload]
    return [{item: None} if isinstance(item, str) else item for item in items]


def commands(raw: dict[str, Any]) -> object:
    for name in ("commands", "command", "script"):
        found = raw.get(name)
        if isinstance(found, list):
            lines: list[Any] = [part for index, line in enumerate(found) for part in ([] if index == 0 else ["\n"])
                                + (list(line) if isinstance(line, tuple) else [str(line)])]
            return value(join(lines))
        if found is not None:
            return found
    return None


def fields(raw: dict[str, Any], kind: str, top_env: dict[str, Any], top_agents: object) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k not in NOT_FIELDS and not (kind == "group" and k == "group")
           and DEFAULTS.get(k, object()) != v and v not in (None, [], {}) and not (k == kind and kind != "trigger")}
    if kind == "command":
        out.pop("plugins", None)
        found = commands(raw)
        if found not in (None, ""):
            out["commands"] = found
        for name, top in (("env", top_env), ("agents", mapping(top_agents))):
            merged = {**top, **mapping(raw.get(name))}
            out.pop(name, None)
            out.update({name: merged} if merged else {})
        if raw.get("plugins"):
            out["plugins"] = plugins(raw["plugins"])
    if isinstance(out.get("branches"), str):
        out["branches"] = out["branches"].split()
    return out
