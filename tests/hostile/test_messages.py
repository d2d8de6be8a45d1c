"""Each hostile input of issue 27's section 5 gives one message and its documented exit code, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ..helpers import write_files


def pipegen(*args: str, stdin: str = "", cwd=None) -> subprocess.CompletedProcess[str]:
    """The real command, as a subprocess: warnings and tracebacks reach stderr as a user sees them."""
    return subprocess.run([sys.executable, "-m", "pipegen", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def assert_message(done: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr


def steps_repo(root, entry: str):
    write_files(root, {".buildkite/pipegen.yaml": "steps: [s.yaml]\n",
                       "s.yaml": f"steps:\n- label: A\n  commands: [x]\n  source_file_dependencies: ['{entry}']\n"})
    return root


@pytest.mark.parametrize("entry, why", [("src/[z-a].py", "bad character range z-a"),
                                        ("[[:alpha:]]", "POSIX class [:alpha:]")])
def test_a_glob_python_cannot_read(tmp_path, entry, why):
    done = pipegen("select", "--root", str(steps_repo(tmp_path, entry)), "--files-from", "-", stdin="src/a.py\n")
    assert_message(done, 2, "s.yaml:4:", f"invalid glob '{entry}'", why, "fix:")
