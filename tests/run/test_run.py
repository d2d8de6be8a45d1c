"""`pipegen run`: planning, real subprocess steps, reporting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipegen.buildkite.upload_escape import Dollars
from pipegen.cli import cli
from pipegen.hardware.detect import Machine
from pipegen.model import Location, Step
from pipegen.run.local_plan import script, shortfall, step_env
from pipegen.run.output import duration
from tests.helpers import INVENTORY, ROOT, git, git_repo, run, write_files

STEPS = """\
group: demo
steps:
  - label: env and cwd
    key: env-cwd
    working_dir: /workdir/sub
    env: {GREETING: "hello world"}
    commands:
      - echo "$GREETING from $MODE" > out.txt
      - pwd >> out.txt
    source_file_dependencies: [sub]
  - label: fails
    key: fails
    commands:
      - echo before
      - (exit 3)
      - echo after
    source_file_dependencies: [sub]
  - label: passes
    key: passes
    commands: [printf 'ok\\n' > passed.txt]
    source_file_dependencies: [sub]
  - label: quick reduce
    key: qr
    hardware: ["mi355:2", "h100"]
    commands: [echo gpu]
    source_file_dependencies: [gpu]
  - label: slow
    key: slow
    timeout_in_minutes: 1
    commands: ["sleep 30 & echo $! > grandchild.pid; wait"]
    source_file_dependencies: [slow]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_files(root, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\ndocker_workdir: {/workdir: \"\"}\n"
                       + INVENTORY, ".buildkite/steps/demo.yaml": STEPS})
    (root / "sub").mkdir()
    return root


def changed(tmp_path: Path, *paths: str) -> str:
    listing = tmp_path / "changed.txt"
    listing.write_text("".join(p + "\n" for p in paths))
    return str(listing)


# --------------------------------------------------------------------------- running real steps


def test_env_and_working_dir_are_honoured(repo: Path) -> None:
    code, out = run(repo, "--step", "env-cwd")
    assert code == 0, out
    assert (repo / "sub" / "out.txt").read_text() == f"hello world from cpu\n{repo / 'sub'}\n"
    assert "[1/1] env-cwd: passed" in out
    assert (repo / ".pipegen" / "logs" / "env-cwd.log").exists()


def test_failure_shows_the_log_and_stops_the_rest(repo: Path) -> None:
    code, out = run(repo, "--step", "fails", "--step", "passes")
    assert code == 1
    assert "failed (exit status 3)" in out
    assert "before\n----- end of" in out  # the whole log, and `set -e` stopped at `(exit 3)`
    assert not (repo / "passed.txt").exists()
    assert "not run (fails failed; --keep-going runs the rest)" in out


def test_keep_going_runs_the_rest(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    code, out = run(repo, "--files-from", changed(tmp_path, "sub/x.py"), "--keep-going",
                    "--log-dir", str(tmp_path / "logs"))
    assert code == 1
    assert (repo / "passed.txt").read_text() == "ok\n"
    assert (tmp_path / "logs" / "fails.log").read_text() == "before\n"
    assert not (tmp_path / "logs" / ".gitignore").exists()  # only a folder pipegen creates gets one
    table = out[out.index("step "):]
    assert [line.split()[:3] for line in table.splitlines()[1:4]] == [
        ["env-cwd", "cpu", "passed"], ["fails", "cpu", "failed"], ["passes", "cpu", "passed"]]
    assert "2 passed, 1 failed" in out


def test_a_missing_working_dir_cannot_start(repo: Path) -> None:
    (repo / ".buildkite" / "steps" / "gone.yaml").write_text(
        "steps:\n  - {label: gone, key: gone, working_dir: /workdir/gone, commands: [pwd]}\n")
    code, out = run(repo, "--step", "gone")
    assert code == 1
    assert "[1/1] gone: failed (cannot start: No such file or directory)" in out
    assert "-----\npipegen: cannot start the step: [Errno 2] No such file or directory" in out


def test_timeout_stops_the_step_and_its_children(repo: Path) -> None:
    start = time.monotonic()
    code, out = run(repo, "--step", "slow", "--timeout-scale", "0.02")  # 1 minute -> 1.2 s
    assert time.monotonic() - start < 10
    assert code == 1
    assert "timed out (timed out after 1.2s)" in out
    assert f"----- {repo / '.pipegen' / 'logs' / 'slow.log'} -----\n----- end of" in out
    assert _dies(int((repo / "grandchild.pid").read_text()))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])  # Ctrl-C; a cancelled CI job
def test_ctrl_c_kills_the_whole_process_group(repo: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "pipegen", "run", "--root", str(repo), "--step", "slow",
                             "--hardware", "cpu"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid_file = repo / "grandchild.pid"
    deadline = time.monotonic() + 15
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stdout and proc.stdout.read()
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    assert not _gone(grandchild)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 130, out
    assert "[1/1] slow: interrupted in" in out
    assert _dies(grandchild)


def test_an_interrupt_while_the_step_starts_still_stops_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A loaded machine can run the step well before Popen returns: a signal then must not lose it."""
    import io

    from pipegen.run.local_plan import Planned
    from pipegen.run.process import Progress, run_all

    started: list[subprocess.Popen] = []
    popen = subprocess.Popen

    def popen_then_sigterm(*args: object, **kwargs: object) -> subprocess.Popen:
        started.append(popen(*args, **kwargs))  # type: ignore[call-overload]
        os.kill(os.getpid(), signal.SIGTERM)
        return started[0]

    monkeypatch.setattr(subprocess, "Popen", popen_then_sigterm)
    planned = Planned(_step(), "cpu", str(tmp_path), "sleep 30", (), None, str(tmp_path / "k.log"))
    try:
        [result] = run_all([planned], Progress(io.StringIO(), 1), False, dict(os.environ))
    except KeyboardInterrupt:
        os.killpg(started[0].pid, signal.SIGKILL)
        pytest.fail("the interrupt escaped with the step still running")
    assert result.status == "interrupted" and started[0].poll() is not None


def _dies(pid: int, within_s: float = 10.0) -> bool:
    """Gone within a few seconds: a killed process dies once it is scheduled, which a busy machine delays.

    The steps' grandchild sleeps 30 s, so it is still there if nothing stopped it.
    """
    deadline = time.monotonic() + within_s
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _gone(pid: int) -> bool:
    """Dead or a zombie (where PID 1 does not reap orphans, they stay zombies)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_a_passing_step_leaves_nothing_running(tmp_path: Path) -> None:
    from pipegen.run.local_plan import Planned
    from pipegen.run.process import run_step

    planned = Planned(_step(), "cpu", str(tmp_path), "sleep 30 & echo $! > bg.pid", (), None, str(tmp_path / "k.log"))
    assert run_step(planned, dict(os.environ), lambda elapsed: None).status == "passed"
    assert _dies(int((tmp_path / "bg.pid").read_text()))


def test_stop_group_kills_what_ignores_sigterm(tmp_path: Path) -> None:
    from pipegen.run.process import stop_group

    pid_file = tmp_path / "child.pid"
    proc = subprocess.Popen(["bash", "-c", f"trap '' TERM; sleep 30 & echo $! > {pid_file}; wait"],
                            start_new_session=True)
    deadline = time.monotonic() + 15
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    stopping = threading.Thread(target=stop_group, args=(proc,), kwargs={"grace_s": 0.5})
    stopping.start()
    stopping.join(15)
    hung = stopping.is_alive()
    if hung:  # clean up, then fail
        os.killpg(proc.pid, signal.SIGKILL)
        stopping.join()
    assert not hung, "stop_group did not return"
    assert proc.returncode == -signal.SIGKILL  # SIGTERM was ignored: the grace period ended in SIGKILL
    assert _dies(int(pid_file.read_text()))


# --------------------------------------------------------------------------- planning


def test_absent_hardware_is_reported_not_dropped(repo: Path, tmp_path: Path) -> None:
    code, out = run(repo, "--files-from", changed(tmp_path, "gpu/kernel.cu"))
    assert code == 0  # selected by the change, but this machine cannot run it: reported, not a failure
    assert "qr:\n    qr-mi355: needs 2 GPUs of family mi355 (gfx950); this machine has 0 GPUs" in out
    assert "qr-h100: needs 1 GPU of family h100 (sm_90); this machine has 0 GPUs" in out
    code, out = run(repo, "--step", "qr-mi355")
    assert code == 1  # asked for by name: not running it fails
    assert "qr-mi355: needs 2 GPUs of family mi355 (gfx950); this machine has 0 GPUs" in out


def test_first_satisfiable_target_of_a_fan_out(repo: Path) -> None:
    code, out = run(repo, "--step", "qr", "--dry-run", "--hardware", "nvidia:sm_90:8")
    assert code == 0
    assert "[1/1] qr-h100 on h100 x1" in out
    _code, out = run(repo, "--step", "qr", "--dry-run", "--hardware", "amd:gfx950:8")
    assert "[1/1] qr-mi355 on mi355 x2" in out
    _code, out = run(repo, "--step", "qr", "--dry-run", "--hardware", "amd:gfx942:8")
    assert "this machine has 8 amd gfx942 GPUs" in out


def test_without_the_flag_the_hardware_comes_from_pipegen_hardware(repo: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--root", str(repo), "--step", "qr", "--dry-run"],
                                env={"PIPEGEN_HARDWARE": "nvidia:sm_90:8"})
    assert result.exit_code == 0, result.output
    assert "(PIPEGEN_HARDWARE)" in result.output and "[1/1] qr-h100 on h100 x1" in result.output


def test_only_the_selected_targets_of_a_fan_out_run(repo: Path, tmp_path: Path) -> None:
    # --only selects qr-h100 alone; this machine could run qr-mi355, which must not run for it.
    code, out = run(repo, "--files-from", changed(tmp_path, "gpu/x"), "--only", "qr-h100", "--dry-run",
                    "--hardware", "amd:gfx950:8")
    assert code == 0
    assert "Plan: 0 step(s) to run here" in out
    assert "Cannot run on this machine (1):\n  qr: needs 1 GPU of family h100 (sm_90); this machine has 8 amd" in out


def test_a_step_its_family_cannot_place_is_listed(repo: Path) -> None:
    (repo / ".buildkite" / "steps" / "big.yaml").write_text(
        "steps:\n  - {label: big, key: big, hardware: ['h100:4'], commands: [nvidia-smi]}\n")
    code, out = run(repo, "--step", "big", "--step", "passes", "--hardware", "nvidia:sm_90:8")
    assert code == 1  # asked for by name
    assert "Cannot run on this machine (1):\n  big: step 'big' asks for 4 GPU(s) on 'h100', which has queues " \
           "for 1, 2 GPU(s)\n" in out
    assert "[1/1] passes: passed" in out


def test_a_no_plugin_step_gets_no_template_env(repo: Path) -> None:
    (repo / ".buildkite" / "steps" / "bare.yaml").write_text(
        "steps:\n  - {label: bare, key: bare, no_plugin: true, env: {A: '1'}, commands: [env]}\n")
    code, out = run(repo, "--step", "bare", "--dry-run")
    assert code == 0
    assert "  env: A=1\n  log:" in out  # not the cpu template's MODE=cpu


def test_a_target_named_twice_runs_once(repo: Path) -> None:
    code, out = run(repo, "--step", "qr", "--step", "qr-h100", "--dry-run", "--hardware", "nvidia:sm_90:8")
    assert code == 0 and "[1/1] qr-h100 on h100 x1" in out and "[2/" not in out


def test_dry_run_prints_the_plan_and_runs_nothing(repo: Path) -> None:
    code, out = run(repo, "--step", "env-cwd", "--step", "slow", "--dry-run")
    assert code == 0
    assert not (repo / "sub" / "out.txt").exists() and not (repo / ".pipegen").exists()
    assert out.splitlines()[:3] == ["Machine: CPU only (--hardware)", "Steps asked for: env-cwd, slow",
                                    "Plan: 2 step(s) to run here"]
    assert textwrap.dedent(f"""\
        [1/2] env-cwd on cpu
          working dir: {repo / 'sub'}
          env: GREETING=hello world
          env: MODE=cpu
          log: {repo / '.pipegen' / 'logs' / 'env-cwd.log'}
          commands:
            echo "$GREETING from $MODE" > out.txt
            pwd >> out.txt
        """) in out
    assert "  timeout: 1m00s\n" in out


def test_uncommitted_work_selects_steps(repo: Path) -> None:
    git_repo(repo, {})
    git(repo, "checkout", "-qb", "work")
    (repo / "gpu").mkdir()
    (repo / "gpu" / "kernel.cu").write_text("")
    code, out = run(repo, "--dry-run")
    assert code == 0
    assert "2 run, 4 block, 0 skip of 6 steps; 1 changed file(s) against main" in out
    assert "Plan: 0 step(s) to run here" in out and "qr-mi355: needs 2 GPUs" in out
    assert run(repo, "--step", "passes")[0] == 0
    status = git(repo, "status", "--porcelain")
    assert status.split() == ["??", "gpu/", "??", "passed.txt"]  # the logs are not "uncommitted work"


def test_nothing_to_run(repo: Path, tmp_path: Path) -> None:
    code, out = run(repo, "--files-from", changed(tmp_path, "README.md"), "--junit", str(tmp_path / "j.xml"))
    assert code == 0
    assert "Nothing to run" in out
    assert ET.parse(tmp_path / "j.xml").getroot().get("tests") == "0"


def test_an_unwritable_junit_file_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    junit = tmp_path / "missing" / "junit.xml"
    code, out = run(repo, "--step", "passes", "--junit", str(junit))
    assert code == 2 and f"cannot write --junit {junit}: No such file or directory" in out


def test_unknown_step_is_a_usage_error(repo: Path) -> None:
    code, out = run(repo, "--step", "env_cwd")
    assert code == 2
    assert "unknown step key 'env_cwd'" in out and "did you mean 'env-cwd'?" in out


def test_bad_hardware_is_a_usage_error(repo: Path) -> None:
    code, out = run(repo, "--step", "qr", "--hardware", "nvidia:gfx942")
    assert code == 2 and "--hardware: cannot read hardware 'nvidia:gfx942'" in out


# --------------------------------------------------------------------------- reporting


def test_junit_xml_parses(repo: Path, tmp_path: Path) -> None:
    (repo / ".buildkite" / "steps" / "demo.yaml").write_text(STEPS.replace(
        "- echo before", r"- printf '\033[31mred\033[0m \001 before\n'"))
    junit = tmp_path / "junit.xml"
    code, _out = run(repo, "--files-from", changed(tmp_path, "sub/x", "gpu/y"), "--junit", str(junit))
    assert code == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "2")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == ["env-cwd", "fails", "passes", "qr"]
    failure = cases["fails"].find("failure")
    assert failure is not None and failure.get("message") == "exit status 3"
    assert failure.text == "red  before\n"  # colour codes and control characters removed
    assert cases["env-cwd"].get("classname") == "demo" and not list(cases["env-cwd"])
    assert cases["env-cwd"].get("file") == ".buildkite/steps/demo.yaml"
    skipped = [cases[k].find("skipped") for k in ("passes", "qr")]
    assert skipped[0] is not None and skipped[0].get("message") == "not run: fails failed; --keep-going runs the rest"
    assert skipped[1] is not None and "needs 2 GPUs of family mi355" in skipped[1].get("message", "")


def test_a_named_step_that_cannot_run_is_a_junit_failure(repo: Path, tmp_path: Path) -> None:
    (repo / ".buildkite" / "steps" / "elsewhere.yaml").write_text(
        "steps:\n  - {label: elsewhere, key: elsewhere, working_dir: /opt/x, commands: [pwd]}\n")
    junit = tmp_path / "junit.xml"
    code, out = run(repo, "--step", "elsewhere", "--step", "qr-mi355", "--junit", str(junit))
    assert code == 1
    assert "elsewhere: working directory /opt/x is outside the repository (map it with docker_workdir)" in out
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    for key in ("elsewhere", "qr-mi355"):
        failure = cases[key].find("failure")
        assert failure is not None and failure.get("type") == "no hardware", key
        assert failure.get("message", "").startswith("cannot run on this machine: ")


# --------------------------------------------------------------------------- pure pieces


def _step(**fields: object) -> Step:
    return Step(key="k", label="k", group="", location=Location("f.yaml"), **fields)  # type: ignore[arg-type]


def test_shortfall() -> None:
    cpu, h100x2 = Machine(), Machine("nvidia", "sm_90", 2)
    assert shortfall(cpu, "cpu", None, 0, "cpu") == ""
    assert shortfall(cpu, "nvidia", "sm_90", 0, "h100") == ""  # no_gpu on a GPU family
    assert shortfall(h100x2, "nvidia", "sm_90", 2, "h100") == ""
    assert shortfall(h100x2, "nvidia", "sm_90", 4, "h100").endswith("this machine has 2")
    assert shortfall(h100x2, "nvidia", "sm_80", 1, "a100").endswith("this machine has 2 nvidia sm_90 GPUs")
    assert shortfall(h100x2, "nvidia", None, 1, "gpu") == ""  # a family without an arch: any NVIDIA GPU
    assert "2 nodes" in shortfall(h100x2, "nvidia", "sm_90", 1, "h100", nodes=2)
    assert "detects only NVIDIA and AMD" in shortfall(h100x2, "other", None, 1, "tpu")


def test_script_gives_the_shell_what_buildkite_would() -> None:
    native, vllm = Dollars(), Dollars(["*"])  # pipegen's own format; the vLLM preset
    assert script(["echo $$ $HOME", "echo done"], native) == "echo $$ $HOME\necho done"
    assert script(["echo $$HOME $$", "echo done"], vllm) == "echo $HOME $\necho done"
    assert script(["echo $HOME $USER $$"], Dollars(["HOME"])) == "echo $HOME $USER $$"  # interpolate: [HOME]
    step = _step(env=(("A", "$$x"),))
    assert step_env(step, native) == (("A", "$$x"),)
    assert step_env(step, vllm, ["B=$$y"]) == (("A", "$x"), ("B", "$y"))  # the template: Buildkite syntax


def test_parallel_steps_run_as_one_shard() -> None:
    assert step_env(_step(parallelism=4, env=(("A", "1"),)), Dollars()) == (
        ("A", "1"), ("BUILDKITE_PARALLEL_JOB", "0"), ("BUILDKITE_PARALLEL_JOB_COUNT", "1"))
    assert step_env(_step(), Dollars()) == ()
    assert step_env(_step(env=(("A", "1"), ("B", "2"))), Dollars(), ["A=x=y", "HOME"]) == (("A", "x=y"), ("B", "2"))


def test_duration() -> None:
    assert [duration(s) for s in (0.04, 59.94, 65, 3725)] == ["0.0s", "59.9s", "1m05s", "1h02m"]


def test_live_progress_redraws_one_line() -> None:
    import io

    from pipegen.run.local_plan import Planned, Result
    from pipegen.run.process import LiveProgress, Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    progress = Progress.for_stream(out, 3)
    assert isinstance(progress, LiveProgress)
    planned = Planned(_step(), "cpu", "/", "true", (), None, "k.log")
    progress.start(2, planned)
    progress.tick(1.5)
    progress.end(2, Result(planned, "passed", 2.0))
    assert out.getvalue() == ("\r\x1b[K[2/3] k on cpu: running 0.0s\r\x1b[K[2/3] k on cpu: running 1.5s"
                              "\r\x1b[K[2/3] k: passed in 2.0s; log: k.log\n")
    assert type(Progress.for_stream(io.StringIO(), 1)) is Progress


def test_local_env_puts_this_pythons_scripts_first_on_path() -> None:
    from pipegen.commands.run import local_env

    env = local_env({"PATH": "/usr/bin", "X": "1"})
    assert env == {"PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin", "X": "1"}


# --------------------------------------------------------------------------- this repository


def test_this_repository_plans_the_readme_examples() -> None:
    code, out = run(ROOT, "--step", "quick-reduce-cpu", "--dry-run")
    assert code == 0 and "[1/1] quick-reduce-cpu on cpu\n" in out
    assert "    pytest qr_tests/quick_reduce\n" in out
    code, out = run(ROOT, "--step", "quick-reduce", "--dry-run", "--hardware", "amd:gfx942:8")
    assert code == 0 and "[1/1] quick-reduce-cpu on cpu\n" in out  # lists cpu first: CPU wherever it runs
    code, out = run(ROOT, "--step", "quick-reduce-mi300-x8", "--hardware", "amd:gfx942:8", "--dry-run")
    assert code == 0 and "[1/1] quick-reduce-mi300-x8 on mi300 x8\n" in out

