"""Bounded work on hostile input: globs match in time linear in the path, reads stop at regular files of a
bounded size, a step's huge log is shown as a bounded tail."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.declarations.globs import MAX_GLOB, GlobError, compile_glob

from ..helpers import write_files

# A hang is measured in hours; a loaded 2-core machine takes seconds at most: the bound tells them apart.
GENEROUS_S = 60


def reference(pattern: str) -> re.Pattern[str] | None:
    """pathspec's backtracking regex: the semantics to keep (on short paths its cost does not matter)."""
    import pathspec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            found = pathspec.GitIgnoreSpec.from_lines([pattern]).patterns
        except (ValueError, re.error):
            return None
    return found[0].regex if found else None


GLOB_PIECES = st.sampled_from(["a", "b", ".", "x", "/", "*", "**", "?", "[ab]", "[!a]", "[a-b]", "\\*", "[]a]",
                               "/**/", "**/", " ", "\n", "!", "#", "[", "\\"])
PATH_PIECES = st.sampled_from(["a", "b", "ab", ".", "x", "/", "\n", "*", "]"])


@settings(max_examples=500, deadline=None)
@given(pattern=st.lists(GLOB_PIECES, min_size=1, max_size=9).map("".join),
       paths=st.lists(st.lists(PATH_PIECES, max_size=12).map("".join), min_size=1, max_size=8))
def test_glob_matching_agrees_with_pathspec(pattern, paths):
    expected = reference(pattern)
    try:
        matchers = [compile_glob(pattern), compile_glob(pattern, vm=True)]
    except GlobError:
        assert expected is None or "[:" in pattern, pattern  # refused exactly where pathspec refuses
        return
    assert expected is not None, pattern
    for path in paths:
        for matcher in matchers:
            assert bool(matcher.match(path)) == bool(expected.match(path)), (pattern, path, expected.pattern)


# The first two run on the committed regex, the last two (two `**`; a set matching '/') on the VM.
ADVERSARIAL = [("*a" * 14 + "*b", "src/" + "a" * 40 + ".c"), ("**a" * 14 + "**b", "src/" + "a" * 40 + ".c"),
               ("**/a/**/a/**/a/**/b", "a/" * 400 + "c"), ("*[!b]" * 20 + "b", "a/" * 200 + "a")]


@pytest.mark.parametrize("pattern, path", ADVERSARIAL)
def test_glob_matching_stays_linear(pattern, path):
    """A backtracking regex takes hours on these; a path 10x longer costs about 10x, not 10^k."""
    for matcher in (compile_glob(pattern), compile_glob(pattern, vm=True)):
        start = time.process_time()
        assert not matcher.match(path) and not matcher.match(path * 10)
        assert time.process_time() - start < GENEROUS_S


def test_a_glob_longer_than_the_bound_is_refused():
    with pytest.raises(GlobError, match=f"longer than {MAX_GLOB}"):
        compile_glob("*a" * MAX_GLOB)


def test_select_with_a_hostile_glob_finishes(tmp_path):
    """The real CLI, as a subprocess: the trial's `select` was killed after 120 s."""
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [s.yaml]\n",
                           "s.yaml": "steps:\n- label: A\n  commands: [x]\n  source_file_dependencies:\n"
                                     f"  - '{'*a' * 14}*b'\n  - '{'**a' * 14}**b'\n"})
    done = subprocess.run([sys.executable, "-m", "pipegen", "select", "--root", str(tmp_path), "--files-from", "-"],
                          input="src/" + "a" * 40 + ".c\n", capture_output=True, text=True, timeout=GENEROUS_S)
    assert done.returncode == 0, done.stderr
    assert "0 of 1" in done.stdout or "skip" in done.stdout.lower(), done.stdout


def steps_folder(root):
    write_files(root, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                       ".buildkite/steps/a.yaml": "steps:\n- {label: A, commands: [x]}\n"})
    return root / ".buildkite" / "steps"


def pipegen(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipegen", *args], input=stdin, capture_output=True, text=True,
                          timeout=GENEROUS_S)


def test_a_fifo_in_the_steps_folder_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(steps_folder(tmp_path) / "b.yaml")
    done = pipegen("select", "--root", str(tmp_path), "--files-from", "-", stdin="x\n")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert ".buildkite/steps/b.yaml: cannot read the file: not a regular file: a FIFO" in done.stderr


def test_a_steps_file_linked_to_dev_zero_is_refused(tmp_path):
    (steps_folder(tmp_path) / "z.yaml").symlink_to("/dev/zero")
    done = pipegen("select", "--root", str(tmp_path), "--files-from", "-", stdin="x\n")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert ".buildkite/steps/z.yaml: cannot read the file: not a regular file: a character device" in done.stderr


def test_import_of_dev_zero_is_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pipegen", "import", "/dev/zero", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=GENEROUS_S, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "/dev/zero: cannot read the file: not a regular file: a character device" in done.stderr


def test_a_file_over_the_bound_is_refused(tmp_path):
    from pipegen.bounded_read import Refused, read_bytes

    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 1001)
    assert read_bytes(str(big), 1001) == b"#" * 1001
    with pytest.raises(Refused, match="larger than"):
        read_bytes(str(big), 1000)


@pytest.mark.parametrize("reported", [0, 10, 1000, 1001])
def test_a_file_that_grew_since_its_size_was_read_is_read_whole_within_the_bound(tmp_path, monkeypatch, reported):
    """read_bytes sizes its buffer by fstat: a file larger by the time it is read is read on, to the bound."""
    import pipegen.bounded_read as bounded

    grown = tmp_path / "grown.yaml"
    grown.write_bytes(b"#" * 1001)
    real = os.fstat
    monkeypatch.setattr(bounded.os, "fstat", lambda fd: os.stat_result((*real(fd)[:6], reported, *real(fd)[7:10])))
    assert bounded.read_bytes(str(grown), 1001) == b"#" * 1001
    with pytest.raises(bounded.Refused, match="larger than"):
        bounded.read_bytes(str(grown), 1000)


def test_files_from_dev_zero_is_refused(tmp_path):
    steps_folder(tmp_path)
    done = pipegen("select", "--root", str(tmp_path), "--files-from", "/dev/zero")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "cannot read --files-from /dev/zero: larger than 256 MiB" in done.stderr


RUN_REPO = {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\nhardware: .buildkite/hardware.yaml\n",
            ".buildkite/hardware.yaml": "default: cpu\nfamilies: {cpu: {vendor: cpu, queue: q, template: plain}}\n"
                                        "templates: {plain: {kind: plain}}\n",
            ".buildkite/steps.yaml": "steps:\n"
                                     "- {label: Loud, key: loud, commands: ['head -c 300000000 /dev/zero | tr "
                                     "\"\\\\0\" a; seq 1 2000; exit 4']}\n"
                                     "- {label: Quiet, key: quiet, commands: ['echo quiet']}\n"}


def run_repo(tmp_path):
    from ..helpers import git_repo

    return git_repo(tmp_path / "r", RUN_REPO)


def test_a_failing_step_that_prints_hundreds_of_mb_shows_a_bounded_tail(tmp_path):
    """The log streams to its file; what is printed is its tail, read without loading the log (here: within a
    memory cap the 300 MB log alone would break, decoded as the old code did)."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (400 * 1024 * 1024,) * 2)

    root = run_repo(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pipegen", "run", "--root", str(root), "--hardware", "cpu",
                           "--step", "loud", "--log-dir", str(tmp_path / "logs")], capture_output=True, text=True,
                          timeout=GENEROUS_S * 3, preexec_fn=cap)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert (tmp_path / "logs" / "loud.log").stat().st_size > 300_000_000
    assert len(done.stdout) < 300_000 and "earlier bytes not shown" in done.stdout
    assert "1999\n2000\n----- end of" in done.stdout


def test_a_link_planted_at_a_log_is_not_followed(tmp_path):
    root = run_repo(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "quiet.log").symlink_to(victim)
    done = subprocess.run([sys.executable, "-m", "pipegen", "run", "--root", str(root), "--hardware", "cpu",
                           "--step", "quiet", "--log-dir", str(tmp_path / "logs")], capture_output=True, text=True,
                          timeout=GENEROUS_S)
    assert victim.read_text() == "keep me\n"
    assert done.returncode == 1 and "cannot write its log" in done.stdout, done.stdout + done.stderr


def test_logs_of_a_read_only_checkout_go_to_a_new_private_folder(tmp_path, monkeypatch):
    """Not a predictable $TMPDIR/pipegen-logs-<hash> another user could create first or plant links in."""
    import os

    from pipegen.commands import run as run_command
    from pipegen.commands.options import RunOptions

    monkeypatch.setattr(run_command, "_blocked_at", lambda folder: folder)  # the checkout cannot be written
    first, second = (run_command.log_folder(RunOptions(), str(tmp_path))[0].log_dir for _ in range(2))
    assert first and second and first != second
    for folder in (first, second):
        assert os.stat(folder).st_mode & 0o777 == 0o700 and not os.listdir(folder)
        os.rmdir(folder)


def test_tracked_files_are_read_within_the_bound(tmp_path):
    """check and derived entries read tracked files: a tracked link to /dev/zero or a FIFO reads as nothing
    (no hang, no memory blow-up), a regular file as open() reads it."""
    from pipegen.graph.scan_cache import read_tracked

    (tmp_path / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "a.py").write_bytes(b"import os\r\nimport sys\r")
    tracked = {"zero.py", "fifo.py", "a.py"}
    assert read_tracked(str(tmp_path), "zero.py", tracked) is None
    assert read_tracked(str(tmp_path), "fifo.py", tracked) is None
    assert read_tracked(str(tmp_path), "a.py", tracked) == "import os\nimport sys\n"
    assert read_tracked(str(tmp_path), "a.py", set()) is None


def test_a_log_that_is_one_long_line_shows_its_tail(tmp_path):
    from pipegen.run.process import TAIL_BYTES, read_log

    log = tmp_path / "one.log"
    log.write_bytes(b"x" * (TAIL_BYTES + 10) + b"\xff")
    text = read_log(str(log), lines=5)
    assert text.startswith("[11 earlier bytes not shown") and text.count("x") == TAIL_BYTES - 1


def test_a_fifo_or_hard_link_planted_at_a_log_is_replaced_not_used(tmp_path):
    import os

    from pipegen.run.process import _open_log

    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    os.link(victim, tmp_path / "hard.log")
    os.mkfifo(tmp_path / "fifo.log")
    for name in ("hard.log", "fifo.log"):
        with _open_log(str(tmp_path / name)) as f:  # a FIFO would block this open forever
            f.write(b"log\n")
        assert (tmp_path / name).read_bytes() == b"log\n"
    assert victim.read_text() == "keep me\n"


def test_a_glob_with_two_double_stars_skips_paths_without_its_literals():
    """The VM (two `**`) first asks whether each literal run of the glob is in the path: 20,000 paths of a
    real tree took 2.2 s of CPU on the idle machine, most of them not holding 'models' at all."""
    from tests.helpers import FIXTURE

    files = (FIXTURE / "tracked-files.txt").read_text().splitlines()
    paths = (files * (20_000 // len(files) + 1))[:20_000]
    matcher = compile_glob("**/models/**/test_*.py")
    start = time.process_time()
    matched = sum(bool(matcher.match(path)) for path in paths)
    assert time.process_time() - start < 1.0
    assert matched == sum(bool(reference("**/models/**/test_*.py").match(path)) for path in paths) > 0
