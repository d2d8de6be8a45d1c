"""Buildkite's wait, block, input and trigger steps in pipegen's own format: declared, decided, rendered,
validated by Buildkite's schema, and named (not run) by `pipegen run`."""

from __future__ import annotations

import functools
import json

from tests import helpers
from tests.helpers import assert_valid, git_repo

STEPS = """
steps:
  - label: Build
    key: build
    commands: [make]
    source_file_dependencies: [src/]
  - wait: ~
    key: built
    if: build.branch == "main"
    continue_on_failure: true
  - block: "Release?"
    key: approve
    fields: [{text: Version, key: version}]
  - input: "Notes"
    fields: [{text: Notes, key: notes}]
  - trigger: docs-site
    label: Docs site
    key: docs
    build: {message: "$BUILDKITE_MESSAGE", commit: "$BUILDKITE_COMMIT"}
    async: true
    source_file_dependencies: [docs/]
  - wait
  - label: Deploy
    key: deploy
    depends_on: [approve]
    commands: [make deploy]
    source_file_dependencies: [deploy/]
"""


def make(tmp_path, steps=STEPS, config=""):
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n" + config,
                                        ".buildkite/steps/ci.yaml": steps, "src/a.c": "", "docs/i.md": "",
                                        "deploy/d": ""})


invoke = functools.partial(helpers.invoke, files="src/a.c\n")  # the change most tests here make


def test_each_kind_is_rendered_as_declared_where_declared(tmp_path):
    root = make(tmp_path, config="interpolate: [BUILDKITE_MESSAGE, BUILDKITE_COMMIT]\n")
    result = invoke(root, "render", "--all")
    assert result.exit_code == 0, result.output
    steps = assert_valid(result.stdout)["steps"]
    assert steps == [
        {"label": "Build", "key": "build", "commands": ["make"]},
        {"wait": None, "key": "built", "if": 'build.branch == "main"', "continue_on_failure": True},
        {"block": "Release?", "key": "approve", "fields": [{"text": "Version", "key": "version"}]},
        {"input": "Notes", "fields": [{"text": "Notes", "key": "notes"}]},  # no key where none was declared
        {"trigger": "docs-site", "label": "Docs site", "key": "docs",
         "build": {"message": "$BUILDKITE_MESSAGE", "commit": "$BUILDKITE_COMMIT"}, "async": True},
        {"wait": None},
        {"label": "Deploy", "key": "deploy", "depends_on": ["approve"], "commands": ["make deploy"]},
    ]


def test_a_trigger_is_selected_like_a_command_and_the_structure_always_stays(tmp_path):
    root = make(tmp_path)
    data = json.loads(invoke(root, "select", "--format", "json").stdout)
    actions = {s["key"]: (s["action"], s["reasons"][0]["rule"]) for s in data["steps"]}
    assert actions["docs"] == ("block", "no-match") and actions["build"] == ("run", "dependency")
    assert actions["built"] == actions["approve"] == ("run", "structure")
    steps = assert_valid(invoke(root, "render").stdout)["steps"]
    # the unselected trigger waits behind a block step of its own, as a command would; its $ is the job's
    gate = next(s for s in steps if s.get("key") == "block-docs")
    trigger = next(s for s in steps if "trigger" in s)
    assert gate["block"] == "Run Docs site" and trigger["depends_on"] == ["block-docs"]
    assert trigger["build"]["message"] == "$$BUILDKITE_MESSAGE"
    skip = assert_valid(invoke(root, "render", "--unselected", "skip").stdout)["steps"]
    assert next(s for s in skip if "trigger" in s)["skip"].startswith("no changed file matches")
    only = assert_valid(invoke(root, "render", "--only", "deploy").stdout)["steps"]
    assert [s.get("key") for s in only] == ["approve", "deploy"]  # explicit keys: exactly those and their needs


def test_run_names_buildkites_own_steps_and_never_runs_them(tmp_path):
    root = make(tmp_path)
    result = invoke(root, "run", "--dry-run", env={"PIPEGEN_HARDWARE": "cpu"})
    assert result.exit_code == 0, result.output
    assert "Buildkite's own steps, not run here: built (wait), approve (block), input-ci-4 (input), " \
           "wait-ci-6 (wait)" in result.stdout
    named = invoke(root, "run", "--step", "docs", "--dry-run", files=None)
    assert named.exit_code == 2 and "step 'docs' is a trigger step: Buildkite's, not run here" in named.stderr


def test_mistakes_in_the_other_kinds_name_file_line_and_fix(tmp_path):
    cases = [
        (STEPS.replace("continue_on_failure: true", "continue_on_fail: true"), "ci.yaml:10:5",
         "unknown wait step field 'continue_on_fail'"),
        (STEPS.replace("async: true", "async: sometimes"), "ci.yaml:20:5", "trigger step field 'async'"),
        (STEPS.replace("    key: approve\n", "    key: approve\n    source_file_dependencies: [x/]\n"), "ci.yaml",
         "unknown block step field 'source_file_dependencies'"),
        (STEPS.replace("depends_on: [approve]", "depends_on: [aprove]"), "ci.yaml",
         "depends on unknown step 'aprove'"),
    ]
    for index, (steps, where, message) in enumerate(cases):
        result = invoke(make(tmp_path / str(index), steps), "select")
        assert result.exit_code == 2 and where in result.stderr and message in result.stderr, (message, result.stderr)
