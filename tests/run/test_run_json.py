"""`pipegen run --format json`: the plan and each job's outcome agree with the text output, every selected
step is accounted for exactly once, and stdout holds the JSON only (progress and logs on stderr)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from pipegen.json_output import RUN
from tests.helpers import INVENTORY, declarations, write_files

STEPS = """\
group: demo
steps:
  - {label: passes, key: passes, commands: ["echo ok > passed.txt"], source_file_dependencies: [src]}
  - {label: fails, key: fails, commands: [echo before, "exit 3"], source_file_dependencies: [src]}
  - {label: after, key: after, depends_on: [fails], commands: [echo after], source_file_dependencies: [src]}
  - {label: gpu, key: gpu, hardware: [h100], commands: [echo gpu], source_file_dependencies: [src]}
  - {label: skipped, key: skipped, skip: "flaky on main", commands: [echo no], source_file_dependencies: [src]}
  - label: matrix
    key: mx
    matrix: [a, b]
    commands: ["echo {{matrix}}"]
    source_file_dependencies: [src]
    timeout_in_minutes: 2
  - {label: slow, key: slow, commands: ["touch started; sleep 30"], source_file_dependencies: [slow]}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_files(root, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n" + INVENTORY,
                       ".buildkite/steps/demo.yaml": STEPS, "src/x.py": ""})
    return root


def run(root: Path, *args: str, files: str = "src/x.py\n") -> Any:
    return CliRunner().invoke(cli, ["run", "--root", str(root), "--hardware", "cpu", "--files-from", "-", *args],
                              input=files, env={"PIPEGEN_CACHE_DIR": ""}, catch_exceptions=False)


def as_json(result: Any) -> dict[str, Any]:
    data = json.loads(result.stdout)
    jsonschema.Draft202012Validator(RUN).validate(data)
    assert data["exit_code"] == result.exit_code
    return data


def test_the_dry_run_json_is_the_text_plan(repo: Path) -> None:
    text = run(repo, "--dry-run").stdout
    data = as_json(run(repo, "--dry-run", "--format", "json"))
    assert data["dry_run"] and data["machine"]["description"] == "CPU only" and data["counts"] == {}
    assert text.startswith("\n".join([f"Machine: CPU only ({data['machine']['source']})", *data["notes"]]) + "\n")
    headings = re.findall(r"^\[\d+/\d+\] (\S+) on (.+)$", text, re.M)
    assert headings == [(job["key"], job["hardware"]) for job in data["jobs"]]
    assert re.findall(r"^  log: (.+)$", text, re.M) == [job["log"] for job in data["jobs"]]
    assert re.findall(r"^  left out: (.+)$", text, re.M) == [job["skip"] for job in data["jobs"] if job["skip"]]
    assert [u["step"] for u in data["unrunnable"]] == ["gpu"] and "gpu: needs 1 GPU" in text
    assert all(job["status"] is None and job["seconds"] is None for job in data["jobs"])
    by_key = {job["key"]: job for job in data["jobs"]}
    assert by_key["mx[a]"]["matrix"] == "a" and by_key["mx[b]"]["commands"] == ["echo b"]
    assert by_key["mx[a]"]["timeout_seconds"] == 120 and by_key["after"]["after"] == [{"key": "fails",
                                                                                     "allow_failure": False}]
    assert by_key["passes"]["declared_at"] == {"file": ".buildkite/steps/demo.yaml", "line": 3}
    assert data["selected"] == ["passes", "fails", "after", "gpu", "skipped", "mx"]


@pytest.mark.parametrize("keep_going", [False, True])
def test_a_real_run_json_agrees_with_the_summary_table(repo: Path, keep_going: bool) -> None:
    flags = ("--keep-going",) if keep_going else ()
    text = run(repo, *flags)
    result = run(repo, *flags, "--format", "json", "--junit", str(repo / "junit.xml"))
    data = as_json(result)
    assert result.exit_code == text.exit_code == 1 and not data["dry_run"] and data["duration_seconds"] >= 0
    table = dict(re.findall(r"^(\S+)\s+(?:cpu|-)\s+(.+?)\s{2,}\S+$", text.stdout, re.M))
    jobs = {job["key"]: job for job in data["jobs"]}
    for key, job in jobs.items():
        assert table[key] == job["status"] + (f" ({job['detail']})" if job["detail"] else "")
        assert (job["seconds"] is None) == (job["status"] in ("not run", "skipped"))
    assert table["gpu"] == "cannot run here" and data["counts"]["cannot run here"] == 1
    assert jobs["fails"]["detail"] == "exit status 3" and jobs["skipped"]["detail"] == "skip: flaky on main"
    assert jobs["after"]["status"] == "not run" and jobs["after"]["detail"].startswith("fails failed")
    assert jobs["mx[b]"]["status"] == ("passed" if keep_going else "not run")
    assert Path(jobs["passes"]["log"]).read_text() == "" and (repo / "passed.txt").is_file()
    assert data["junit"] == str(repo / "junit.xml") and (repo / "junit.xml").is_file()
    # stdout is the JSON alone: the progress and the failed step's log are on stderr
    log_tail = f"----- {jobs['fails']['log']} -----\nbefore\n"
    assert "fails: failed" in result.stderr and log_tail in result.stderr and "-----" not in result.stdout


def test_nothing_to_run_is_still_one_document(repo: Path) -> None:
    data = as_json(run(repo, "--format", "json", files="README.md\n"))
    assert data["jobs"] == [] and data["machine"] is None and data["selected"] == []
    assert data["notes"][-1].startswith("Nothing to run")


def test_named_steps_that_cannot_run_fail_the_run(repo: Path) -> None:
    data = as_json(run(repo, "--step", "gpu", "--step", "mx[b]", "--format", "json"))
    assert data["asked"] == ["gpu", "mx[b]"] and data["exit_code"] == 1
    assert [j["key"] for j in data["jobs"]] == ["mx[b]"] and data["unrunnable"][0]["asked"]


ENTRIES = ["src/", "lib", "tests/", "!src/a/vendored/", "docs/"]
FILES = ["src/a/x.py", "src/a/vendored/v.py", "lib/l.py", "tests/t.py", "docs/i.md", "pyproject.toml", "other.txt"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declarations(ENTRIES, devices=("cpu", "h100")), st.lists(st.sampled_from(FILES), max_size=3, unique=True))
def test_every_selected_step_is_in_the_run_json_exactly_once(files: dict[str, str], changes: list[str]) -> None:
    """Each step select runs is in `selected` once, and is either run here (one job) or unrunnable, not both."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_files(root, files)
        listing = "".join(f + "\n" for f in changes)
        chosen = CliRunner().invoke(cli, ["select", "--root", folder, "--format", "json", "--files-from", "-"],
                                    input=listing, env={"PIPEGEN_CACHE_DIR": ""})
        runs = [s["key"] for s in json.loads(chosen.stdout)["steps"] if s["action"] == "run"]
        data = as_json(run(root, "--dry-run", "--format", "json", files=listing))
        assert data["selected"] == runs
        here, elsewhere = [job["step"] for job in data["jobs"]], [u["step"] for u in data["unrunnable"]]
        assert sorted(here + elsewhere) == sorted(runs)  # once each, in one of the two
        on_gpu = {s["key"] for s in yaml.safe_load(files[".buildkite/steps/s.yaml"])["steps"] if s["hardware"] == ["h100"]}
        assert set(elsewhere) == on_gpu & set(runs)


def test_ctrl_c_during_a_step_still_prints_one_document(repo: Path) -> None:
    """Through the real entry point: an interrupted run is a result (exit 130), its JSON says so."""
    proc = subprocess.Popen([sys.executable, "-m", "pipegen", "run", "--root", str(repo), "--step", "slow",
                             "--hardware", "cpu", "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (repo / "started").exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    data = json.loads(out)
    jsonschema.Draft202012Validator(RUN).validate(data)
    assert proc.returncode == data["exit_code"] == 130 and data["counts"] == {"interrupted": 1}
    assert [(job["key"], job["status"]) for job in data["jobs"]] == [("slow", "interrupted")]
    assert "slow: interrupted" in err
