"""The Buildkite plugin (plugin.yml, hooks/command) as an agent runs it: the hook in a real git
repository, the real pipegen, and a stand-in `buildkite-agent` on PATH that records each call."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import fastjsonschema
import pytest
import yaml

from tests import agent
from tests.helpers import CLI_CONFIG, CLI_STEPS, commit_files, git, git_repo

ROOT = Path(__file__).resolve().parent.parent.parent
HOOK = ROOT / "hooks" / "command"
PIPEGEN = f"{shlex.quote(sys.executable)} -m pipegen"


@pytest.fixture
def repo(tmp_path):
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": CLI_CONFIG, ".buildkite/steps/tests.yaml": CLI_STEPS,
                                        "src/core/a.py": "a = 1\n"})
    git(root, "checkout", "-q", "-b", "change")
    commit_files(root, {"src/core/a.py": "a = 2\n"})
    return root


def hook(repo: Path, tmp_path: Path, **options: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, str]]]:
    """Run the hook with plugin options (BUILDKITE_PLUGIN_PIPEGEN_<NAME>); the agent calls it made, in order."""
    bin_dir, record = agent.install(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUILDKITE", "PIPEGEN"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", RECORD=str(record), PIPEGEN_CACHE_DIR="",
               BUILDKITE_PLUGIN_PIPEGEN_COMMAND=PIPEGEN, PIPEGEN_BASE="main")
    env.update({k if k.startswith("FAKE_") else f"BUILDKITE_PLUGIN_PIPEGEN_{k.upper()}": v for k, v in options.items()})
    done = subprocess.run(["bash", str(HOOK)], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    return done, agent.calls(record)


def rendered(repo: Path, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "pipegen", "render", "--base", "main", *args], cwd=repo,
                          env={**os.environ, "PIPEGEN_CACHE_DIR": ""}, capture_output=True, text=True).stdout


def test_renders_annotates_and_uploads(repo, tmp_path):
    done, calls = hook(repo, tmp_path, context="ci-why")
    assert done.returncode == 0, done.stderr
    annotate, upload = calls
    assert annotate["args"].split() == ["annotate", "--context", "ci-why", "--style", "info"]
    assert "Core" in annotate["stdin"]
    assert upload["args"].split()[:2] == ["pipeline", "upload"]
    assert upload["uploaded"] == rendered(repo)


def test_config_and_args_reach_render(repo, tmp_path):
    (repo / "other.yaml").write_text(CLI_CONFIG.replace("steps: [.buildkite/steps]", "steps: [.buildkite/steps/tests.yaml]"))
    done, calls = hook(repo, tmp_path, config="other.yaml", args_0="--unselected", args_1="omit")
    assert done.returncode == 0, done.stderr
    assert calls[-1]["uploaded"] == rendered(repo, "--config", "other.yaml", "--unselected", "omit")
    assert "block" not in calls[-1]["uploaded"]  # omit: no block step for the unselected ones
    done, string_form = hook(repo, tmp_path / "s", config="other.yaml", args="--unselected omit")
    assert string_form[-1]["uploaded"] == calls[-1]["uploaded"]


def test_a_failed_render_uploads_nothing_and_keeps_its_exit_code(repo, tmp_path):
    (repo / ".buildkite" / "steps" / "tests.yaml").write_text("steps:\n- label: x\n  bogus_field: 1\n")
    done, calls = hook(repo, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "nothing uploaded" in done.stderr
    assert all(not c["args"].startswith("pipeline") for c in calls)
    assert all("--style\nerror" in c["args"] for c in calls)  # the annotation, if any, is an error


def test_annotate_failing_never_fails_the_upload(repo, tmp_path):
    done, calls = hook(repo, tmp_path, FAKE_ANNOTATE_EXIT="1")
    assert done.returncode == 0, done.stderr
    assert "annotate failed" in done.stderr
    assert calls[-1]["uploaded"] == rendered(repo)


def test_the_upload_failing_fails_the_hook(repo, tmp_path):
    done, _ = hook(repo, tmp_path, FAKE_UPLOAD_EXIT="3")
    assert done.returncode == 3


def test_an_untrusted_diff_is_a_warning(repo, tmp_path):
    git(repo, "checkout", "-q", "--orphan", "lonely")  # no merge base with main: everything runs, with a WARNING
    commit_files(repo, {"x.txt": "x\n"}, "lonely")
    done, calls = hook(repo, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "WARNING" in done.stderr
    assert calls[0]["args"].split()[-1] == "warning"


def test_dry_run_and_no_annotation(repo, tmp_path):
    done, calls = hook(repo, tmp_path, dry_run="true", annotate="false")
    assert done.returncode == 0, done.stderr
    assert calls == []
    assert rendered(repo) in done.stdout


def test_a_huge_annotation_is_cut_under_buildkites_limit(repo, tmp_path):
    long = "x" * 3000
    steps = "steps:\n" + "".join(f"- label: 'step {i} {long}'\n  key: s{i}\n  commands: [t]\n"
                                 "  source_file_dependencies: [src/core/]\n" for i in range(450))
    commit_files(repo, {".buildkite/steps/tests.yaml": steps})
    done, calls = hook(repo, tmp_path)
    assert done.returncode == 0, done.stderr
    body = calls[0]["stdin"].encode()
    assert len(body) <= 1024 * 1024 and b"cut at 1 MiB" in body


def test_plugin_yml_names_every_option_the_hook_reads():
    spec = yaml.safe_load((ROOT / "plugin.yml").read_text())
    validate = fastjsonschema.compile(spec["configuration"])
    validate({"config": "x.yaml", "args": ["--all"], "dry-run": True, "annotate": False, "context": "c",
              "command": "pipegen"})
    validate({"args": "--all --nightly"})
    with pytest.raises(fastjsonschema.JsonSchemaException):
        validate({"confg": "x.yaml"})  # a misspelt option is refused by the agent's check
    read = set(re.findall(r"BUILDKITE_PLUGIN_PIPEGEN_([A-Z]+(?:_[A-Z]+)*)", HOOK.read_text()))
    assert {name.replace("-", "_").upper() for name in spec["configuration"]["properties"]} == read
