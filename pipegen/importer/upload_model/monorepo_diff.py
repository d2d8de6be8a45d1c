"""What a monorepo-diff plugin step uploads when every watched path changed (what `render --all` is compared with).

Read from the plugin's documentation (github buildkite-plugins/monorepo-diff-buildkite-plugin README,
and its Go `Step` structure): for each `watch`, its `config` (one step, or a list) is uploaded once
however many watches name it; the plugin's `env` option joins each command step's env (the option
wins); a trailing `wait` when `wait: true`; `artifacts` is `artifact_paths`. The Go plugin reads `env`
as `KEY=VALUE` items, keeping the text up to a second `=` (a bare `KEY` takes the value of the plugin's
job), reads an env mapping only from v1.5.0, and fills a trigger's build message, branch and commit with
the build's own. The step exists only where the plugin step's `if` and `branches` held.
Only the Go plugin (`monorepo-diff#...`, `buildkite-plugins/monorepo-diff#...`) is modelled; another
(chronotc's, monebag's bash plugins) is a step the model cannot tell, so nothing is proven equal.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pipegen.importer.upload_model import interpolation
from pipegen.importer.upload_model.interpolation import Term

KEPT = ("group", "trigger", "label", "branches", "if", "build", "command", "commands", "agents", "artifact_paths",
        "artifacts", "env", "plugins", "async", "soft_fail", "retry", "notify", "depends_on", "key", "secrets",
        "steps", "allow_dependency_failure", "matrix")


class NotModelled(ValueError):
    """A plugin step the model does not know what it uploads."""


def plugin(raw: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    found = raw.get("plugins")
    items = list(found.items()) if isinstance(found, dict) else \
        [next(iter(p.items())) for p in found or () if isinstance(p, dict) and p] if isinstance(found, list) else []
    for name, options in items:
        if isinstance(name, str) and "monorepo-diff" in name:
            return name, options if isinstance(options, dict) else {}
    return None


def uploaded(name: str, options: dict[str, Any], job_env: dict[str, Any]) -> list[Any]:
    """The steps the plugin uploads, as data the parent's upload already interpolated. Uploading interpolates
    them once more: a `$` left in them then is not modelled."""
    if re.search(r"(chronotc|monebag)/", name):
        raise NotModelled(f"the {name} plugin (a bash plugin)")
    if options.get("interpolation") not in (False, "false") and "$" in json.dumps(options, default=str):
        raise NotModelled(f"the {name} plugin uploads text with a '$' and interpolates it again")
    version = re.search(r"#v?(\d+)\.(\d+)", name)
    maps = version is None or (int(version[1]), int(version[2])) >= (1, 5)
    steps: dict[str, Any] = {}
    for watch in options.get("watch") or []:
        configs = watch.get("config") if isinstance(watch, dict) else None
        for config in configs if isinstance(configs, list) else [configs] if isinstance(configs, dict) else []:
            step = _step(config, options, maps, job_env)
            steps.setdefault(json.dumps(step, sort_keys=True, default=str), step)
    return list(steps.values()) + (["wait"] if options.get("wait") in (True, "true") else [])


def _env(value: object, maps: bool, job_env: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(value, list):
        out: dict[str, Any] = {}
        for item in value:
            fields = _split(item if isinstance(item, tuple) else (str(item),))
            name = "".join(str(p) for p in fields[0]).strip()
            if name:
                out[name] = interpolation.value(fields[1]) if len(fields) > 1 else \
                    job_env.get(name, (Term("var", name),))
        return out
    return dict(value) if isinstance(value, dict) and maps else None


def _split(parts: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """An interpolated `KEY=VALUE` item split at each `=` of its literal text (the rest stay whole)."""
    out: list[list[Any]] = [[]]
    for part in parts:
        pieces = part.split("=") if isinstance(part, str) else [part]
        out[-1].append(pieces[0].strip() if isinstance(pieces[0], str) else pieces[0])
        out += [[piece.strip()] for piece in pieces[1:]]
    return [interpolation.join(p) for p in out]


def _step(config: dict[str, Any], options: dict[str, Any], maps: bool, job_env: dict[str, Any]) -> dict[str, Any]:
    step = {k: v for k, v in config.items() if k in KEPT}
    if "artifacts" in step:
        step["artifact_paths"] = step.pop("artifacts")
    for holder in [step] + ([step["build"]] if isinstance(step.get("build"), dict) else []):
        if holder is not step:
            holder = step["build"] = dict(holder)
        env = _env(holder.get("env"), maps, job_env)
        holder.pop("env", None)
        holder.update({"env": env} if env is not None else {})
    if options.get("env") and ("command" in step or "commands" in step):
        step["env"] = {**(step.get("env") or {}), **(_env(options["env"], True, job_env) or {})}
    if "trigger" in step:
        build = step["build"] = dict(step.get("build") or {})
        for field, variable in (("message", "MESSAGE"), ("branch", "BRANCH"), ("commit", "COMMIT")):
            build.setdefault(field, (Term("var", f"BUILDKITE_{variable}"),))
    return step
