"""`why` of many paths tells each exactly as `why` of that path alone does (commands/why.py decides once per
group of paths the declarations read alike), and a tracked symbolic link is a file, not a folder."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from tests.helpers import declarations, git, git_repo, write_files

ENTRIES = ["src/", "src/a/", "src/a/x.py", "lib", "tests/", "!src/a/vendored/", "src/*.py", "**/*.md", "docs/"]
# Several paths each way an entry reads them, so that groups form.
FILES = ["src/a/x.py", "src/a/y.py", "src/a/vendored/v.py", "src/a/vendored/w.py", "src/b.py", "src/c.py",
         "src/d/e.py", "lib/l.py", "lib/m/n.py", "tests/t.py", "tests/u.py", "docs/i.md", "docs/j.md", "README.md",
         "pyproject.toml", ".buildkite/pipegen.yaml", ".buildkite/steps/s.yaml", "other.txt", "more.txt"]


def why(root: Path, paths: list[str], env: dict[str, str], fmt: str) -> str:
    result = CliRunner().invoke(cli, ["why", "--root", str(root), "--format", fmt, *paths], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declarations(ENTRIES, always_run=["s1*"]), st.lists(st.sampled_from(FILES), min_size=2, max_size=12,
                                                          unique=True),
       st.sampled_from([{}, {"NIGHTLY": "1"}, {"NOAUTO": "1"}]), st.sampled_from(["json", "text"]))
def test_many_paths_are_told_as_each_alone(files, paths, env, fmt):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_files(root, files)
        alone = [why(root, [path], env, fmt) for path in paths]
        together = why(root, paths, env, fmt)
        if fmt == "json":
            assert json.loads(together)["paths"] == [json.loads(text)["paths"][0] for text in alone]
        else:
            assert together == "".join(alone)


def test_a_tracked_link_to_a_folder_is_a_file(tmp_path):
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                                         ".buildkite/steps.yaml": "steps:\n- label: A\n  key: a\n  commands: [make]\n"
                                                                  "  source_file_dependencies: ['*']\n",
                                         "real/x.py": ""})
    os.symlink("real", root / "link")
    git(root, "add", "link")
    git(root, "commit", "-qm", "a link")
    result = CliRunner().invoke(cli, ["why", "--root", str(root), "link", "real"])
    assert result.exit_code == 0, result.output
    assert "link:\n  selects a  (entry '*')" in result.stdout
    assert "WARNING: real is a folder" in result.stderr and "link is a folder" not in result.stderr


def test_long_and_control_character_paths_are_told_as_each_alone(tmp_path):
    """Texts name a path as shown() prints it (escaped, cut past 200 characters): a group's rows are renamed
    by that text, and the uncovered run-all reason too."""
    paths = ["src/" + "a" * 300 + ".py", "src/b\n.py", "src/c\u202e.py", "src/d.py",
             "top/" + "e" * 300, "top/f\tg.txt", "top/h.txt"]
    for policy in ("warn", "run_all"):
        root = tmp_path / policy
        write_files(root, {".buildkite/pipegen.yaml": f"steps: [.buildkite/steps.yaml]\nuncovered: {policy}\n"
                                                      "rules:\n- {name: r, changed: ['src/']}\n",
                           ".buildkite/steps.yaml": "steps:\n- {label: A, key: a, commands: [make], "
                                                    "source_file_dependencies: ['src/']}\n"
                                                    "- {label: B, key: b, commands: [make]}\n"})
        for fmt in ("json", "text"):
            alone = [why(root, [path], {}, fmt) for path in paths]
            together = why(root, paths, {}, fmt)
            if fmt == "json":
                assert json.loads(together)["paths"] == [json.loads(text)["paths"][0] for text in alone]
            else:
                assert together == "".join(alone)
