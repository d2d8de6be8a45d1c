"""Environments other teams run pipegen in: a checkout another user owns, a read-only checkout, steps that
edit tracked files. Real git repositories, the CLI as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import IDENTITY, git_repo, write_files

CONFIG = "steps: [.buildkite/steps.yaml]\nhardware: .buildkite/hardware.yaml\n"
HARDWARE = "default: cpu\nfamilies: {cpu: {vendor: cpu, queue: q, template: plain}}\ntemplates: {plain: {kind: plain}}\n"
STEPS = """\
steps:
- {label: Edit, key: edit, commands: ['echo more >> src/a.py', 'echo x > src/b.py', 'echo new > untracked.txt'],
   source_file_dependencies: [src/]}
- {label: Quiet, key: quiet, commands: ['cat src/c.py'], source_file_dependencies: [src/]}
"""


def repo(tmp_path):
    return git_repo(tmp_path / "r", {".buildkite/pipegen.yaml": CONFIG, ".buildkite/hardware.yaml": HARDWARE,
                                     ".buildkite/steps.yaml": STEPS, "src/a.py": "a\n", "src/b.py": "b\n",
                                     "src/c.py": "c\n"})


def pipegen(root, *args, prefix=(), home=None):
    env = {**os.environ, **IDENTITY, "PIPEGEN_CACHE_DIR": "", "HOME": str(home or root.parent)}
    return subprocess.run([*prefix, sys.executable, "-m", "pipegen", *args], cwd=root, capture_output=True,
                          text=True, env=env)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the checkout to another user")
def test_a_checkout_git_refuses_as_another_users_is_said_with_gits_fix(tmp_path):
    root = repo(tmp_path)
    subprocess.run(["chown", "-R", "nobody", str(root)], check=True)
    for command in (["select"], ["render"], ["run", "--dry-run"], ["check"]):
        result = pipegen(root, *command, home=tmp_path)  # an empty HOME: no safe.directory of this machine's
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "git refuses this checkout: detected dubious ownership" in result.stderr, command
        assert f"git config --global --add safe.directory {root}" in result.stderr, command
        assert "not a git repository" not in result.stderr and "Traceback" not in result.stderr
    (tmp_path / ".gitconfig").write_text(f"[safe]\n\tdirectory = {root}\n")  # git's own fix works
    assert pipegen(root, "select", home=tmp_path).returncode == 0


def test_the_tracked_files_the_steps_changed_are_listed_after_the_run(tmp_path):
    root = repo(tmp_path)
    write_files(root, {"src/b.py": "edited before the run\n", "src/c.py": "edited, then left alone\n"})
    result = pipegen(root, "run", "--all")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    listed = out[out.index("Tracked files the steps changed"):].split("\n\n")[0].splitlines()
    assert listed == ["Tracked files the steps changed (2; 'git diff' shows how):", "  src/a.py", "  src/b.py"]
    assert "untracked.txt" not in out and "src/c.py" not in out.split("Tracked files")[1]
    clean = pipegen(root, "run", "--step", "quiet")
    assert clean.returncode == 0 and "Tracked files the steps changed" not in clean.stdout


def test_a_run_where_the_log_folder_cannot_be_made_logs_elsewhere_and_says_so(tmp_path):
    root = repo(tmp_path)
    (root / ".pipegen").write_text("a file where the log folder would go\n")
    result = pipegen(root, "run", "--step", "quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Logs: " in result.stdout and "cannot be written" in result.stdout and "1 passed" in result.stdout


def _read_only(root) -> list[str]:
    """A prefix that runs a command with `root` mounted read-only (a user and mount namespace)."""
    shell = f"mount --bind '{root}' '{root}' && mount -o remount,bind,ro '{root}' && exec \"$@\""
    return ["unshare", "-rm", "sh", "-c", shell, "sh"]


def test_run_in_a_read_only_checkout_never_gives_a_traceback(tmp_path):
    root = repo(tmp_path)
    if shutil.which("unshare") is None or subprocess.run([*_read_only(root), "true"]).returncode != 0:
        pytest.skip("no user namespaces here to mount the checkout read-only")
    probe = subprocess.run([*_read_only(root), "touch", str(root / "x")], capture_output=True, text=True)
    assert probe.returncode != 0 and "Read-only" in probe.stderr  # the mount is read-only indeed
    result = pipegen(root, "run", "--step", "quiet", prefix=_read_only(root))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert "cannot be written: a read-only checkout?" in result.stdout and "1 passed" in result.stdout
    logs = result.stdout.split("Logs: ")[1].split(" ")[0]
    assert not logs.startswith(str(root)) and "c" in Path(logs, "quiet.log").read_text()
    given = pipegen(root, "run", "--step", "quiet", "--log-dir", str(root / "logs"), prefix=_read_only(root))
    assert given.returncode == 2 and "--log-dir" in given.stderr and "Traceback" not in given.stderr
