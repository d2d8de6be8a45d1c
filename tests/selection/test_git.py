"""Changes from real git repositories made in tmp_path, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import commit_files, git, git_repo

STEPS = """\
steps:
- label: Watched
  key: watched
  commands: [pytest watched]
  source_file_dependencies: [watched/]
- label: Other
  key: other
  commands: [pytest other]
  source_file_dependencies: [other/]
"""


@pytest.fixture
def repo(tmp_path):
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                                        ".buildkite/steps.yaml": STEPS, "watched/a.py": "a\n", "watched/b.py": "b\n",
                                        "other/c.py": "c\n"})
    git(root, "checkout", "-q", "-b", "feature")
    return root


def select(root, *args, env=None):
    result = CliRunner().invoke(cli, ["select", "--root", str(root), "--format", "json", *args],
                                env=env)
    data = json.loads(result.stdout) if result.exit_code == 0 else None
    return result, data


def actions(data):
    return {s["key"]: s["action"] for s in data["steps"]}


def test_rename_out_of_watched_folder_counts_both_paths(repo):
    git(repo, "mv", "watched/a.py", "other/a.py")
    git(repo, "commit", "-q", "-m", "move")
    _, data = select(repo, "--base", "main")
    assert set(data["changed_files"]) == {"watched/a.py", "other/a.py"}
    assert actions(data) == {"watched": "run", "other": "run"}
    assert data["merge_base"] == git(repo, "rev-parse", "main").strip()


def test_deletion_counts(repo):
    git(repo, "rm", "-q", "watched/b.py")
    git(repo, "commit", "-q", "-m", "delete")
    _, data = select(repo, "--base", "main")
    assert data["changed_files"] == ["watched/b.py"] and actions(data)["watched"] == "run"


def test_odd_file_names_survive(repo):
    names = ["watched/with space.py", "watched/ünïcode.py", "watched/new\nline.py", 'watched/"quoted".py']
    commit_files(repo, dict.fromkeys(names, "x\n"))
    _, data = select(repo, "--base", "main")
    assert sorted(data["changed_files"]) == sorted(names)


def test_uncommitted_work_counts_outside_ci_only(repo):
    commit_files(repo, {"other/committed.py": "c\n"})
    (repo / "watched" / "a.py").write_text("unstaged\n")
    (repo / "other" / "new.py").write_text("untracked\n")
    (repo / "ignored.log").write_text("x")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    _, local = select(repo, "--base", "main")
    assert set(local["changed_files"]) == {"other/committed.py", "watched/a.py", "other/new.py", ".gitignore"}
    _, committed = select(repo, "--base", "main", "--committed-only")
    assert committed["changed_files"] == ["other/committed.py"]
    _, ci = select(repo, "--base", "main", env={"CI": "true"})
    assert ci["changed_files"] == ["other/committed.py"]


def test_work_on_the_base_branch_itself_is_the_uncommitted_change(repo):
    git(repo, "checkout", "-q", "main")
    (repo / "other" / "c.py").write_text("edited\n")
    _, data = select(repo)
    assert data["changed_files"] == ["other/c.py"] and actions(data) == {"watched": "block", "other": "run"}


def test_git_variables_of_a_hook_do_not_redirect_the_diff(repo, tmp_path):
    """Inside a git hook GIT_INDEX_FILE (and maybe GIT_WORK_TREE) point elsewhere: ignored."""
    commit_files(repo, {"watched/new.py": "n\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "only_here.py").write_text("")
    for env in ({"GIT_WORK_TREE": str(elsewhere)}, {"GIT_INDEX_FILE": str(tmp_path / "missing-index")}):
        result, data = select(repo, "--base", "main", env=env)
        assert result.exit_code == 0 and data["changed_files"] == ["watched/new.py"], (env, result.output)


def test_files_from_bypasses_git(tmp_path, repo):
    listing = tmp_path / "files"
    listing.write_bytes(b"other/x.py\0watched/odd\nname.py\0")
    result, data = select(repo, "--files-from", str(listing))
    assert data["changed_files"] == ["other/x.py", "watched/odd\nname.py"]
    assert actions(data) == {"watched": "run", "other": "run"}
    result = CliRunner().invoke(cli, ["select", "--root", str(repo), "--files-from", "-"], input="other/y.py\n")
    assert "other " in result.stdout and result.exit_code == 0


def test_not_a_repository_is_a_usage_error(tmp_path, repo):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".buildkite").mkdir()
    for name in ("pipegen.yaml", "steps.yaml"):
        (plain / ".buildkite" / name).write_text((repo / ".buildkite" / name).read_text())
    result, _ = select(plain)
    assert result.exit_code == 2 and "not a git repository" in result.output and "--files-from" in result.output


def test_no_git_on_path_says_so(repo, tmp_path):
    result = CliRunner().invoke(cli, ["select", "--root", str(repo)], env={"PATH": str(tmp_path)})
    assert result.exit_code == 2 and "git is not installed" in result.stderr and "--files-from" in result.stderr
    assert "not a git repository" not in result.stderr
    from pipegen.errors import UsageError
    from pipegen.git import Git

    with pytest.raises(UsageError, match="not a git repository"):  # a folder that is gone is no missing git
        Git(str(tmp_path / "gone"), {"PATH": os.environ["PATH"]})


def test_an_explicit_base_that_does_not_resolve_is_a_usage_error(repo):
    for args, env in ((["--base", "no-such-branch"], None), ([], {"PIPEGEN_BASE": "no-such-branch"})):
        result, _ = select(repo, *args, env=env)
        assert result.exit_code == 2 and "base ref 'no-such-branch' does not resolve" in result.stderr
        assert "Traceback" not in result.output


def test_bases_from_ci_that_do_not_resolve_select_everything_loudly(repo):
    env = {"BUILDKITE_PIPELINE_DEFAULT_BRANCH": "nope"}
    git(repo, "branch", "-q", "-m", "main", "trunk")  # base_branch 'main' no longer resolves either
    result, data = select(repo, env=env)
    assert result.exit_code == 0
    assert data["run_all"] and "no base ref resolves" in data["run_all_reason"]
    assert set(actions(data).values()) == {"run"}
    assert "WARNING" in result.stderr
    strict, _ = select(repo, "--strict-diff", env=env)
    assert strict.exit_code == 1 and "cannot be trusted" in strict.output


def test_a_diff_base_the_ci_names_is_never_replaced_by_another(repo):
    """$BUILDKITE_GIT_DIFF_BASE not fetched: everything runs, loudly; not a quiet diff against main."""
    commit_files(repo, {"other/x.py": "x\n"})
    result, data = select(repo, env={"CI": "1", "BUILDKITE_GIT_DIFF_BASE": "0" * 40})
    assert data["run_all"] and f"diff base '{'0' * 40}' that the CI environment names" in data["run_all_reason"]
    assert "WARNING" in result.stderr and set(actions(data).values()) == {"run"}


@pytest.mark.parametrize("value", ["false", "0", "no", ""])
def test_a_false_ci_variable_is_not_ci(repo, value):
    commit_files(repo, {"other/committed.py": "c\n"})
    (repo / "watched" / "a.py").write_text("unstaged\n")
    _, data = select(repo, "--base", "main", env={"CI": value, "BUILDKITE": value})
    assert set(data["changed_files"]) == {"other/committed.py", "watched/a.py"}
    _, ci = select(repo, "--base", "main", env={"CI": "True"})
    assert ci["changed_files"] == ["other/committed.py"]


@pytest.fixture
def origin(repo):
    """`repo` as a remote with main moved on and a feature branch that touched other/."""
    git(repo, "checkout", "-q", "main")
    for i in range(3):
        commit_files(repo, {f"docs/n{i}.txt": "x\n"}, f"main {i}")
    git(repo, "checkout", "-q", "feature")
    commit_files(repo, {"other/feature.py": "f\n"})
    git(repo, "branch", "-q", "release", "main~3")
    return repo


def test_shallow_clone_without_merge_base_selects_everything(tmp_path, origin):
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", "--branch", "feature",
        f"file://{origin}", str(clone))
    result, data = select(clone, env={"CI": "1"})
    assert result.exit_code == 0 and data["run_all"]
    assert "shallow clone" in data["run_all_reason"] and "WARNING" in result.stderr
    assert set(actions(data).values()) == {"run"}
    result, data = select(clone, "--fetch-base", env={"CI": "1"})
    assert not data["run_all"] and data["changed_files"] == ["other/feature.py"]


def test_pull_request_into_a_release_branch(tmp_path, origin):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(clone))
    git(clone, "checkout", "-q", "feature")
    pr = {"CI": "1", "BUILDKITE_PULL_REQUEST": "12", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "release"}
    _, data = select(clone, env=pr)
    assert data["base"] == "origin/release"
    assert data["merge_base"] == git(clone, "rev-parse", "origin/release").strip()
    assert data["changed_files"] == ["other/feature.py"]
    _, default = select(clone, env={"CI": "1"})
    assert default["base"] == "origin/main"


def test_push_to_main_diffs_the_last_commit(tmp_path, origin):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "main", f"file://{origin}", str(clone))
    commit_files(clone, {"watched/pushed.py": "p\n"})
    git(clone, "push", "-q", "origin", "HEAD:main")
    git(clone, "fetch", "-q")
    _, data = select(clone, env={"CI": "1", "BUILDKITE_PIPELINE_DEFAULT_BRANCH": "main"})
    assert data["changed_files"] == ["watched/pushed.py"]
    assert actions(data) == {"watched": "run", "other": "block"}


def test_a_build_of_main_after_main_moved_on_diffs_its_own_last_commit(tmp_path, origin):
    """HEAD behind origin/main (the agent fetched later pushes): not an empty change, HEAD's own commit."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "main", f"file://{origin}", str(clone))
    commit_files(clone, {"watched/pushed.py": "p\n"})
    commit_files(clone, {"other/later.py": "l\n"})
    git(clone, "push", "-q", "origin", "HEAD:main")
    git(clone, "fetch", "-q")
    git(clone, "checkout", "-q", "--detach", "HEAD~1")
    _, data = select(clone, env={"CI": "1"})
    assert data["changed_files"] == ["watched/pushed.py"]
    assert data["merge_base"] == git(clone, "rev-parse", "HEAD~1").strip()
    assert actions(data) == {"watched": "run", "other": "block"}


def test_subprocess_select(repo):
    commit_files(repo, {"other/z.py": "z\n"})
    proc = subprocess.run([sys.executable, "-m", "pipegen", "select", "--base", "main"], cwd=repo,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "1 run, 1 block, 0 skip" in proc.stdout and "other/z.py matches 'other/'" in proc.stdout


def test_shallow_push_to_main_without_the_parent_selects_everything(tmp_path, origin):
    clone = tmp_path / "shallow-main"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "main", f"file://{origin}", str(clone))
    result, data = select(clone, env={"CI": "1"})
    assert data["run_all"] and "parent of HEAD" in data["run_all_reason"] and "WARNING" in result.stderr
    # --fetch-base deepens the clone by the one commit the diff needs.
    result, data = select(clone, "--fetch-base", env={"CI": "1"})
    assert result.exit_code == 0 and not data["run_all"], result.output
    assert data["changed_files"] == ["docs/n2.txt"]


def test_an_unfetched_pull_request_base_selects_everything_or_is_fetched(tmp_path, origin):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--single-branch", "--branch", "feature", f"file://{origin}", str(clone))
    pr = {"CI": "1", "BUILDKITE_PULL_REQUEST": "12", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "release"}
    git(clone, "fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")  # main is there, release not
    result, data = select(clone, env=pr)
    assert result.exit_code == 0 and data["run_all"] and data["base"] == "origin/release"
    assert "base branch 'release' is not fetched" in data["run_all_reason"]
    assert "WARNING" in result.stderr and "'release'" in result.stderr
    result, data = select(clone, "--fetch-base", env=pr)
    assert result.exit_code == 0 and not data["run_all"], result.output
    assert data["base"] == "origin/release" and data["changed_files"] == ["other/feature.py"]


def test_unrelated_histories_select_everything(repo):
    git(repo, "checkout", "-q", "--orphan", "unrelated")
    commit_files(repo, {"watched/x.py": "x\n"}, "orphan")
    result, data = select(repo, "--base", "main", "--committed-only")
    assert data["run_all"] and "unrelated histories" in data["run_all_reason"]


def test_base_candidates_follow_buildkite_order():
    from pipegen.selection.changes import base_candidates

    env = {"BUILDKITE_GIT_DIFF_BASE": "abc123", "BUILDKITE_PULL_REQUEST": "7",
           "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "release", "BUILDKITE_PIPELINE_DEFAULT_BRANCH": "trunk"}
    assert base_candidates(None, "main", env) == [("abc123", "given"), ("origin/release", "required"),
                                                  ("origin/trunk", "fallback"), ("origin/main", "fallback"),
                                                  ("main", "fallback")]
    # Not a pull request: its base branch is ignored; an explicit base wins over everything.
    assert "origin/release" not in dict(base_candidates(None, "main", {**env, "BUILDKITE_PULL_REQUEST": "false"}))
    assert base_candidates("v1", "main", {**env, "PIPEGEN_BASE": "v0"}) == [("v1", "explicit")]
    assert base_candidates(None, "main", {"PIPEGEN_BASE": "v0"}) == [("v0", "explicit")]
    # A preset's merge-base variable comes first, except on a build of the base branch.
    vllm = {**env, "MERGE_BASE_COMMIT": "def456", "BUILDKITE_BRANCH": "feature"}
    assert base_candidates(None, "main", vllm, ("MERGE_BASE_COMMIT",))[:2] == [("def456", "given"),
                                                                           ("abc123", "given")]
    on_main = {**vllm, "BUILDKITE_BRANCH": "main"}
    assert "def456" not in dict(base_candidates(None, "main", on_main, ("MERGE_BASE_COMMIT",)))
    assert "def456" not in dict(base_candidates(None, "main", vllm))
    # A pull request into the default branch, which is also base_branch: each ref is tried once.
    same = {**env, "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main", "BUILDKITE_PIPELINE_DEFAULT_BRANCH": "main"}
    assert base_candidates(None, "main", same) == [("abc123", "given"), ("origin/main", "required"),
                                                   ("main", "fallback")]


def test_vllm_merge_base_commit_is_the_base_as_for_its_generator(tmp_path):
    """vLLM's generator diffs against $MERGE_BASE_COMMIT when it is set (not on main: HEAD~1)."""
    steps = ("steps:\n- label: Watched\n  key: watched\n  commands: [pytest]\n"
             "  source_file_dependencies: [watched/]\n")
    root = git_repo(tmp_path / "vllm", {".buildkite/ci_config.yaml": "name: vllm_ci\njob_dirs: [.buildkite/jobs]\n",
                                        ".buildkite/jobs/a.yaml": steps, "watched/a.py": "a\n"})
    first = git(root, "rev-parse", "HEAD").strip()
    commit_files(root, {"watched/a.py": "a2\n"}, "watched")
    commit_files(root, {"other.py": "o\n"}, "other")  # main is HEAD: alone it would diff HEAD~1
    env = {"CI": "1", "MERGE_BASE_COMMIT": first, "BUILDKITE_BRANCH": "feature"}
    _, data = select(root, env=env)
    assert (data["base"], data["merge_base"]) == (first, first)
    assert data["changed_files"] == ["other.py", "watched/a.py"] and actions(data) == {"watched": "run"}
    _, on_main = select(root, env={**env, "BUILDKITE_BRANCH": "main"})
    assert on_main["changed_files"] == ["other.py"]
    _, without = select(root, env={"CI": "1", "BUILDKITE_BRANCH": "feature"})
    assert without["changed_files"] == ["other.py"]
