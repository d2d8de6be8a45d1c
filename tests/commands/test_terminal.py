"""Terminal habits through the real CLI in a subprocess: -q/-v and --color (with $NO_COLOR, $FORCE_COLOR and a
real terminal) on every command; colour reaches errors, warnings, losses and failed steps for people, never the
YAML, JSON or Markdown that tools read."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from pipegen.cli import cli
from tests.helpers import CLI_CONFIG, CLI_STEPS, commit_files, git, git_repo

ESC = "\x1b["
RED = "\x1b[31m"
GONE = "- label: Gone\n  key: gone\n  commands: ['false']\n  source_file_dependencies: [gone/]\n"  # a stale entry


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A change on a branch with no merge base with main: everything runs, with a WARNING on stderr."""
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": CLI_CONFIG,
                                        ".buildkite/steps/tests.yaml": CLI_STEPS + GONE, "src/core/a.py": "a = 1\n"})
    git(root, "checkout", "-q", "--orphan", "lonely")
    commit_files(root, {"src/core/a.py": "a = 2\n"}, "lonely")
    return root


def pipegen(repo: Path, *args: str, tty: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """`pipegen ARGS` in `repo` without the caller's colour settings; `tty`: stderr is a terminal (read back)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "PIPEGEN_BASE")}
    clean.update({"PIPEGEN_CACHE_DIR": "", "TERM": "xterm", **env})
    argv = [sys.executable, "-m", "pipegen", *args]
    if not tty:
        return subprocess.run(argv, cwd=repo, env=clean, capture_output=True, text=True, timeout=120)
    main, side = pty.openpty()
    try:
        done = subprocess.run(argv, cwd=repo, env=clean, stdout=subprocess.PIPE, stderr=side, text=True, timeout=120)
        os.close(side)
        said = b""
        while chunk := _read(main):
            said += chunk
    finally:
        os.close(main)
    return subprocess.CompletedProcess(argv, done.returncode, done.stdout, said.decode().replace("\r\n", "\n"))


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal's other side closed: all was read
        return b""


MACHINE_OUTPUT = [
    ["render", "--base", "main"],
    ["select", "--base", "main", "--format", "json"],
    ["select", "--base", "main", "--format", "markdown"],
    ["why", "--base", "main", "--step", "core", "--format", "json"],
    ["check", "--format", "json"],
    ["check", "--format", "markdown"],
    ["audit", "--last", "1", "--format", "json"],
    ["audit", "--last", "1", "--format", "markdown"],
    ["run", "--base", "main", "--dry-run", "--hardware", "cpu", "--format", "json"],
    ["schema", "check-output"],
]


@pytest.mark.parametrize("args", MACHINE_OUTPUT, ids=" ".join)
def test_yaml_json_and_markdown_never_get_colour(repo, args):
    plain = pipegen(repo, *args, "--color", "never")
    forced = pipegen(repo, *args, "--color", "always", FORCE_COLOR="1")
    assert forced.stdout == plain.stdout and ESC not in forced.stdout and plain.stdout
    assert forced.returncode == plain.returncode
    if "WARNING" in plain.stderr:  # the same run said it in colour where people read it
        assert "\x1b[33m\x1b[1mWARNING\x1b[0m" in forced.stderr and ESC not in plain.stderr


@pytest.mark.parametrize(("option", "env", "colored"), [
    ("never", {}, False), ("always", {}, True), ("auto", {}, False),  # auto: stdout is a pipe here
    ("auto", {"FORCE_COLOR": "1"}, True), ("auto", {"FORCE_COLOR": "0"}, False),
    ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False), ("always", {"NO_COLOR": "1"}, True),
    ("never", {"FORCE_COLOR": "1"}, False),
])
def test_check_colours_its_errors_as_asked(repo, option, env, colored):
    done = pipegen(repo, "check", "--color", option, **env)
    assert done.returncode == 1
    [line] = [x for x in done.stdout.splitlines() if "error[stale-entry]" in x]
    assert line.startswith(RED) == colored and (ESC in done.stdout) == colored
    uncoloured = pipegen(repo, "check", "--color", "never").stdout
    assert done.stdout.replace(RED, "").replace("\x1b[33m", "").replace("\x1b[0m", "") == uncoloured


@pytest.mark.parametrize(("env", "colored"), [({}, True), ({"NO_COLOR": "1"}, False), ({"NO_COLOR": ""}, True),
                                              ({"TERM": "dumb"}, False)])
def test_auto_colours_a_terminal(repo, env, colored):
    done = pipegen(repo, "select", "--base", "main", tty=True, **env)
    assert "WARNING" in done.stderr and (ESC in done.stderr) == colored
    assert ESC not in done.stdout  # stdout is a pipe: no colour there


def test_errors_are_red_and_say_the_same(repo):
    plain = pipegen(repo, "select", "--base", "nope", "--color", "never")
    red = pipegen(repo, "select", "--base", "nope", "--color", "always")
    assert plain.returncode == red.returncode == 2
    assert plain.stderr.startswith("pipegen: error: base ref 'nope'")
    assert red.stderr == plain.stderr.replace("error", "\x1b[31m\x1b[1merror\x1b[0m", 1)


def test_audit_losses_are_red(repo):
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"src/core/b.py": "b = 1\n"})
    steps = repo / ".buildkite" / "steps" / "tests.yaml"
    steps.write_text(steps.read_text().replace("[src/core/, ", "[lib/, "))  # core would lose the commit
    done = pipegen(repo, "audit", "--last", "1", "--compare", "HEAD", "--color", "always")
    losses = [line for line in done.stdout.splitlines() if "LOSS" in line or "LOSE" in line]
    assert len(losses) == 2 and all(line.startswith(RED) for line in losses), done.stdout
    assert sum(line.startswith(ESC) for line in done.stdout.splitlines()) == 2


def test_run_colours_failed_steps_and_quiet_drops_the_progress(repo):
    args = ("run", "--step", "gone", "--step", "lint", "--hardware", "cpu", "--color", "always")
    done = pipegen(repo, *args)
    assert done.returncode == 1
    assert [x for x in done.stdout.splitlines() if x.startswith(RED)] == [
        x for x in done.stdout.splitlines() if x.startswith(f"{RED}gone ") and "failed" in x]
    assert "started" in done.stdout
    quiet = pipegen(repo, *args, "-q")
    assert quiet.returncode == 1 and "started" not in quiet.stdout
    assert [x for x in quiet.stdout.splitlines() if "failed" in x][-1:] == [x for x in done.stdout.splitlines()
                                                                           if "failed" in x][-1:]  # the totals


def test_quiet_still_warns_and_verbose_says_what_it_read(repo):
    normal = pipegen(repo, "select", "--base", "main")
    quiet = pipegen(repo, "select", "--base", "main", "-q")
    assert quiet.stdout == normal.stdout and quiet.stderr == normal.stderr and "WARNING" in quiet.stderr
    loud = pipegen(repo, "select", "--base", "main", "-v")
    assert loud.stdout == normal.stdout
    extra = [line for line in loud.stderr.splitlines() if line not in normal.stderr.splitlines()]
    assert extra[0] == "pipegen: declarations: 5 steps from .buildkite/pipegen.yaml, .buildkite/steps/tests.yaml"
    assert extra[1].startswith("pipegen: change: 0 changed files (no common history") and "cannot be trusted" in extra[1]
    assert extra[2].startswith("pipegen: done in ") and extra[2].endswith(" s, exit status 0") and len(extra) == 3
    assert pipegen(repo, "select", "--base", "main", "-v", "-q").stderr == normal.stderr  # they cancel


def test_every_command_takes_the_same_terminal_options():
    for name, command in cli.commands.items():
        params = {p.name: p for p in command.params}
        assert params["quiet"].opts == ["-q", "--quiet"] and params["verbose"].opts == ["-v", "--verbose"], name
        assert params["color"].type.choices == ("auto", "always", "never"), name
