"""Labels that add steps, and the config's branch policy: select, why, render, run and audit tell one story."""

from __future__ import annotations

import functools
import json

import yaml
from click.testing import CliRunner

from pipegen.cli import cli
from tests import helpers
from tests.helpers import commit_files, git_repo

STEPS = """
group: Tests
steps:
  - label: Unit
    key: unit
    commands: [make unit]
    source_file_dependencies: [src/]
  - label: GPU
    key: gpu
    optional: true
    commands: [make gpu]
    source_file_dependencies: [gpu/]
  - label: Bench
    key: bench
    depends_on: [unit]
    hardware: [small, big]
    commands: [make bench]
    source_file_dependencies: [bench/]
"""
HARDWARE = """
default: small
families:
  small: {vendor: cpu, queue: small}
  big: {vendor: cpu, queue: big}
"""
CONFIG = """
steps: [.buildkite/steps]
labels:
  gpu: {add: [gpu, bench]}
run_all_branches: [main]
nightly_branches: ["release/*"]
"""


def make(tmp_path, config=CONFIG):
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": config, ".buildkite/hardware.yaml": HARDWARE,
                                        ".buildkite/steps/tests.yaml": STEPS, "src/a.py": "", "gpu/g.py": "",
                                        "bench/b.py": ""})


invoke = functools.partial(helpers.invoke, files="src/a.py\n")  # the change most tests here make


def decisions(root, env=None, files="src/a.py\n"):
    result = invoke(root, "select", "--format", "json", env=env, files=files)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data, {s["key"]: (s["action"], s["reasons"][0]["text"]) for s in data["steps"]}


def test_a_label_adds_its_steps_and_what_they_need_optional_or_not(tmp_path):
    root = make(tmp_path)
    _, plain = decisions(root, files="docs.txt\n")
    assert {k: a for k, (a, _) in plain.items()} == {"unit": "block", "gpu": "block", "bench-small": "block",
                                                     "bench-big": "block"}
    _, labelled = decisions(root, env={"BUILDKITE_PULL_REQUEST_LABELS": "other, gpu"}, files="docs.txt\n")
    assert labelled["gpu"] == ("run", "pull-request label 'gpu' adds it")
    # a fanned-out step's own key adds every target; what it depends on comes along, and says why
    assert labelled["bench-small"][0] == labelled["bench-big"][0] == "run"
    assert labelled["unit"] == ("run", "pull-request label 'gpu' adds 'bench', which depends on it")
    # render runs exactly those: no block step in front of them
    text = invoke(root, "render", env={"BUILDKITE_PULL_REQUEST_LABELS": "gpu"}, files="docs.txt\n").stdout
    assert "block:" not in text and "key: gpu" in text
    why = invoke(root, "why", "--step", "gpu", env={"BUILDKITE_PULL_REQUEST_LABELS": "gpu"}, files="docs.txt\n")
    assert "pull-request label 'gpu' adds it" in why.stdout


def test_a_label_adding_an_unknown_key_is_a_warning_and_a_check_finding(tmp_path):
    root = make(tmp_path, CONFIG.replace("add: [gpu, bench]", "add: [gpu, bnech]"))
    data, _ = decisions(root)
    assert any("label 'gpu' add: 'bnech' names no step" in w for w in data["warnings"]), data["warnings"]
    result = invoke(root, "check", "--format", "json", files=None)
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "unmatched-key"]
    assert found and "did you mean 'bench'?" in found[0]["fix"] and found[0]["line"] == 4


MAIN = {"BUILDKITE_BRANCH": "main", "BUILDKITE_PULL_REQUEST": "false"}


def test_builds_of_a_run_all_branch_run_everything_and_every_command_says_so(tmp_path):
    root = make(tmp_path)
    reason = "builds of branch main run everything (run_all_branches: main)"
    data, steps = decisions(root, env=MAIN)
    assert data["run_all_reason"] == reason
    assert steps["unit"] == ("run", reason) and steps["bench-big"] == ("run", reason)
    assert steps["gpu"][0] == "block"  # run-all leaves optional steps waiting, as RUN_ALL=1 does
    # a pull request from a branch called main is decided by its change
    _, pull = decisions(root, env={**MAIN, "BUILDKITE_PULL_REQUEST": "12"})
    assert pull["bench-big"][0] == "block"
    render = invoke(root, "render", "--annotation", str(tmp_path / "note.md"), env=MAIN)
    assert render.exit_code == 0
    rendered = yaml.safe_load(render.stdout)["steps"][0]["steps"]
    assert [s["key"] for s in rendered if "block" in s] == ["block-gpu"]  # only the optional step waits
    assert reason in (tmp_path / "note.md").read_text()
    assert reason in invoke(root, "why", "--step", "bench-small", env=MAIN).stdout
    assert reason in invoke(root, "why", "src/a.py", env=MAIN, files=None).stdout
    run = invoke(root, "run", "--dry-run", env=MAIN)
    assert run.exit_code == 0 and reason in run.stdout
    assert all(key in run.stdout for key in ("unit", "bench-small"))


def test_builds_of_a_nightly_branch_run_optional_steps_too(tmp_path):
    root = make(tmp_path)
    _, steps = decisions(root, env={"BUILDKITE_BRANCH": "release/1.0", "BUILDKITE_PULL_REQUEST": "false"})
    text = "builds of branch release/1.0 are nightly builds (nightly_branches: release/*): every step runs, " \
           "optional ones too"
    assert steps["gpu"] == ("run", text)
    _, other = decisions(root, env={"BUILDKITE_BRANCH": "feature", "BUILDKITE_PULL_REQUEST": "false"})
    assert other["gpu"][0] == "block" and other["unit"][0] == "run"


def test_audit_says_what_the_branch_policy_does_to_the_builds_it_replays_as_pull_requests(tmp_path):
    root = make(tmp_path)
    commit_files(root, {"src/b.py": "x"}, "a change of src")
    result = CliRunner().invoke(cli, ["audit", "--root", str(root), "--last", "1", "--format", "json"],
                                env={"PIPEGEN_CACHE_DIR": "", **MAIN}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["commits"][0]["run"] == ["unit"]  # replayed as the pull request it was
    assert data["notes"] == ["builds of branch main run everything (run_all_branches); each commit here is "
                             "replayed as its pull request, as select decides one",
                             "builds of branch release/* are nightly builds (nightly_branches); each commit here "
                             "is replayed as its pull request, as select decides one"]
    text = CliRunner().invoke(cli, ["audit", "--root", str(root), "--last", "1"], env={"PIPEGEN_CACHE_DIR": ""})
    assert "builds of branch main run everything (run_all_branches)" in text.stdout


def test_many_keys_are_checked_in_one_pass():
    """$PIPEGEN_ONLY_STEP_KEYS' duplicate check and the labels' `only` keys are linear (list.count and `in` on a
    list took minutes on 100,000 keys); the order is kept and the duplicates named."""
    import time

    import pytest

    from pipegen.errors import UsageError
    from pipegen.model import LabelRule, Options, Settings
    from pipegen.selection.requested import requested

    keys = [f"k{i}" for i in range(100_000)]
    start = time.perf_counter()
    with pytest.raises(UsageError, match="duplicate step keys: k1, k7\n"):
        requested(Options(), Settings(), {"PIPEGEN_ONLY_STEP_KEYS": json.dumps([*keys, "k7", "k1"])})
    rules = tuple(LabelRule(f"l{n}", only=tuple(keys[n * 1000:n * 1000 + 50_000])) for n in range(10))
    asked = requested(Options(), Settings(labels=rules),
                      {"BUILDKITE_PULL_REQUEST_LABELS": ", ".join(r.label for r in rules)})
    assert time.perf_counter() - start < 5
    assert asked.only == tuple(keys[:59_000])
