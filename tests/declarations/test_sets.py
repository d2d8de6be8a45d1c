"""Reusable dependency sets: the config's named `dependency_sets` that steps reference (also through
`defaults:`, which then adds to a step's own entries instead of replacing them), and YAML anchors kept under
an `x-` key, an alias inside a list flattened, an error in what it brings located at the use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import git_repo, invoke

CONFIG = """\
steps: [.buildkite/steps]
x-shared: &build [Cargo.lock, build/]
dependency_sets:
  core: [src/core/, *build]
  docs-tools: [tools/docs/]
"""
STEPS = """\
x-sets:
  proto: &proto [proto/, gen/]
defaults:
  dependency_sets: [core]
steps:
  - label: A
    key: a
    commands: [make a]
    source_file_dependencies: [src/a/]
  - label: B
    key: b
    commands: [make b]
    source_file_dependencies: [*proto, src/b/]
    dependency_sets: [docs-tools]
"""
FILES = {"src/core/x.rs": "", "src/a/x.rs": "", "src/b/x.rs": "", "proto/p.proto": "", "gen/g.rs": "",
         "tools/docs/t.py": "", "Cargo.lock": "", "build/b.sh": ""}


def repo(tmp_path: Path, config: str = CONFIG, steps: str = STEPS) -> Path:
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": config, ".buildkite/steps/s.yaml": steps, **FILES})


def runs(root: Path, path: str) -> set[str]:
    result = invoke(root, "select", "--format", "json", files=path + "\n")
    assert result.exit_code == 0, result.output
    return {s["key"] for s in json.loads(result.stdout)["steps"] if s["action"] == "run"}


@pytest.mark.parametrize(("path", "expected"), [
    ("src/core/x.rs", {"a"}),  # the defaults' set: a's own entries stay (a defaults list would replace them)
    ("Cargo.lock", {"a"}),  # an anchored list inside a set, flattened
    ("src/a/x.rs", {"a"}),
    ("proto/p.proto", {"b"}),  # `[*proto, src/b/]`: the alias's items
    ("gen/g.rs", {"b"}),
    ("src/b/x.rs", {"b"}),
    ("tools/docs/t.py", {"b"}),  # b names its own set, which replaces the default's list
])
def test_sets_and_anchors_select_the_steps_that_reference_them(tmp_path, path, expected):
    assert runs(repo(tmp_path), path) == expected


def test_why_names_the_entry_a_set_brought(tmp_path):
    out = invoke(repo(tmp_path), "why", "gen/g.rs").stdout
    assert "selects b  (entry 'gen/')" in out


def test_an_unknown_set_is_an_error_at_the_step_with_the_nearest_name(tmp_path):
    root = repo(tmp_path, steps=STEPS.replace("[docs-tools]", "[doc-tools]"))
    result = invoke(root, "select")
    assert result.exit_code == 2
    assert ".buildkite/steps/s.yaml:10:5: step 'b' names dependency set 'doc-tools'" in result.stderr
    assert "docs-tools" in result.stderr


def test_an_error_in_what_an_alias_brings_is_located_at_the_use(tmp_path):
    steps = STEPS.replace("&proto [proto/, gen/]", "&proto [proto/, {gen: x}]")
    result = invoke(repo(tmp_path, steps=steps), "select")
    assert result.exit_code == 2
    assert ".buildkite/steps/s.yaml:13:32: step field 'source_file_dependencies': expected a string, got a mapping" in result.stderr, result.stderr


def test_a_top_level_key_that_is_not_x_is_still_refused(tmp_path):
    result = invoke(repo(tmp_path, steps="materialized: &m [a/]\n" + STEPS), "select")
    assert result.exit_code == 2 and "unknown steps-file field 'materialized'" in result.stderr
    assert "or name it 'x-materialized' if it holds YAML anchors" in result.stderr  # the way out, said
    result = invoke(repo(tmp_path / "2", config=CONFIG + "sets: {}\n"), "select")
    assert result.exit_code == 2 and "unknown config field 'sets'" in result.stderr
    assert "or name it 'x-sets' if it holds YAML anchors" in result.stderr
    result = invoke(repo(tmp_path / "3", config=CONFIG + "base_brnch: main\n"), "select")  # a value no anchor holds
    assert "fix: did you mean 'base_branch'?\n" in result.stderr, result.stderr


def test_check_reads_the_entries_a_set_brings(tmp_path):
    root = repo(tmp_path, config=CONFIG.replace("[tools/docs/]", "[tools/gone/]"))
    result = invoke(root, "check", "--format", "json")
    stale = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "stale-entry"]
    assert result.exit_code == 1 and any("tools/gone" in f["message"] for f in stale), result.stdout
