"""Parsing one `git log -z --name-status` output into commits (audit/history.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipegen.audit.history import Commit, parse_log
from tests.helpers import commit_files, git, git_repo

PATH = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1, max_size=12)
COMMIT = st.builds(lambda sha, subject, files: Commit(sha, subject, tuple(dict.fromkeys(files))),
                   st.text("0123456789abcdef", min_size=40, max_size=40),
                   st.text(st.characters(blacklist_characters="\0\n", blacklist_categories=("Cs",)), max_size=20),
                   st.lists(PATH, max_size=5))


def as_git_writes_it(commits: list[Commit]) -> str:
    """`--format=%x01%H%x00%s -z --name-status`: header, NUL, newline, then status NUL path NUL ..."""
    out = ""
    for commit in commits:
        out += f"\x01{commit.sha}\0{commit.subject}\0"
        if commit.files:
            out += "\n" + "".join(f"{'AMD'[i % 3]}\0{path}\0" for i, path in enumerate(commit.files))
    return out


@given(st.lists(COMMIT, max_size=5))
def test_any_file_name_and_subject_survive(commits):
    assert parse_log(as_git_writes_it(commits)) == commits


def test_real_git_output_with_odd_names(tmp_path):
    root = git_repo(tmp_path / "r", {"a.py": "a\n"})
    odd = "new\nline\x01and\ttab.py"
    commit_files(root, {odd: "x\n", "a.py": "b\n"}, "odd \x01 subject")
    git(root, "commit", "-q", "--allow-empty", "-m", "empty")
    output = git(root, "log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--name-status", "-z",
                 "--format=%x01%H%x00%s")
    empty, odd_commit, base = parse_log(output)
    assert (empty.subject, empty.files) == ("empty", ())
    assert odd_commit.subject == "odd \x01 subject" and set(odd_commit.files) == {odd, "a.py"}
    assert base.files == ("a.py",)
