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


def config_repo(root):
    write_files(root, {"s.yaml": "steps:\n- {label: A, commands: [x]}\n"})
    (root / ".git").mkdir()
    return root / ".buildkite" / "pipegen.yaml"


@pytest.mark.parametrize("make, what", [(lambda p: p.mkdir(), "a folder"),
                                        (lambda p: p.symlink_to(p.name), "a link that cannot be followed"),
                                        (lambda p: p.symlink_to("/dev/null"), "a character device")])
def test_a_config_that_is_no_file_says_what_it_is(tmp_path, make, what):
    config = config_repo(tmp_path)
    config.parent.mkdir(parents=True)
    make(config)
    done = pipegen("select", "--files-from", "-", cwd=tmp_path)
    assert_message(done, 2, f".buildkite/pipegen.yaml is {what}", "not a file")
    assert "no CI configuration found" not in done.stderr


@pytest.mark.parametrize("text, where, what", [
    (b"steps:\n- {label: \"caf\xe9\", commands: [x]}\n", "s.yaml:2:15", "not UTF-8: the byte 0xe9"),
    (b"steps:\n- {label: \"ca\x07\", commands: [x]}\n", "s.yaml:2:14", "a control character YAML does not allow"),
])
def test_a_bad_character_is_named_by_line_and_column(tmp_path, text, where, what):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [s.yaml]\n"})
    (tmp_path / "s.yaml").write_bytes(text)
    done = pipegen("select", "--root", str(tmp_path), "--files-from", "-", stdin="x\n")
    assert_message(done, 2, f"{where}: {what}", "fix:")
