"""What many tests share: this checkout, the vLLM fixtures, real git repositories built in tmp_path, and the
repositories, CLI calls and checks of the render, check, run and select tests."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import strategies as st

from pipegen.cli import cli

ROOT = Path(__file__).resolve().parent.parent  # this checkout
# vLLM's configuration and tracked files, beside the checkout (../shared), not copied into it.
FIXTURE = ROOT.parent / "shared" / "fixtures" / "vllm-2026-05-29"
needs_fixture = pytest.mark.skipif(not FIXTURE.is_dir(), reason=f"vLLM fixtures not found at {FIXTURE}")

# A fixed identity: commits succeed on a machine without git config.
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(cwd: Path | str, *args: str) -> str:
    """Run git in `cwd`; its stdout (a failure raises, with git's stderr captured)."""
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **IDENTITY}, check=True,
                          capture_output=True, text=True).stdout


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit_files(root: Path, files: Mapping[str, str], message: str = "change") -> None:
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def git_repo(root: Path, files: Mapping[str, str], branch: str = "main") -> Path:
    """A new repository at `root` whose first commit ("base") holds `files`."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    commit_files(root, files, "base")
    return root


# --------------------------------------------------------------------------- render: the real CLI, Buildkite's schema


@functools.cache
def buildkite_schema_validator():
    """An independent check: jsonschema on the vendored schema file (not pipegen's fast path)."""
    import jsonschema

    text = (ROOT / "pipegen" / "buildkite" / "buildkite-pipeline-schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft7Validator(json.loads(text))



def assert_valid(text: str) -> dict:
    data = yaml.safe_load(text)
    errors = sorted(buildkite_schema_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, errors[0]
    return data


def assert_fast_dialect(text: str) -> None:
    """fastyaml reads the whole text as PyYAML does: output outside its dialect would still render,
    but its check would fall back to PyYAML, ~8x slower."""
    from pipegen.render import fastyaml

    assert fastyaml.Reader(text).document() == yaml.safe_load(text)


def all_steps(data: dict) -> list[dict]:
    out = []
    for step in data["steps"]:
        out += step["steps"] if "group" in step else [step]
    return out


def by_key(data: dict) -> dict[str, dict]:
    return {s["key"]: s for s in all_steps(data)}


def invoke(root, *args, files: str | None = None, env=None):
    """The CLI in process on `root`: `files` (changed paths) on stdin through --files-from where given, no cache,
    an exception raised as a traceback (a test sees it)."""
    extra = ["--files-from", "-"] if files is not None else []
    return CliRunner().invoke(cli, [*args, "--root", str(root), *extra], input=files or "",
                              env={"PIPEGEN_CACHE_DIR": "", **(env or {})}, catch_exceptions=False)


def render(root, *args, files: str | None = "", env=None):
    return invoke(root, "render", *args, files=files, env=env)


RENDER_HARDWARE = """
default: cpu
families:
  cpu: {vendor: cpu, queue: cpu-q, template: py}
  h100: {vendor: nvidia, arch: sm_90, template: cuda, queues: {1: h100-1, 2: h100-2, 4: h100-4, 8: h100-8}}
  mi355: {vendor: amd, arch: gfx950, template: rocm, queues: {1: mi355-1, 2: mi355-2, 8: mi355-8}}
  k8s: {vendor: nvidia, template: pod, queues: {1: k8s-q, 2: k8s-q}}
  runner: {vendor: amd, template: script, queues: {1: script-q}}
templates:
  py: {kind: docker, image: "python:3.11", options: {always-pull: true}}
  cuda: {kind: docker, image: "nvcr.io/cuda:$BUILDKITE_COMMIT", gpus: all, volumes: [/dev/shm:/dev/shm],
         setup: ["nvidia-smi"]}
  rocm: {kind: docker, image: rocm/pytorch, devices: [/dev/kfd, /dev/dri]}
  pod: {kind: kubernetes, pod_spec: {containers: [{image: "img:1", resources: {limits: {}}}]}}
  script: {kind: plain, wrap: "bash run.sh {commands}"}
"""


def render_repo(tmp_path: Path, steps: str, config: str = "", hardware: str = RENDER_HARDWARE) -> Path:
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text("steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n"
                                                         + config)
    (tmp_path / ".buildkite" / "hardware.yaml").write_text(hardware)
    (tmp_path / ".buildkite" / "steps" / "steps.yaml").write_text(textwrap.dedent(steps))
    return tmp_path


RENDER_STEPS = """
group: Tests
steps:
  - label: "Unit"
    key: unit
    hardware: [cpu]
    commands: ["pytest tests"]
    source_file_dependencies: [src/]
  - label: "Quick reduce"
    key: qr
    hardware: [cpu, h100:2, mi355:2, mi355:8]
    working_dir: /work
    commands: ["pytest qr_tests", "echo $HOME"]
    env: {TP_SIZE: "2"}
    retry: {automatic: [{exit_status: 3, limit: 2}]}
    soft_fail: [{exit_status: 7}]
    timeout_in_minutes: 30
    parallelism: 2
    concurrency: 1
    concurrency_group: qr-gpu
    depends_on: [unit]
    source_file_dependencies: [qr/]
  - label: "On Kubernetes"
    key: pod
    hardware: ["k8s:2"]
    commands: ["true"]
    source_file_dependencies: [k8s/]
  - label: "Script runner"
    key: script
    hardware: [runner]
    working_dir: /w
    commands: ["a 'b'", "c"]
    source_file_dependencies: [script/]
"""


# --------------------------------------------------------------------------- check


CHECK_CONFIG = "steps: [.buildkite/steps.yaml]\n"


SOURCES = {
    "mypkg/__init__.py": "",
    "mypkg/core.py": "import os\nimport json\nimport numpy\nfrom . import util\n",
    "mypkg/util.py": "from collections import OrderedDict\n",
    "mypkg/extra.py": "",
    "tests/__init__.py": "",
    "tests/helpers.py": "import mypkg.core\n",
    "tests/test_core.py": "import pytest\nfrom mypkg import core\nfrom .helpers import x\n",
    "tests/test_config.py": "",
    "docs/index.md": "",
}


CLEAN_STEP = """\
- label: Core
  key: core
  commands: ["pytest -v tests/test_core.py::test_one -k 'not slow'"]
  source_file_dependencies: [mypkg, tests/]
"""


def check_repo(tmp_path: Path, steps: str, files: dict[str, str] | None = None, config: str = CHECK_CONFIG,
              steps_file: str = ".buildkite/steps.yaml", config_file: str = ".buildkite/pipegen.yaml") -> Path:
    return git_repo(tmp_path / "repo", {**SOURCES, **(files or {}), config_file: config, steps_file: "steps:\n" + steps})


def check(root: Path, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["check", "--root", str(root), "--format", "json", *args],
                                env={"PIPEGEN_CONFIG": None, "GIT_DIR": None})
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.output)


def codes(report: dict) -> list[str]:
    return [f["code"] for f in report["findings"]]


def only(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["code"] == code]
    assert len(found) == 1, report["findings"]
    return found[0]


# --------------------------------------------------------------------------- run


INVENTORY = """\
hardware:
  default: cpu
  families:
    cpu: {vendor: cpu, queue: cpu-q, template: {kind: docker, image: img, environment: ["MODE=cpu", HOME]}}
    mi355: {vendor: amd, arch: gfx950, queues: {1: mi355-1, 2: mi355-2, 8: mi355-8}}
    h100: {vendor: nvidia, arch: sm_90, queues: {1: h100-1, 2: h100-2}}
"""


def run(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", "--root", str(repo), "--hardware", "cpu", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


# --------------------------------------------------------------------------- select and why through the CLI


CLI_CONFIG = """\
steps: [.buildkite/steps]
run_all: [pyproject.toml]
docs_only: ["docs/", "*.md"]
always_run: [lint]
"""


CLI_STEPS = """\
group: Tests
steps:
- label: Lint
  key: lint
  commands: [ruff check]
- label: Core
  key: core
  depends_on: [lint]
  source_file_dependencies: [src/core/, "!src/core/vendored/"]
  commands: [pytest tests/core]
- label: Slow
  key: slow
  optional: true
  source_file_dependencies: [src/]
  commands: [pytest tests/slow]
- label: Bare
  key: bare
  commands: [echo]
"""


# Generated declarations for the property tests of select, why, render and audit.
DEVICES_HARDWARE = ("default: cpu\nfamilies:\n  cpu: {vendor: cpu, queue: cpu-q, template: plain}\n"
                    "  h100: {vendor: nvidia, arch: sm_90, template: plain, queues: {1: h100-1, 2: h100-2}}\n"
                    "templates:\n  plain: {kind: plain}\n")  # the inventory of `declarations(devices=...)`


@st.composite
def declarations(draw: st.DrawFn, entries: Sequence[str], devices: Sequence[str] = (),
                 always_run: Sequence[str] = ()) -> dict[str, str]:
    """A repository's declarations (file -> text): 1-6 steps s0, s1, ... with source_file_dependencies drawn
    from `entries`, some optional, some depending on earlier steps; a config with some run_all, docs_only and
    always_run (step keys, and the globs `always_run`); `devices`: each step on one of them (DEVICES_HARDWARE's
    families), and the inventory."""
    keys = [f"s{i}" for i in range(draw(st.integers(1, 6)))]
    steps = []
    for index, key in enumerate(keys):
        step: dict[str, Any] = {"label": key.upper(), "key": key, "commands": ["true"]}
        if devices:
            step["hardware"] = [draw(st.sampled_from(devices))]
        deps = draw(st.lists(st.sampled_from(entries), max_size=3, unique=True))
        if deps:
            step["source_file_dependencies"] = deps
        if draw(st.integers(0, 4)) == 0:
            step["optional"] = True
        needs = draw(st.lists(st.sampled_from(keys[:index]), max_size=2, unique=True)) if index else []
        if needs:
            step["depends_on"] = needs
        steps.append(step)
    config: dict[str, Any] = {"steps": [".buildkite/steps"], "no_dependencies": draw(st.sampled_from(["block", "run"]))}
    files = {".buildkite/steps/s.yaml": yaml.safe_dump({"steps": steps})}
    if devices:
        config["hardware"] = ".buildkite/hardware.yaml"
        files[".buildkite/hardware.yaml"] = DEVICES_HARDWARE
    for field, choices in (("run_all", ["pyproject.toml", "lib/"]), ("docs_only", ["docs/", "*.md"]),
                           ("always_run", keys + list(always_run))):
        chosen = draw(st.lists(st.sampled_from(choices), max_size=2, unique=True))
        if chosen:
            config[field] = chosen
    return {".buildkite/pipegen.yaml": yaml.safe_dump(config), **files}
