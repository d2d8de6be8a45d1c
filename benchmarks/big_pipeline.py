"""A hand-written Buildkite pipeline of a large project, generated, for `bench.py import`.

Shaped like the pipelines `pipegen import` was tried on (buildkite/agent's, JuliaGPU's, monorepos with the
monorepo-diff plugin): pipeline-level env, a lint step, a wait, one group per area whose command steps have
agents (queues and tags), docker and artifact plugins, env, retry, timeouts, artifact paths, depends_on on
steps and groups, `if_changed` on some (globs, include/exclude), soft_fail and parallelism on a few; a wait
that continues on failure, a block, a monorepo-diff step whose watched services each upload a step, and
release steps. Deterministic: the same `steps` give the same text.
"""

from __future__ import annotations

import random
from typing import Any

import yaml

AGENTS: list[dict[str, Any]] = [
    {"queue": "cpu"}, {"queue": "cpu", "os": "linux", "arch": "arm64"}, {"queue": "gpu", "cuda": "*"},
    {"queue": "gpu", "cuda": "*", "multigpu": "true"}, {"rocm": "*"},  # the last: tags only, no queue
]
DOCKER = "docker#v5.12.0"
MONOREPO_DIFF = "monorepo-diff#v1.4.0"  # buildkite-plugins/monorepo-diff v1: watch paths as doublestar globs
PER_GROUP = 20
SERVICES = 20


def _command_step(rng: random.Random, area: int, shard: int, groups: list[str]) -> dict[str, Any]:
    key = f"area{area}-test{shard}"
    step: dict[str, Any] = {
        "label": f":pytest: area {area} shard {shard}", "key": key,
        "commands": ["pip install -e .[test]", f"pytest tests/area{area}/test_{shard}.py --junitxml=reports/{key}.xml"],
        "agents": dict(rng.choice(AGENTS)),
        "env": {"AREA": str(area), "SHARD": shard, "PYTHONHASHSEED": "0"},
        "plugins": [{DOCKER: {"image": "python:3.11", "propagate-environment": True,
                              "mount-buildkite-agent": shard % 2 == 0}}],
        "retry": {"automatic": [{"exit_status": -1, "limit": 2}, {"exit_status": 143, "limit": 1}]},
        "timeout_in_minutes": 20 + 5 * (shard % 4), "artifact_paths": [f"reports/{key}.xml"],
    }
    if shard % 3 == 0:  # a third select by path
        step["if_changed"] = f"{{src,tests}}/area{area}/**" if shard % 2 else \
            {"include": [f"src/area{area}/**", "pyproject.toml"], "exclude": [f"src/area{area}/**/*.md"]}
    if shard % 7 == 0 and groups:
        step["depends_on"] = [groups[-1]] if shard % 2 else [{"step": "lint", "allow_failure": True}]
    if shard % 10 == 9:
        step["soft_fail"] = [{"exit_status": 1}]
    if shard % 15 == 4:
        step["parallelism"] = 2
    return step


def _monorepo_step() -> dict[str, Any]:
    watch = [{"path": [f"services/svc{i}/**", f"libs/common{i % 4}/"],
              "config": {"label": f":docker: service {i}", "key": f"svc{i}-build",
                         "command": f"make -C services/svc{i} build test",
                         "agents": {"queue": "cpu"}, "env": {"SERVICE": f"svc{i}"}}}
             for i in range(SERVICES)]
    return {"label": ":git: services changed", "key": "services", "agents": {"queue": "cpu"},
            "plugins": [{MONOREPO_DIFF: {"diff": "git diff --name-only HEAD~1", "watch": watch}}]}


def pipeline(steps: int = 300) -> dict[str, Any]:
    """About `steps` command steps (those the monorepo-diff step uploads included)."""
    rng = random.Random(steps)
    release = 5
    areas = max(1, (steps - 1 - SERVICES - release) // PER_GROUP)
    out: list[Any] = [{"label": ":lint-roller: lint", "key": "lint", "command": "make lint",
                       "agents": {"queue": "cpu"}, "plugins": [{DOCKER: {"image": "python:3.11"}}]}, "wait"]
    groups: list[str] = []
    for area in range(areas):
        count = PER_GROUP if area < areas - 1 else steps - 1 - SERVICES - release - PER_GROUP * (areas - 1)
        out.append({"group": f":python: area {area}", "key": f"area{area}",
                    "steps": [_command_step(rng, area, shard, groups) for shard in range(count)]})
        groups.append(f"area{area}")
    out += [{"wait": None, "continue_on_failure": True}, _monorepo_step(),
            {"block": ":rocket: release?", "key": "release-gate", "prompt": "Publish the packages?"}]
    out += [{"label": f":package: publish {name}", "key": f"publish-{name}", "command": f"make publish-{name}",
             "agents": {"queue": "release"}, "depends_on": "release-gate", "branches": "main release/*",
             "concurrency": 1, "concurrency_group": f"publish-{name}"}
            for name in ("wheel", "sdist", "docs", "image", "helm")[:release]]
    return {"env": {"PYTHONUNBUFFERED": "1", "PIP_INDEX_URL": "https://pypi.example.com/simple"},
            "steps": out}


def repository_files(steps: int = 300) -> dict[str, str]:
    """The repository around the pipeline: the folders its path rules name, a file in each."""
    areas = max(1, (steps - 1 - SERVICES - 5) // PER_GROUP)
    files = {f"{top}/area{a}/mod.py": "x = 1\n" for a in range(areas) for top in ("src", "tests")}
    files.update({f"services/svc{i}/main.go": "package main\n" for i in range(SERVICES)})
    files.update({f"libs/common{i}/lib.go": "package common\n" for i in range(4)})
    files.update({"pyproject.toml": "[project]\nname = 'big'\n", "Makefile": "lint:\n\ttrue\n",
                  ".buildkite/pipeline.yml": yaml.safe_dump(pipeline(steps), sort_keys=False, width=120)})
    return files
