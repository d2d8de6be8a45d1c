"""`$` reaches the job exactly as declared, through Buildkite's upload interpolation.

The model (buildkite/interpolation.py) and render's escaping are checked directly in
tests/buildkite/test_interpolation.py; here, through the CLI as a subprocess on a real repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from pipegen.buildkite.interpolation import interpolate

from ..helpers import git_repo

ENV = {"HOME": "/home/agent", "GROUP": "gpu tests", "EMPTY": "", "COMMIT": "0123456789abcdef", "é": "accent"}


CONFIG = "steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n"
HARDWARE = "default: linux\nfamilies:\n  linux: {vendor: cpu, queue: linux-q, template: plain}\n" \
           "templates:\n  plain: {kind: plain}\n"
PORTED = r"""group: G
steps:
  - label: 'Shell $ and ${braces}'
    key: shell
    commands:
      - 'for g in "$@"; do echo "${g#* }"; done'
      - 'echo "cost: $5, ${HOME:-none} $(date)" \\$HOME \\\\$HOME x\\ $'
    env: {PATTERN: '^v\d+$', LITERAL: '$HOME'}
    artifact_paths: ['logs/*.log']
    if: build.message !~ /skip ci$/
    source_file_dependencies: [src/]
"""


def uploaded(value):
    """A rendered step as the agent reads it: every string interpolated, mapping keys too."""
    if isinstance(value, str):
        return interpolate(value, ENV)
    if isinstance(value, dict):
        return {uploaded(k): uploaded(v) for k, v in value.items()}
    return [uploaded(v) for v in value] if isinstance(value, list) else value


def run(root, *args):
    env = {**os.environ, "PIPEGEN_CACHE_DIR": ""}
    return subprocess.run([sys.executable, "-m", "pipegen", *args], cwd=root, capture_output=True, text=True, env=env)


def ported(tmp_path, steps, config=CONFIG):
    return git_repo(tmp_path / "r", {".buildkite/pipegen.yaml": config, ".buildkite/hardware.yaml": HARDWARE,
                                     ".buildkite/steps/ci.yml": steps, "src/a.go": "package a\n"})


def test_every_string_field_arrives_as_declared_after_upload(tmp_path):
    root = ported(tmp_path, PORTED)
    result = run(root, "render", "--all")
    assert result.returncode == 0, result.stderr
    step = yaml.safe_load(result.stdout)["steps"][0]["steps"][0]
    declared = yaml.safe_load(PORTED)["steps"][0]
    after_upload = uploaded(step)
    assert after_upload["label"] == declared["label"]
    assert after_upload["commands"] == declared["commands"]  # no banners: the template asks for none
    assert after_upload["env"] == declared["env"]
    assert after_upload["if"] == declared["if"]
    check = run(root, "check", "--format", "json")
    assert check.returncode == 0, check.stdout + check.stderr
    # The label's `${braces}` and env's `$HOME` arrive as written, which a ported pipeline.yml did not mean.
    found = json.loads(check.stdout)["findings"]
    assert [(f["code"], f["step"]) for f in found] == [("variable-not-expanded", "shell")]
    assert "label 'Shell $ and ${braces}': '$braces' reaches the agent as that literal text" in found[0]["message"]


def test_a_backslash_before_a_dollar_is_refused_naming_step_and_field(tmp_path):
    # `echo "\$HOME"` reached the shell as `$/home/agent`.
    steps = "group: G\nsteps:\n  - label: L\n    key: esc\n    command: echo \"\\$HOME\"\n" \
            "    source_file_dependencies: [src/]\n"
    root = ported(tmp_path, steps)
    result = run(root, "render", "--all")
    assert result.returncode == 2 and result.stdout == ""
    assert "ci.yml:3" in result.stderr and "step 'esc', commands 'echo \"\\\\$HOME\"'" in result.stderr
    assert "single quotes" in result.stderr and "Traceback" not in result.stderr
    found = json.loads(run(root, "check", "--format", "json").stdout)["findings"]
    assert [(f["code"], f["severity"], f["step"]) for f in found] == [("undeliverable-text", "error", "esc")]
    assert run(root, "run", "--step", "esc").returncode == 2


def test_a_kept_variable_buildkite_cannot_parse_is_refused_before_the_upload(tmp_path):
    steps = "group: G\nsteps:\n  - label: L\n    key: k\n    command: echo ${GROUP#* }\n" \
            "    source_file_dependencies: [src/]\n"
    root = ported(tmp_path, steps, CONFIG + "interpolate: [GROUP]\n")
    result = run(root, "render", "--all")
    assert result.returncode == 2 and "upload fails" in result.stderr and "got '#'" in result.stderr
    (root / ".buildkite/pipegen.yaml").write_text(CONFIG)  # not kept: the shell's, escaped
    result = run(root, "render", "--all")
    assert result.returncode == 0 and "echo $${GROUP#* }" in result.stdout


def test_a_variable_in_a_field_nothing_expands_again_is_a_warning_with_the_fix(tmp_path):
    steps = "group: G\nsteps:\n  - label: L\n    key: k\n    command: make test\n" \
            "    artifact_paths: ['logs/$BUILDKITE_JOB_ID/*.xml']\n" \
            "    plugins: [{docker#v5.12.0: {image: 'img:${TAG}'}}]\n    source_file_dependencies: [src/]\n"
    root = ported(tmp_path, steps)
    result = run(root, "check", "--format", "json")
    assert result.returncode == 0, result.stdout
    found = [(f["code"], f["step"], f["fix"]) for f in json.loads(result.stdout)["findings"]]
    assert len(found) == 1 and found[0][:2] == ("variable-not-expanded", "k")
    assert "BUILDKITE_JOB_ID under the config's 'interpolate:'" in found[0][2]
    (root / ".buildkite/pipegen.yaml").write_text(CONFIG + "interpolate: [BUILDKITE_JOB_ID, TAG]\n")
    result = run(root, "check", "--format", "json")
    assert json.loads(result.stdout)["findings"] == []
