"""An independent, deliberately naive transcription of vLLM's generator decisions.

Written from shared/spec/vllm-ci.md and ci-infra's `_step_should_run`, it
reads the raw YAML with plain PyYAML and shares no code with pipegen, so a
test comparing the two catches a bug in either. It returns
{key: "run" | "block"} for what vLLM would render, or None for a docs-only
change (vLLM renders no pipeline at all).
"""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path

import yaml

AMD_DEVICES = {f"mi{g}_{n}" for g in (250, 300, 325, 355) for n in (1, 2, 4, 8)}


def _key(label: str) -> str:
    key = label.replace(" ", "-").lower()
    for c in "()%":
        key = key.replace(c, "")
    for c in ",+:./":
        key = key.replace(c, "-")
    return key


def _matches(deps, files) -> bool:
    if not deps:
        return False
    inc = [d for d in deps if not d.startswith("!")]
    exc = [d[1:] for d in deps if d.startswith("!")]

    def m(d, f):
        n = d.rstrip("/")
        return bool(n) and (f == n or f.startswith(n + "/"))

    return any(any(m(i, f) for i in inc) and not any(m(x, f) for x in exc) for f in files)


def load_steps(root: str) -> tuple[dict, list[dict]]:
    return copy.deepcopy(_load_steps(root))


@functools.lru_cache(maxsize=4)
def _load_steps(root: str) -> tuple[dict, list[dict]]:
    config = yaml.safe_load(Path(root, ".buildkite/ci_config.yaml").read_text())
    steps = []
    for job_dir in config["job_dirs"]:
        for folder, _, names in os.walk(os.path.join(root, job_dir)):
            for name in sorted(names):
                if not name.endswith(".yaml"):
                    continue
                path = os.path.join(folder, name)
                data = yaml.safe_load(Path(path).read_text())
                for step in data["steps"]:
                    step = dict(step)
                    if data.get("depends_on"):
                        step["depends_on"] = step.get("depends_on") or data["depends_on"]
                        step["source_file_dependencies"] = list(step.get("source_file_dependencies") or []) + [
                            os.path.relpath(path, root)
                        ]
                    steps.append(step)
    return config, steps


def decisions(root: str, files: list[str], env: dict[str, str] | None = None) -> dict[str, str] | None:
    env = env or {}
    config, steps = load_steps(root)
    labels = [label.strip() for label in env.get("BUILDKITE_PULL_REQUEST_LABELS", "").split(",")]
    run_all = env.get("RUN_ALL") == "1" or env.get("TORCH_NIGHTLY") == "1" or "ready-run-all-tests" in labels
    for f in files:
        if (any(re.match(p, f) for p in config.get("run_all_patterns") or [])
                and not any(re.match(p, f) for p in config.get("run_all_exclude_patterns") or [])):
            run_all = True
    only = None
    if env.get("VLLM_CI_ONLY_STEP_KEYS"):
        import json

        only = set(json.loads(env["VLLM_CI_ONLY_STEP_KEYS"]))
    docs = all(not f or f.startswith("docs/") or f.endswith(".md") or f == "mkdocs.yaml" for f in files)
    if env.get("DOCS_ONLY_DISABLE", "0") == "0" and not run_all and only is None and files and docs:
        return None
    nightly = env.get("NIGHTLY") == "1" or "ready-run-all-tests" in labels
    noauto = env.get("NOAUTO") == "1"
    if only is not None:
        by_key = {s.get("key") or _key(s["label"]): s for s in steps}
        pending = list(only)
        while pending:
            for dep in by_key[pending.pop()].get("depends_on") or []:
                if dep not in only:
                    only.add(dep)
                    pending.append(dep)
        steps = [s for s in steps if (s.get("key") or _key(s["label"])) in only]

    def should_run(step, key, device, dind):
        if noauto:
            return False
        if only is not None:
            return key in only
        if key and (key.startswith("image-build") or key in ("ensure-ci-base-amd", "refresh-rocm-base-amd")):
            return True
        if nightly:
            return True
        if step.get("optional"):
            return False
        if device in AMD_DEVICES and not dind and ".buildkite/scripts/hardware_ci/run-amd-test.sh" in [
            f for f in files if _matches([".buildkite/scripts/hardware_ci/run-amd-test.sh"], [f])
        ]:
            return True
        if run_all:
            return True
        return _matches(step.get("source_file_dependencies"), files)

    out = {}
    for step in steps:
        key = step.get("key") or _key(step["label"])
        out[key] = "run" if should_run(step, key, step.get("device"), step.get("dind", True)) else "block"
        amd = (step.get("mirror") or {}).get("amd")
        if amd and only is None:
            deps = list(amd.get("source_file_dependencies") or [])
            deps += [d for d in step.get("source_file_dependencies") or [] if d not in deps]
            effective = dict(step, optional=amd.get("optional", step.get("optional")), source_file_dependencies=deps)
            run = should_run(effective, None, amd["device"], amd.get("dind", True))
            run = run or (not noauto and "docker/Dockerfile.rocm_base" in files)
            out[f"amd-{key}"] = "run" if run else "block"
    return out
