"""Bad declarations: one clear message (file, line, fix), exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from pipegen.dialects.load import load
from tests.helpers import git_repo

CONFIG = "steps: [.buildkite/steps]\n"
GOOD_STEP = """\
steps:
- label: Unit tests
  key: unit
  commands: [pytest tests]
  source_file_dependencies: [src/]
"""


def write(root, steps_yaml, config=CONFIG):
    (root / ".buildkite" / "steps").mkdir(parents=True, exist_ok=True)
    (root / ".buildkite" / "pipegen.yaml").write_text(config)
    (root / ".buildkite" / "steps" / "main.yaml").write_text(textwrap.dedent(steps_yaml))


def run_select(root):
    return CliRunner().invoke(cli, ["select", "--root", str(root), "--files-from", "/dev/null"])


BAD = {
    "yaml syntax": ("group: G\nsteps:\n- label: [unclosed\n", "main.yaml:4", "YAML syntax error"),
    "wrong type": ("steps:\n- label: x\n  timeout_in_minutes: soon\n", "main.yaml:3:3", "whole number"),
    "unknown field": ("steps:\n- label: x\n  comands: [ls]\n", "main.yaml:3:3", "did you mean 'commands'?"),
    "duplicate yaml key": ("steps:\n- label: x\n  commands: [a]\n  commands: [b]\n", "main.yaml:4:3",
                           "duplicate key 'commands'"),
    "duplicate step key": ("steps:\n- label: x\n  key: k\n- label: y\n  key: k\n", "main.yaml:4:3",
                           "duplicate step key 'k'"),
    "dangling depends_on": ("steps:\n- label: x\n  key: k\n  depends_on: [bulid]\n- label: build\n  key: build\n",
                            "main.yaml:2:3", "depends on unknown step 'bulid'"),
    "cycle": ("steps:\n- {label: a, key: a, depends_on: [b]}\n- {label: b, key: b, depends_on: [a]}\n",
              "main.yaml", "dependency cycle"),
    "concurrency alone": ("steps:\n- label: x\n  concurrency: 1\n", "main.yaml:3:3", "concurrency_group"),
    "num_nodes alone": ("steps:\n- label: x\n  num_nodes: 2\n", "main.yaml:3:3", "requires 'num_devices'"),
    "no label": ("steps:\n- key: x\n", "main.yaml:2:3", "no 'label'"),
    "steps not a list": ("steps: 3\n", "main.yaml", "'steps:' list"),
    "file not a mapping": ("- label: x\n", "main.yaml:1:1", "a steps file must be a mapping, got a list"),
    "bad hardware": ("steps:\n- label: x\n  hardware: ['h100:two']\n", "main.yaml:3:3", "FAMILY:GPUS"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_declaration_is_one_clear_error(tmp_path, name):
    steps, where, message = BAD[name]
    write(tmp_path, steps)
    result = run_select(tmp_path)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit), result.exception  # exited cleanly, no uncaught error
    assert where in result.output and message in result.output, result.output
    assert result.output.count("pipegen: error") == 1


def test_did_you_mean_in_config(tmp_path):
    write(tmp_path, GOOD_STEP, config="steps: [.buildkite/steps]\nbase_brnach: main\n")
    result = run_select(tmp_path)
    assert result.exit_code == 2 and "did you mean 'base_branch'?" in result.output
    assert "pipegen.yaml:2:1" in result.output


def test_missing_steps_folder_and_config(tmp_path):
    write(tmp_path, GOOD_STEP, config="steps: [.buildkite/nope]\n")
    assert "steps path not found: .buildkite/nope" in run_select(tmp_path).output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_select(empty)
    assert result.exit_code == 2 and "no CI configuration found" in result.output and "--config" in result.output


def test_no_config_after_an_import_names_the_file_import_wrote(tmp_path, monkeypatch):
    """A new user's first mistake: `pipegen import`, then `pipegen select` with no --config."""
    git_repo(tmp_path, {".buildkite/pipeline.yml": "steps:\n  - label: unit\n    command: pytest\n"})
    monkeypatch.chdir(tmp_path)
    imported = CliRunner().invoke(cli, ["import", ".buildkite/pipeline.yml"])
    assert imported.exit_code == 0, imported.output
    result = run_select(tmp_path)
    assert result.exit_code == 2 and "pass --config .buildkite/pipegen/pipegen.yaml" in result.output
    named = CliRunner().invoke(cli, ["select", "--root", str(tmp_path), "--files-from", "/dev/null",
                                     "--config", ".buildkite/pipegen/pipegen.yaml"])
    assert named.exit_code == 0, named.output


def test_error_as_subprocess_has_no_traceback(tmp_path):
    write(tmp_path, "steps:\n- label: x\n  comands: [ls]\n")
    proc = subprocess.run([sys.executable, "-m", "pipegen", "select", "--files-from", "/dev/null"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "did you mean 'commands'" in proc.stderr


def test_vllm_files_warn_on_ignored_fields_and_pipegen_files_fail(tmp_path):
    (tmp_path / ".buildkite" / "areas").mkdir(parents=True)
    (tmp_path / ".buildkite" / "ci_config.yaml").write_text("name: x\njob_dirs: [.buildkite/areas]\n")
    (tmp_path / ".buildkite" / "areas" / "0.yaml").write_text("group: B\nsteps:\n- label: Build\n  key: build\n")
    (tmp_path / ".buildkite" / "areas" / "a.yaml").write_text(
        "group: A\ndepends_on: [build]\nsteps:\n- label: Other\n  key: other\n  depends_on: []\n"
        "- label: T\n  num_gpus: 2\n  commands: [pytest]\n")
    decl = load(str(tmp_path))
    assert [w.code for w in decl.warnings] == ["ignored-field"]
    assert "num_gpus" in str(decl.warnings[0]) and "use 'num_devices'" in str(decl.warnings[0])
    assert ".buildkite/areas/a.yaml:8:3" in str(decl.warnings[0])
    t = decl.by_key()["t"]
    # vLLM: the file-level depends_on fills in, the working dir defaults, the file itself is a dependency.
    assert t.depends_on == ("build",) and t.working_dir == "/vllm-workspace/tests"
    assert t.dependencies == (".buildkite/areas/a.yaml",)
    write(tmp_path, "steps:\n- label: T\n  num_gpus: 2\n")
    assert "unknown step field 'num_gpus'" in run_select(tmp_path).output


def test_fan_out_and_mirror_expand_to_steps(tmp_path):
    write(tmp_path, """\
        group: Suites
        steps:
        - label: QR
          key: qr
          hardware: [cpu, 'mi300:2', 'mi300:8']
          source_file_dependencies: [qr/]
        - label: Engine
          device: h100
          mirror:
            amd:
              device: mi325_1
              source_file_dependencies: [rocm/]
        """)
    decl = load(str(tmp_path))
    keys = {s.key: s for s in decl.steps}
    assert set(keys) == {"qr-cpu", "qr-mi300-x2", "qr-mi300-x8", "engine", "amd-engine"}
    assert keys["qr-mi300-x8"].num_devices == 8 and keys["qr-mi300-x8"].origin == "qr"
    mirror = keys["amd-engine"]
    assert mirror.dependencies == ("rocm/", ".buildkite/steps/main.yaml")
    assert mirror.depends_on == () and mirror.group == "Hardware-AMD Tests" and mirror.mirror == "amd"


def test_a_relative_root_finds_the_steps_folder(tmp_path, monkeypatch):
    """`--root ../other-checkout`: the steps folder's files were once joined to the root twice."""
    (tmp_path / "repo").mkdir()
    write(tmp_path / "repo", "steps:\n- label: A\n  key: a\n  source_file_dependencies: [a/]\n")
    monkeypatch.chdir(tmp_path)
    decl = load("repo")
    assert [s.key for s in decl.steps] == ["a"] and decl.files[-1] == ".buildkite/steps/main.yaml"


def test_yaml_merge_keys_may_be_overridden_but_not_repeated():
    from pipegen.declarations.yamlio import load_text
    from pipegen.errors import DeclarationError

    data = load_text("base: &b {timeout_in_minutes: 5, label: x}\nstep:\n  <<: *b\n  label: y\n", "f.yaml")
    assert data["step"] == {"timeout_in_minutes": 5, "label": "y"}
    with pytest.raises(DeclarationError, match="duplicate key 'label'"):
        load_text("step:\n  <<: {label: x}\n  label: y\n  label: z\n", "f.yaml")


def test_config_from_environment(tmp_path):
    write(tmp_path, GOOD_STEP)
    (tmp_path / "other.yaml").write_text(CONFIG)
    result = CliRunner().invoke(cli, ["select", "--root", str(tmp_path), "--files-from", "-", "--format", "json"],
                                input="src/x.py\n", env={"PIPEGEN_CONFIG": "missing.yaml"})
    assert result.exit_code == 2 and "config file not found: missing.yaml" in result.output
    result = CliRunner().invoke(cli, ["select", "--root", str(tmp_path), "--files-from", "-", "--format", "json"],
                                input="src/x.py\n", env={"PIPEGEN_CONFIG": "other.yaml"})
    assert result.exit_code == 0 and '"action": "run"' in result.output


def test_an_empty_label_name_is_refused(tmp_path):
    """A build without labels reads as one empty label: `"": {run_all: true}` ran everything on every build."""
    write(tmp_path, GOOD_STEP, config=CONFIG + 'labels:\n  "": {run_all: true}\n')
    result = run_select(tmp_path)
    assert result.exit_code == 2 and "pipegen.yaml:3:3: a label name is empty" in result.output, result.output
