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
    for needle in needles:  # check reports a declaration error as its finding, on stdout
        assert needle in done.stderr + done.stdout, done.stderr + done.stdout


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


@pytest.mark.parametrize("field, where, what", [
    ('commands: ["echo \\0 x"]', "s.yaml:4:14", "a NUL character in 'echo \\x00 x'"),
    ('commands: [x]\n  env: {A: "a\\0b"}', "s.yaml:5:9", "a NUL character in 'a\\x00b'"),
    ('commands: [x]\n  env: {"A=B": x}', "s.yaml:5:9", "environment variable name 'A=B' is empty or holds '='"),
    ("commands: [x]\n  env: {1: one, true: yes}", "s.yaml:5:17", "keys 1 and True are one key once read"),
])
@pytest.mark.parametrize("command", [["select"], ["render"], ["check"], ["run", "--hardware", "cpu"]])
def test_what_no_process_can_take_is_refused_at_load(tmp_path, field, where, what, command):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [s.yaml]\n",
                           "s.yaml": f"steps:\n- label: A\n  key: a\n  {field}\n"})
    listing = ["--tracked-files", "-"] if command == ["check"] else ["--files-from", "-"]
    done = pipegen(*command, "--root", str(tmp_path), *listing, stdin="x\n")
    assert_message(done, 2, f"{where}: ", what, "fix:")


def git_repo_with_steps(root, steps: str):
    from ..helpers import git_repo

    return git_repo(root, {".buildkite/pipegen.yaml": "steps: [s.yaml]\n", "s.yaml": steps})


STEP = "steps:\n- {label: A, key: a, commands: [x], source_file_dependencies: [src/]}\n"


@pytest.mark.parametrize("command", [["select"], ["check", "--tracked-files", "-"], ["render"], ["why", "src/a"]])
def test_output_that_cannot_be_written_has_its_own_exit_code(tmp_path, command):
    root = git_repo_with_steps(tmp_path / "r", STEP)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "pipegen", *command, "--root", str(root)], stdout=full,
                              stderr=subprocess.PIPE, text=True, input="s.yaml\n", timeout=120)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert "cannot write the output: No space left on device" in done.stderr
    closed = subprocess.run(f"'{sys.executable}' -m pipegen select --root '{root}' >&-", shell=True,
                            capture_output=True, text=True, timeout=120)
    assert closed.returncode == 3 and "standard output is closed" in closed.stderr, closed.stderr


def test_file_names_that_forge_output_are_escaped(tmp_path):
    root = git_repo_with_steps(tmp_path / "r", STEP)
    path = "src/a\u202egpj.py\nRun (1):"
    listed = tmp_path / "list"
    listed.write_bytes(path.encode() + b"\0")
    done = pipegen("select", "--root", str(root), "--files-from", str(listed))
    assert done.returncode == 0, done.stderr
    assert "src/a\\u202egpj.py\\nRun (1): matches 'src/'" in done.stdout and "\u202e" not in done.stdout
    why = pipegen("why", "--root", str(root), path)
    assert why.stdout.startswith("src/a\\u202egpj.py\\nRun (1)::\n") and "\u202e" not in why.stdout
    note = tmp_path / "note.md"
    render = pipegen("render", "--root", str(root), "--files-from", str(listed), "--annotation", str(note))
    assert render.returncode == 0 and "\u202e" not in note.read_text() and "\\u202e" in note.read_text()


def test_a_huge_path_is_echoed_cut(tmp_path):
    root = git_repo_with_steps(tmp_path / "r", STEP)
    done = pipegen("select", "--root", str(root), "--files-from", "-", stdin="x/" + "a" * 3_000_000 + "\n")
    assert done.returncode == 0 and "(3,000,002 characters)" in done.stderr, done.stderr[:500]
    assert len(done.stdout) + len(done.stderr) < 5_000


def test_a_corrupt_head_commit_is_named_not_taken_for_a_new_repository(tmp_path):
    from ..helpers import git

    root = git_repo_with_steps(tmp_path / "r", STEP)
    git(root, "checkout", "-q", "-b", "feature")
    (root / ".git" / "refs" / "heads" / "feature").write_text("12345678" * 5 + "\n")
    done = pipegen("select", "--root", str(root))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "HEAD names commit 123456781234, which git cannot read" in done.stderr
    assert "no commit yet" not in done.stderr + done.stdout


def test_over_500_jobs_the_left_out_steps_are_said_on_stderr(tmp_path):
    steps = "steps:\n" + "".join(f"- {{label: s{i}, key: s{i}, commands: [x], source_file_dependencies: [d{i}/]}}\n"
                                 for i in range(300))
    root = git_repo_with_steps(tmp_path / "r", steps)
    done = pipegen("render", "--root", str(root), "--files-from", "-", stdin="d1/x\n")
    assert done.returncode == 0, done.stderr
    assert "WARNING: more than 500 jobs: 299 unselected steps were left out of the upload" in done.stderr
