"""Hand-written Buildkite pipelines ported to pipegen as README's "From a hand-written pipeline.yml"
says: what real repositories (buildkite/agent, buildkite/cli, ...) broke, as small synthetic inputs."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from pipegen.cli import cli

from ..helpers import git_repo

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
