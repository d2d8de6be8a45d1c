"""What real monorepo pipelines broke in `pipegen import`, replayed on their history (docs/reference/import.md: "measured on"),
as small synthetic inputs: elastic/elastic-agent (if_changed on steps that upload other files, a `common:`
key for YAML anchors), elastic/logstash (a monorepo-diff step with its own `if`, `^` in watch paths)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pipegen.cli import cli

from ..helpers import commit_files, git
from .test_import import repo, run, steps_of

ANCHORS_AND_UPLOADS = """\
common:
  - checkout: &sparse
      sparse-checkout#v1.6.0: {paths: [.buildkite]}
steps:
  - label: unit
    key: unit
    command: make test
  - label: Trigger extended tests
    if: build.pull_request.id != null
    command: buildkite-agent pipeline upload .buildkite/integration.yml
    plugins: [*sparse]
    if_changed: {include: ["src/**", go.mod]}
  - label: Extended tests on branches
    if: build.pull_request.id == null
    command: buildkite-agent pipeline upload .buildkite/integration.yml
"""
INTEGRATION = """\
steps:
  - label: integration
    key: integration
    command: make integration
  - label: nested
    command: buildkite-agent pipeline upload .buildkite/fips.yml
"""
FIPS = "steps:\n  - {label: fips, key: fips, command: make fips, if: build.branch != 'x'}\n"


def select(root, *paths):
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "import")
    commit_files(root, dict.fromkeys(paths, f"{paths}\n"))  # a new text each time: every path changes
    result = CliRunner().invoke(cli, ["select", "--root", str(root), "--config", ".buildkite/pipegen/pipegen.yaml", "--base", "HEAD~1",
                                      "--format", "json"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    return {s["key"]: s["action"] for s in json.loads(result.stdout)["steps"]}


def test_the_conditions_of_an_upload_step_hold_for_the_steps_it_uploads(tmp_path):
    # elastic/elastic-agent: the upload step's if and if_changed decided whether its file's steps existed;
    # the upload of a file that an uploaded file names is followed too, and a second upload of the same file
    # (the other branch of an `if`) that differs in more than its `if` is named instead of writing its steps twice.
    root = repo(tmp_path, ANCHORS_AND_UPLOADS, {".buildkite/integration.yml": INTEGRATION, ".buildkite/fips.yml": FIPS})
    result = run(root, ".buildkite/pipeline.yml")
    unit, integration, fips = steps_of(root)
    assert integration["if"] == "build.pull_request.id != null"
    assert integration["source_file_dependencies"] == ["src/**", "go.mod"]
    assert fips["if"] == "(build.pull_request.id != null) && (build.branch != 'x')"
    assert fips["source_file_dependencies"] == ["src/**", "go.mod"]
    assert "source_file_dependencies" not in unit
    assert result.exit_code == 1
    assert ".buildkite/pipeline.yml:13:5: step 'Extended tests on branches' uploads .buildkite/integration.yml " \
           "again (also uploaded at .buildkite/pipeline.yml:8:5; the two uploads differ in if_changed, plugins); " \
           "its steps are imported once, at the first" in result.output
    assert ".buildkite/pipeline.yml:1:1: the top-level 'common' is no pipeline field (Buildkite ignores it; YAML " \
           "anchors written there were resolved where they are used); not imported" in result.output
    assert select(root, "docs/b.md") == {"unit": "run", "integration": "block", "fips": "block"}


def test_an_uploaded_step_with_its_own_if_changed_keeps_it_and_says_it_may_run_more_often(tmp_path):
    # Both path rules had to match (the upload's, then the step's); one list of entries cannot say "and",
    # so the step keeps its own: a superset of what Buildkite ran, never less.
    root = repo(tmp_path, "steps:\n  - command: buildkite-agent pipeline upload .buildkite/more.yml\n"
                          "    if_changed: src/**\n",
                {".buildkite/more.yml": "steps:\n  - {label: m, key: m, command: make, if_changed: go.mod}\n"})
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert ".buildkite/pipeline.yml:2:5: upload step (no label or key): its if_changed (src/**) is left out for " \
           "step 'm' (.buildkite/more.yml:2:5), which has its own: Buildkite ran it only when both matched; pipegen " \
           "runs it whenever its own matches, so it may run more often than before" in result.output
    assert steps_of(root)[0]["source_file_dependencies"] == ["go.mod"]
    assert select(root, "src/b.go", "go.mod") == {"m": "run"}  # Buildkite ran it: both matched
    assert select(root, "go.mod") == {"m": "run"}  # more often than before
    assert select(root, "src/c.go") == {"m": "block"}  # Buildkite did not run it either


TWICE = """\
steps:
  - label: Extended tests for PRs
    if: build.pull_request.id != null
    command: buildkite-agent pipeline upload .buildkite/integration.yml
  - label: unit
    command: make test
  - label: Extended tests on branches
    if: build.pull_request.id == null
    command: buildkite-agent pipeline upload .buildkite/integration.yml
"""


def test_a_file_uploaded_on_both_sides_of_an_if_is_written_once_under_either_condition(tmp_path):
    # elastic/elastic-agent: one upload per branch of an `if`; the steps existed when either condition held.
    root = repo(tmp_path, TWICE, {".buildkite/integration.yml": INTEGRATION, ".buildkite/fips.yml": FIPS})
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert "Proven: rendered with --all, it equals the input as Buildkite reads both." in result.output
    assert ".buildkite/pipeline.yml:7:5: step 'Extended tests on branches' uploads .buildkite/integration.yml " \
           "again (also at .buildkite/pipeline.yml:2:5) under another if: its steps are written once, where " \
           "either upload's if holds" in result.output
    integration, fips, unit = steps_of(root)
    either = "(build.pull_request.id != null) || (build.pull_request.id == null)"
    assert integration["if"] == either
    assert fips["if"] == f"({either}) && (build.branch != 'x')"
    assert "if" not in unit
    assert select(root, "docs/b.md") == {"integration": "run", "fips": "run", "unit": "run"}


def test_a_second_upload_without_if_is_not_one_upload(tmp_path):
    # When the first upload's if holds too, both uploads run: Buildkite refuses the second (its keys are taken),
    # which one written set of steps cannot say. The model of Buildkite names it; exit 1.
    root = repo(tmp_path, TWICE.replace("    if: build.pull_request.id == null\n", ""),
                {".buildkite/integration.yml": INTEGRATION, ".buildkite/fips.yml": FIPS})
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 1, result.output
    assert "Buildkite refuses the original: the key 'integration' is used twice in the build" in result.output


def test_a_second_upload_that_differs_in_more_than_its_if_or_behind_a_wait_is_named(tmp_path):
    # Its branches (or env, if_changed...) would have held for the steps it uploaded: one step cannot hold both.
    for pipeline, why in ((TWICE + "    branches: main\n", "the two uploads differ in branches"),
                          (TWICE.replace("  - label: unit\n", "  - wait\n  - label: unit\n"),
                           "a wait, block or input lies between them")):
        root = repo(tmp_path / why[:5], pipeline, {".buildkite/integration.yml": INTEGRATION,
                                                   ".buildkite/fips.yml": FIPS})
        result = run(root, ".buildkite/pipeline.yml")
        assert result.exit_code == 1, result.output
        assert f"uploads .buildkite/integration.yml again (also uploaded at .buildkite/pipeline.yml:2:5; {why}); " \
               "its steps are imported once, at the first" in result.output
        assert steps_of(root)[0]["if"] == "build.pull_request.id != null"


def test_a_common_key_alone_imports_with_exit_0(tmp_path):
    root = repo(tmp_path, "common:\n  - x: &cmd make\nsteps:\n  - {label: a, key: a, command: *cmd}\n")
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert steps_of(root) == [{"label": "a", "key": "a", "command": "make"}]


LOGSTASH = """\
steps:
  - label: Trigger exhaustive tests for PRs
    if: build.pull_request.id != null
    plugins:
      - monorepo-diff#v1.0.1:
          diff: git diff --name-only origin/main...HEAD
          interpolation: false
          watch:
            - path: [^qa/acceptance/, .buildkite/exhaustive.yml]
              config: {trigger: exhaustive-tests}
  - label: On a comment
    if: build.env("COMMENT") == "run"
    trigger: exhaustive-tests
"""


def test_a_monorepo_diff_steps_if_holds_for_what_it_uploads_and_a_caret_is_a_plain_path(tmp_path):
    # elastic/logstash: the plugin step ran on pull requests only; `^qa/acceptance/` in v1.0.1 is a raw
    # prefix (no regular expression before regex_paths), which no file starts with.
    root = repo(tmp_path, LOGSTASH, {"qa/acceptance/a.rb": "a\n", ".buildkite/exhaustive.yml": "steps: []\n"})
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Imported 2 steps")  # trigger steps count
    plugin, comment = steps_of(root)
    assert plugin["if"] == "build.pull_request.id != null"
    assert plugin["source_file_dependencies"] == ["^qa/acceptance/**", ".buildkite/exhaustive.yml*"]
    assert "watch path '^qa/acceptance/' starts with '^': this plugin version reads it as a plain path, which no " \
           "file in the repository starts with, so it never selected the step" in result.output
    assert select(root, "qa/acceptance/b.rb")[plugin["key"]] == "block"  # as the plugin: never


BEATS = """\
steps:
  - label: Trigger Auditbeat
    plugins:
      - monorepo-diff#v1.0.1:
          watch:
            - path: [auditbeat/, libbeat/**]
              config:
                trigger: auditbeat
                build: {commit: "${BUILDKITE_COMMIT}", env: ["PR=${BUILDKITE_PULL_REQUEST}", "A=b=c", ONLY_KEY]}
            - path: heartbeat/
              config: {trigger: heartbeat, build: {env: {PR: "1"}}}
"""


def test_a_watched_steps_env_is_what_the_go_plugin_uploads(tmp_path):
    # elastic/beats and elastic/logstash on monorepo-diff#v1.0.1: it reads env as KEY=VALUE items (up to a
    # second `=`; a bare key takes the value it has in the plugin's job), drops a mapping (before v1.5.0),
    # and fills a trigger's build message, branch and commit with the build's own.
    root = repo(tmp_path, BEATS, {"auditbeat/a.go": "a\n", "heartbeat/h.go": "h\n"})
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    auditbeat, heartbeat = steps_of(root)
    assert auditbeat["build"] == {"commit": "${BUILDKITE_COMMIT}", "branch": "${BUILDKITE_BRANCH}",
                                  "message": "${BUILDKITE_MESSAGE}",
                                  "env": {"PR": "${BUILDKITE_PULL_REQUEST}", "A": "b", "ONLY_KEY": "${ONLY_KEY}"}}
    assert "env" not in heartbeat["build"]
    assert "a watched step's env mapping is left out, as this plugin version left it out" in result.output


def test_skip_path_only_where_the_plugin_version_reads_it(tmp_path):
    # elastic's pins monorepo-diff#v1.0.1: skip_path came in v1.2.0 (chronotc's and monebag's never had it),
    # so an older plugin ran the step for a skipped path and the import must not exclude it.
    watch = "          watch:\n            - path: app/\n              skip_path: app/docs/\n" \
            "              config: {label: app, key: app, command: make}\n"
    for version, excluded in (("monorepo-diff#v1.0.1", False), ("monebag/monorepo-diff#v2.5.9", False),
                              ("monorepo-diff#v1.2.0", True)):
        root = repo(tmp_path / version.replace("/", "-"), f"steps:\n  - plugins:\n      - {version}:\n{watch}")
        result = run(root, ".buildkite/pipeline.yml")
        # the model of Buildkite knows the Go plugin only: a bash plugin's upload is not proven (exit 1)
        assert result.exit_code == (1 if "monebag" in version else 0), result.output
        assert ("!app/docs/**" in steps_of(root)[0]["source_file_dependencies"]) == excluded, version
        assert ("watch 1's skip_path is left out: this plugin version ignores it" in result.output) != excluded
