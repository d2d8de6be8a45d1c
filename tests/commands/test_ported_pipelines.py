"""Hand-written Buildkite pipelines ported to pipegen as docs/reference/import.md
says: what real repositories (buildkite/agent, buildkite/cli, ...) broke, as small synthetic inputs."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from pipegen.cli import cli

from ..helpers import commit_files, git_repo

CONFIG = "steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n"
HARDWARE = "default: linux\nfamilies:\n  linux: {vendor: cpu, queue: linux-q, template: plain}\n" \
           "templates:\n  plain: {kind: plain}\n"


def repo(tmp_path, steps: str, config: str = CONFIG):
    return git_repo(tmp_path / "r", {".buildkite/pipegen.yaml": config, ".buildkite/hardware.yaml": HARDWARE,
                                     ".buildkite/steps/ci.yml": steps, "src/a.go": "package a\n"})


def pipegen(root, *args, input=None):
    return CliRunner().invoke(cli, [args[0], "--root", str(root), *args[1:]], input=input,
                              env={"PIPEGEN_CACHE_DIR": ""})


def test_a_label_with_an_emoji_gets_a_key_buildkite_accepts(tmp_path):
    # buildkite/agent: `name: ":memo: Trigger docs draft"` with no key; vLLM's derivation gives
    # '-memo--trigger-docs-draft', which check then refused as a key the user never wrote.
    root = repo(tmp_path, "group: G\nsteps:\n  - name: ':memo: Trigger docs draft'\n    command: make docs\n"
                          "    source_file_dependencies: [src/]\n")
    result = pipegen(root, "check", "--format", "json")
    assert result.exit_code == 0, result.output
    assert [f["code"] for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"] == []
    steps = json.loads(pipegen(root, "select", "--format", "json", "--base", "HEAD").stdout)["steps"]
    assert [s["key"] for s in steps] == ["memo--trigger-docs-draft"]


def test_a_plugin_only_step_renders_without_commands(tmp_path):
    # buildkite/agent's junit-annotate step has plugins and no command: render wrote `commands: null`,
    # which the schema refused, blaming the shipped template.
    root = repo(tmp_path, "group: G\nsteps:\n  - label: Annotate\n    key: annotate\n"
                          "    plugins: [{junit-annotate#v1.6.0: {artifacts: junit-*.xml}}]\n"
                          "    source_file_dependencies: [src/]\n")
    result = pipegen(root, "render", "--all")
    assert result.exit_code == 0, result.output
    step = yaml.safe_load(result.stdout)["steps"][0]["steps"][0]
    assert "commands" not in step and step["plugins"] == [{"junit-annotate#v1.6.0": {"artifacts": "junit-*.xml"}}]


def test_a_dollar_escaped_for_buildkite_is_a_warning_not_a_silent_double_escape(tmp_path):
    # buildkite/agent's `if: ... =~ /^(main|v\d+)$$/` copied verbatim rendered `$$$$`: the job gets `$$`.
    root = repo(tmp_path, "group: G\nsteps:\n  - label: Release\n    key: release\n    command: echo $$HOME\n"
                          "    if: build.branch =~ /^v\\d+$$/\n    source_file_dependencies: [src/]\n"
                          "  - label: Plain\n    key: plain\n    command: echo $HOME\n    source_file_dependencies: [src/]\n")
    result = pipegen(root, "check", "--format", "json")
    assert result.exit_code == 0, result.output
    found = [(f["code"], f["step"], f["line"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [("escaped-dollar", "release", 3)]
    (root / ".buildkite/pipegen.yaml").write_text(CONFIG + "interpolate: ['*']\n")  # Buildkite's syntax throughout
    assert "escaped-dollar" not in pipegen(root, "check").stdout


def test_a_pipeline_yml_given_as_the_config_is_named_for_what_it_is(tmp_path):
    # A new user's first try: `pipegen select --config .buildkite/pipeline.yml` read it as vLLM's legacy
    # steps file and said "step has no 'label'" of a step with a `name:`.
    root = repo(tmp_path, "group: G\nsteps:\n  - {label: a, command: make}\n")
    (root / ".buildkite/pipeline.yml").write_text("agents: {queue: hosted}\nsteps:\n  - name: ':go: test'\n"
                                                   "    command: go test ./...\n  - wait\n")
    result = pipegen(root, "select", "--config", ".buildkite/pipeline.yml", "--base", "HEAD")
    assert result.exit_code == 2
    assert result.output.startswith("pipegen: error: .buildkite/pipeline.yml:1:1: .buildkite/pipeline.yml is a "
                                    "Buildkite pipeline, not a pipegen config")
    assert "pipegen import .buildkite/pipeline.yml" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("step, kind", [
    ("- wait", "wait"),
    ("- waiter: ~", "wait"),  # the agent's other spelling, written as the schema has it
    ("- block: ':rocket: Release?'", "block"),
    ("- input: Version\n    fields: [{text: V, key: v}]", "input"),
    ("- trigger: deploy\n    label: Deploy", "trigger"),
])
def test_buildkites_other_step_types_are_kept_as_written(tmp_path, step, kind):
    # Copied from buildkite/agent's and buildkite/cli's pipelines: each was "unknown step field 'wait'"
    # (or 'block', 'input', 'trigger'), then a refusal; now each is a step of its own kind, rendered where declared.
    root = repo(tmp_path, f"group: G\nsteps:\n  - {{label: a, command: make}}\n  {step}\n")
    result = pipegen(root, "render", "--all")
    assert result.exit_code == 0, result.output
    rendered = yaml.safe_load(result.stdout)["steps"][0]["steps"]
    assert len(rendered) == 2 and kind in rendered[1], rendered


def test_a_group_step_inside_a_steps_file_says_what_to_do_with_it(tmp_path):
    root = repo(tmp_path, "group: G\nsteps:\n  - {label: a, command: make}\n"
                          "  - group: Inner\n    steps: [{label: x, command: y}]\n")
    result = pipegen(root, "check")
    assert result.exit_code == 2
    assert ".buildkite/steps/ci.yml:4:5: error[declaration-error]: a group step: a steps file is one group" \
        in result.output and "unknown step field" not in result.output and "group: " in result.output


def test_a_stale_entry_of_the_defaults_is_reported_once_at_its_own_line(tmp_path):
    # buildkite/cli's steps share `defaults: {source_file_dependencies: [...]}`: a stale entry there was
    # one finding per step, each at the step's line, where the entry is not written.
    root = repo(tmp_path, "group: G\ndefaults:\n  source_file_dependencies: [src/, ./lib/]\nsteps:\n"
                          "  - {label: a, key: a, command: make a}\n  - {label: b, key: b, command: make b}\n"
                          "  - {label: c, key: c, command: make c, source_file_dependencies: [./lib/]}\n")
    result = pipegen(root, "check", "--format", "json")
    found = [(f["code"], f["line"], f["column"], f["step"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [("stale-entry", 3, 36, "a"), ("stale-entry", 7, 68, "c")], result.output


def test_why_from_a_subfolder_reads_paths_as_the_shell_completes_them(tmp_path, monkeypatch):
    # In buildkite/cli's internal/, `pipegen why ../go.mod` was "not a file inside the repository", and
    # `why config/x.go` decided the root's config/x.go, not internal/config/x.go.
    root = repo(tmp_path, "group: G\nsteps:\n  - {label: a, key: a, command: make, source_file_dependencies: [src/]}\n",
                config=CONFIG + "run_all: [go.mod]\n")
    (root / "src" / "sub").mkdir()
    monkeypatch.chdir(root / "src")
    result = CliRunner().invoke(cli, ["why", "../go.mod", "sub/x.go", "a.go"], env={"PIPEGEN_CACHE_DIR": ""})
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[::2] == ["go.mod:", "src/sub/x.go:", "src/a.go:"]
    assert "selects a  (entry 'src/')" in result.output
    monkeypatch.chdir(tmp_path)  # outside the repository: paths are the root's, as before
    assert "src/a.go:" in pipegen(root, "why", "src/a.go").output


def test_run_says_a_steps_plugins_do_not_run_here_and_never_passes_a_plugin_only_step(tmp_path):
    # buildkite/agent: junit-annotate (plugins, no command) "passed in 0.0s" locally having done nothing,
    # and a docker-compose step ran its command on the host without a word about the plugin.
    root = repo(tmp_path, "group: G\nsteps:\n  - label: Annotate\n    key: annotate\n"
                          "    plugins: [{junit-annotate#v1.6.0: {artifacts: junit-*.xml}}]\n"
                          "  - label: Lint\n    key: lint\n    command: 'true'\n"
                          "    plugins: {docker-compose#v4.14.0: {run: lint}}\n")
    result = pipegen(root, "run", "--step", "annotate", "--step", "lint", "--log-dir", str(tmp_path / "logs"))
    assert result.exit_code == 1, result.output  # the exit status claims no success for what did not run
    assert "lint: its plugins (docker-compose#v4.14.0) run on Buildkite only; its commands run here" in result.output
    summary = {line.split()[0]: line.split()[2] for line in result.output.splitlines() if line.startswith(("annotate ",
                                                                                                            "lint "))}
    assert summary == {"annotate": "incomplete", "lint": "incomplete"}, result.output
    assert "not run: no commands; its plugins (junit-annotate#v1.6.0) run on Buildkite only" in result.output
    assert "commands passed; its plugins (docker-compose#v4.14.0) run on Buildkite only" in result.output
    assert "2 incomplete" in result.output and "passed" not in result.output.replace("commands passed", "")


def test_audit_counts_a_runs_parallel_and_matrix_jobs_as_buildkite_does(tmp_path):
    # buildkite/agent's build-binary (a 5x3 matrix, one combination skipped, one added: 14 jobs) and its
    # `parallelism: 2` tests counted as one job per run in audit's "jobs".
    steps = ("group: G\nsteps:\n  - label: Tests\n    key: tests\n    command: make test\n    parallelism: 2\n"
             "    source_file_dependencies: [src/]\n  - label: Build\n    key: build\n    command: make {{matrix.os}}\n"
             "    source_file_dependencies: [src/]\n    matrix:\n      setup: {os: [linux, darwin], arch: [amd64, arm64]}\n"
             "      adjustments:\n        - {with: {os: darwin, arch: amd64}, skip: old}\n"
             "        - {with: {os: linux, arch: riscv64}}\n  - {label: Lint, key: lint, command: make lint}\n")
    root = repo(tmp_path, steps)
    commit_files(root, {"src/b.go": "package b\n"})
    report = json.loads(pipegen(root, "audit", "--last", "2", "--format", "json").stdout)
    ran = {s["key"]: (s["runs"], s["ran"], s["every"]) for s in report["steps"]}
    assert ran == {"tests": (2, 4, 4), "build": (2, 8, 8), "lint": (1, 1, 2)}, report["steps"]
    assert (report["ran"], report["every"]) == (13, 14)


@pytest.mark.parametrize("entry, message, fix", [
    ('".buildkite/steps/*.yml"', "steps entry '.buildkite/steps/*.yml' is a glob: an entry is a file or a folder",
     "name the folder '.buildkite/steps'"),
    ('"*.yml"', "steps entry '*.yml' is a glob", "name the folder that holds the steps files"),
    (".buildkite", "steps entry '.buildkite' holds .buildkite/hardware.yaml, which is not a steps file",
     "a folder of their own"),
])
def test_a_steps_entry_that_is_a_glob_or_holds_the_config_says_so(tmp_path, entry, message, fix):
    # Porting buildkite/cli: `steps: [".buildkite/steps/*.yml"]` was "steps path not found ... create it";
    # `steps: [.buildkite]` read pipegen.yaml, hardware.yaml and pipeline.yml as steps files, an error each.
    root = repo(tmp_path, "group: G\nsteps:\n  - {label: a, command: make}\n",
                config=CONFIG.replace("[.buildkite/steps]", f"[{entry}]"))
    result = pipegen(root, "select", "--base", "HEAD")
    assert result.exit_code == 2
    assert f"pipegen: error: .buildkite/pipegen.yaml:1:9: {message}" in result.output, result.output
    assert fix in result.output and result.output.count("error") == 1


def test_if_changed_is_named_as_buildkites_to_decide(tmp_path):
    # buildkite/agent's steps carry `if_changed`: the agent skips them at upload when its own diff matches
    # none of the globs. select said "run" without the note it gives for `if` and `branches`.
    root = repo(tmp_path, "group: G\nsteps:\n  - label: Proto\n    key: proto\n    command: make proto\n"
                          "    if_changed: {include: ['api/**'], exclude: ['api/x']}\n    source_file_dependencies: [src/]\n")
    result = pipegen(root, "select", "--all", "--base", "HEAD", "--format", "json")
    (step,) = json.loads(result.stdout)["steps"]
    assert step["reasons"][1] == {"rule": "buildkite-condition",
                                  "text": "Buildkite may still skip it (if_changed: include: api/** exclude: api/x)"}
    result = pipegen(root, "run", "--step", "proto", "--dry-run")
    assert "proto: Buildkite decides its if_changed at upload; pipegen run does not, it runs here" in result.output


def test_a_run_all_change_with_explicit_keys_does_not_claim_to_run_everything(tmp_path):
    # buildkite/agent, `select --only KEY` on a commit that changed the config: "Running everything: ..."
    # above "1 run, 0 block, 1 skip".
    root = repo(tmp_path, "group: G\nsteps:\n  - {label: a, key: a, command: make a, source_file_dependencies: [src/]}\n"
                          "  - {label: b, key: b, command: make b, source_file_dependencies: [src/]}\n",
                config=CONFIG + "run_all: [go.mod]\n")
    commit_files(root, {"go.mod": "module x\n"})
    only = pipegen(root, "select", "--base", "HEAD~1", "--only", "a").output.splitlines()
    assert only[0] == ("Not running everything, though go.mod matches run-all pattern 'go.mod': the explicit keys "
                       "decide first")
    assert only[1].startswith("1 run, 0 block, 1 skip of 2 steps")
    noauto = CliRunner().invoke(cli, ["select", "--root", str(root), "--base", "HEAD~1"], env={"NOAUTO": "1"})
    assert noauto.output.startswith("Not running everything, though go.mod matches run-all pattern 'go.mod': "
                                    "NOAUTO=1 blocks every step\n0 run, 2 block")
    assert pipegen(root, "select", "--base", "HEAD~1").output.startswith("Running everything: go.mod matches")


def test_an_empty_steps_file_says_what_to_write(tmp_path):
    # A file just created in the steps folder: "must be a mapping, got nothing (null)" and no fix.
    root = repo(tmp_path, "group: G\nsteps:\n  - {label: a, command: make}\n")
    (root / ".buildkite/steps/new.yaml").write_text("")
    result = pipegen(root, "select", "--base", "HEAD")
    assert result.exit_code == 2
    assert result.output == ("pipegen: error: .buildkite/steps/new.yaml:1:1: the steps file is empty\n"
                             "  fix: write 'group: <name>' and 'steps:' with '- label: ...' items, or delete the file\n")
