"""check's whole report is kept (commands/check_cache.py): a repeated check prints it again without checking,
and any change to what it was read from (a source, a steps file, a new steps file, an option, the
environment) checks again, with the output of a run without the cache."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import pipegen.check.checker
from pipegen.cli import cli
from tests.check.test_check_output import uncovered_repo


def run(root: Path, cache: Path | str, *args: str, env: dict[str, str | None] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", "--root", str(root), *args],
                                env={"PIPEGEN_CONFIG": None, "GIT_DIR": None, "PIPEGEN_CACHE_DIR": str(cache),
                                     **(env or {})})
    return result.exit_code, result.output


def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs that really checked."""
    calls: list[int] = []
    original = pipegen.check.checker.check

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(pipegen.check.checker, "check", counting)
    return calls


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return uncovered_repo(tmp_path)


def test_a_repeated_check_prints_the_kept_report_without_checking(repo, tmp_path, monkeypatch):
    calls = checked(monkeypatch)
    cache = tmp_path / "cache"
    first = run(repo, cache)
    assert first == run(repo, "") and first[1].count("import-not-covered") >= 2
    before = len(calls)
    assert run(repo, cache) == first
    assert len(calls) == before  # kept: not checked again
    expected = run(repo, "", "--format", "json")
    before = len(calls)
    assert run(repo, cache, "--format", "json") == expected  # another entry
    assert len(calls) == before + 1
    assert len(list((cache / "check").iterdir())) == 2


def test_git_reads_the_index_once_for_the_kept_report_and_the_scans(repo, tmp_path, monkeypatch):
    """The kept report's state and the import scans read one `ls-files` and one `diff-files` (git ran each
    twice: on vLLM, diff-files alone is tens of milliseconds), with and without the cache."""
    import pipegen.git

    ran: list[str] = []
    original = pipegen.git.Git._run

    def recording(self, cwd, args, fix=""):  # type: ignore[no-untyped-def]
        ran.append(args[0])
        return original(self, cwd, args, fix)

    monkeypatch.setattr(pipegen.git.Git, "_run", recording)
    for cache in (tmp_path / "cache", ""):
        ran.clear()
        assert "import-not-covered" in run(repo, cache)[1]
        assert sorted(ran) == ["diff-files", "ls-files", "rev-parse"], cache


def test_git_reads_the_index_while_check_loads_the_declarations(repo, tmp_path, monkeypatch):
    """With no report kept, check takes git's index when the import scans need it: git's commands run on a
    thread while the declarations load (a check that waited for git first would wait here 5 s, alone)."""
    import threading

    import pipegen.dialects.load
    import pipegen.git

    loaded, order = threading.Event(), []
    real_read, real_load = pipegen.git.read_index, pipegen.dialects.load.load_documents

    def read(*args):  # type: ignore[no-untyped-def]
        order.append("git started")
        order.append("declarations loaded meanwhile" if loaded.wait(5) else "git alone")
        return real_read(*args)

    def load(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = real_load(*args, **kwargs)
        loaded.set()
        return found

    monkeypatch.setattr(pipegen.git, "read_index", read)
    monkeypatch.setattr(pipegen.dialects.load, "load_documents", load)
    assert "import-not-covered" in run(repo, tmp_path / "cache")[1]
    assert order == ["git started", "declarations loaded meanwhile"]


def test_a_source_edited_while_check_runs_is_checked_next_time(repo, tmp_path, monkeypatch):
    """The tree's state is taken with git's index, before check reads the sources: an edited file saved again
    while check runs (an editor) is checked next time, not kept under its new text with the old report."""
    source = repo / "tests" / "test_core.py"
    source.write_text("import mypkg.m00\n")  # edited: its content is in the state
    original = pipegen.check.checker.check

    def saving(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = original(*args, **kwargs)
        source.write_text("import mypkg.m01\n")
        return found

    monkeypatch.setattr(pipegen.check.checker, "check", saving)
    cache = tmp_path / "cache"
    during = run(repo, cache)
    assert "mypkg/m00.py" in during[1]
    assert run(repo, cache) == run(repo, "") != during


@pytest.mark.parametrize("change", ["edit a source", "stage the edit", "edit the steps file", "add a steps file",
                                    "delete a source", "environment", "commit a new source"])
def test_any_change_checks_again(repo, tmp_path, change):
    cache = tmp_path / "cache"
    buildkite = repo / ".buildkite"
    steps = buildkite / "steps.yaml"
    env: dict[str, str | None] = {}
    if change == "add a steps file":  # a steps folder
        (buildkite / "steps").mkdir()
        steps.rename(buildkite / "steps" / "a.yaml")
        (buildkite / "pipegen.yaml").write_text("steps: [.buildkite/steps/]\n")
    elif change == "environment":
        (buildkite / "other.yaml").write_text("steps: [.buildkite/other-steps.yaml]\n")
        (buildkite / "other-steps.yaml").write_text(steps.read_text().replace("mypkg/__init__.py", "mypkg/"))
    before = run(repo, cache)
    if change in ("edit a source", "stage the edit"):
        (repo / "tests" / "test_core.py").write_text("import mypkg.m00\n")
        if change == "stage the edit":
            subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    elif change == "edit the steps file":
        steps.write_text(steps.read_text().replace("mypkg/__init__.py", "mypkg/"))
    elif change == "add a steps file":  # untracked: read from the steps folder all the same
        (buildkite / "steps" / "b.yaml").write_text(
            "steps:\n- label: B\n  key: b\n  commands: [pytest tests/test_gone.py]\n  source_file_dependencies: [x/]\n")
    elif change == "delete a source":
        (repo / "tests" / "test_core.py").unlink()
    elif change == "environment":
        env = {"PIPEGEN_CONFIG": ".buildkite/other.yaml"}
    else:
        (repo / "mypkg" / "deep" / "d9.py").write_text("Z = 9\n")
        (repo / "tests" / "test_core.py").write_text("from mypkg.deep import d9\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(["git", "commit", "-qm", "d9"], cwd=repo, check=True)
    again = run(repo, cache, env=env)
    assert again == run(repo, "", env=env) != before
    assert again == run(repo, cache, env=env)


def test_tracked_files_lists_are_not_kept(repo, tmp_path):
    cache = tmp_path / "cache"
    listed = tmp_path / "files.txt"
    listed.write_text(subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout)
    assert run(repo, cache, "--tracked-files", str(listed)) == run(repo, "", "--tracked-files", str(listed))
    assert not (cache / "check").exists() or not list((cache / "check").iterdir())
