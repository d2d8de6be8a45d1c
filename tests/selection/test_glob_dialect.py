"""The glob dialect a project already uses (`globs: pathspec`): in git's pathspecs `*` crosses "/", so
`src/*.rs` matches src/a/b.rs; read pipegen's way (gitignore's rules) it silently matches less, which
`check` says (glob-dialect) unless the config reads every glob git's way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import git_repo, invoke

STEPS = """\
steps:
  - label: Rust
    key: rust
    commands: [cargo test]
    source_file_dependencies: ["src/*.rs", "!src/*.gen.rs"]
  - label: Docs
    key: docs
    commands: [mkdocs build]
    source_file_dependencies: [site/]
"""
FILES = {"src/lib.rs": "", "src/a/b.rs": "", "src/a/x.gen.rs": "", "docs/a/b.md": "", "ci/x/run.sh": "",
         "site/index.md": ""}


def repo(tmp_path: Path, config: str = "") -> Path:
    return git_repo(tmp_path / "repo", {
        ".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\nrun_all: ['ci/*.sh']\ndocs_only: ['docs/*.md']\n"
                                   + config,
        ".buildkite/steps/s.yaml": STEPS, **FILES})


def decide(root: Path, path: str) -> dict:
    result = invoke(root, "select", "--format", "json", files=path + "\n")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def runs(data: dict) -> set[str]:
    return {s["key"] for s in data["steps"] if s["action"] == "run"}


@pytest.mark.parametrize(("path", "gitignore", "pathspec"), [
    ("src/lib.rs", {"rust"}, {"rust"}),
    ("src/a/b.rs", set(), {"rust"}),  # `*` crosses '/' in git's reading
    ("src/a/x.gen.rs", set(), set()),  # and so does the exclusion's
])
def test_a_step_entry_reads_as_the_config_says(tmp_path, path, gitignore, pathspec):
    assert runs(decide(repo(tmp_path / "g"), path)) == gitignore
    assert runs(decide(repo(tmp_path / "p", "globs: pathspec\n"), path)) == pathspec


def test_run_all_and_docs_only_read_git_s_way_too(tmp_path):
    root = repo(tmp_path, "globs: pathspec\n")
    assert decide(root, "ci/x/run.sh")["run_all"]
    assert decide(root, "docs/a/b.md")["skip_all"]
    plain = repo(tmp_path / "plain")
    assert not decide(plain, "ci/x/run.sh")["run_all"] and not decide(plain, "docs/a/b.md")["skip_all"]


def test_check_warns_on_each_entry_git_reads_more_widely_as_a_subprocess(tmp_path):
    root = repo(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pipegen", "check", "--format", "json"], cwd=root,
                          capture_output=True, text=True, env={**os.environ, "PIPEGEN_CACHE_DIR": ""})
    found = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "glob-dialect"]
    messages = sorted(f["message"] for f in found)
    assert len(found) == 4, messages  # run_all, docs_only, the step's include and its exclusion
    rust = next(f for f in found if "'src/*.rs'" in f["message"])
    assert rust["severity"] == "warning" and rust["step"] == "rust" and rust["files"] == ["src/a/b.rs",
                                                                                         "src/a/x.gen.rs"]
    assert "src/**/*.rs" in rust["fix"] and "globs: pathspec" in rust["fix"] and "globs: gitignore" in rust["fix"]
    for chosen in ("pathspec", "gitignore"):  # a dialect chosen either way: nothing to warn about
        result = invoke(repo(tmp_path / chosen, f"globs: {chosen}\n"), "check", "--format", "json")
        assert "glob-dialect" not in result.stdout


def test_an_unknown_dialect_is_one_message(tmp_path):
    result = invoke(repo(tmp_path, "globs: fnmatch\n"), "select")
    assert result.exit_code == 2 and "gitignore, pathspec" in result.stderr


def test_the_finding_names_its_step_by_key_whatever_the_key_holds(tmp_path):
    """The step is the finding's data, not a piece of its message cut at quotes (a key such as "a'b" gave 'a')."""
    root = git_repo(tmp_path / "repo", {
        ".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
        ".buildkite/steps/s.yaml": STEPS.replace("key: rust", "key: \"rust'x\""), **FILES})
    result = invoke(root, "check", "--format", "json")
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "glob-dialect"]
    assert found and {f["step"] for f in found} == {"rust'x"}, result.output


def test_every_glob_of_the_config_is_warned_on_at_the_line_it_is_written(tmp_path):
    """uncovered_ignore, run_all_exclude and a rule's changed read as the dialect says too; each finding
    names the file, line and column of its glob (the config's had no line)."""
    config = ("uncovered_ignore: ['notes/*.txt']\nrun_all_exclude: ['ci/*.md']\n"
              "rules:\n  - name: rocm\n    changed: ['docker/*.rocm']\n")
    root = git_repo(tmp_path / "repo", {
        ".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\nrun_all: ['ci/*.sh']\ndocs_only: ['docs/*.md']\n"
                                   + config,
        ".buildkite/steps/s.yaml": STEPS, **FILES, "notes/a/n.txt": "", "ci/x/r.md": "", "docker/a/d.rocm": ""})
    result = invoke(root, "check", "--format", "json")
    found = {f["message"].split(" as matching")[0]: (f["file"], f["line"], f["column"])
             for f in json.loads(result.stdout)["findings"] if f["code"] == "glob-dialect"}
    config_file, steps = ".buildkite/pipegen.yaml", ".buildkite/steps/s.yaml"
    assert found == {"run_all: git reads 'ci/*.sh'": (config_file, 2, 11),
                     "docs_only: git reads 'docs/*.md'": (config_file, 3, 13),
                     "uncovered_ignore: git reads 'notes/*.txt'": (config_file, 4, 20),
                     "run_all_exclude: git reads 'ci/*.md'": (config_file, 5, 19),
                     "rule 'rocm': git reads 'docker/*.rocm'": (config_file, 8, 15),
                     "step 'rust': git reads 'src/*.rs'": (steps, 5, 32),
                     "step 'rust': git reads '!src/*.gen.rs'": (steps, 5, 44)}, found
