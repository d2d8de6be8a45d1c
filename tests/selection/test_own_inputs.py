"""A change to pipegen's own inputs (config, inventory, templates) selects what they shape, and says so."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pipegen.cli import cli
from pipegen.dialects.load import load
from pipegen.model import ChangeSet, Options
from pipegen.selection.decide import decide
from pipegen.selection.inputs import Input, own_inputs, template_inputs

from ..helpers import write_files

INVENTORY = """\
default: cpu
templates:
  box: {kind: docker, image: "img:1"}
families:
  cpu: {vendor: cpu, queue: cpu-q}
  gpu: {vendor: nvidia, arch: sm_90, template: box, queues: {1: gpu-1}}
"""
STEPS = """\
steps:
- {label: On CPU, key: cpu-step, commands: [pytest a], source_file_dependencies: [src/a/]}
- {label: On GPU, key: gpu-step, commands: [pytest b], source_file_dependencies: [src/b/], device: gpu}
- {label: Optional, key: opt, commands: [pytest c], source_file_dependencies: [src/c/], optional: true}
"""


def repo(tmp_path, config="steps: [.buildkite/steps.yaml]\n", inventory_file=".buildkite/hardware.yaml"):
    write_files(tmp_path, {".buildkite/pipegen.yaml": config, ".buildkite/steps.yaml": STEPS,
                           inventory_file: INVENTORY, "ci/templates/docker.j2": "", "ci/templates/macros.j2": ""})
    return tmp_path


def actions(root, files, *args):
    result = CliRunner().invoke(cli, [*args, "--root", str(root), "--files-from", "-"], input=files)
    assert result.exit_code == 0, result.output
    return result


def select(root, files):
    data = json.loads(actions(root, files, "select", "--format", "json").stdout)
    return {s["key"]: (s["action"], s["reasons"][0]["rule"]) for s in data["steps"]}, data


def test_the_config_and_the_inventory_run_everything(tmp_path):
    root = repo(tmp_path)
    for changed in (".buildkite/pipegen.yaml", ".buildkite/hardware.yaml"):
        got, data = select(root, changed + "\n")
        assert data["run_all"] and changed in data["run_all_reason"], data
        assert got == {"cpu-step": ("run", "run-all"), "gpu-step": ("run", "run-all"), "opt": ("block", "optional")}
    assert "the pipegen config" in select(root, ".buildkite/pipegen.yaml\n")[1]["run_all_reason"]
    assert "the hardware inventory" in select(root, ".buildkite/hardware.yaml\n")[1]["run_all_reason"]
    got, data = select(root, "src/a/x.py\n")
    assert not data["run_all"] and got["gpu-step"] == ("block", "no-match")


def test_an_inventory_named_in_the_config_is_the_one_watched(tmp_path):
    root = repo(tmp_path, "steps: [.buildkite/steps.yaml]\nhardware: ./ci/hw.yaml\n", "ci/hw.yaml")
    assert select(root, "ci/hw.yaml\n")[1]["run_all"]
    assert not select(root, ".buildkite/hardware.yaml\n")[1]["run_all"]
    decl = load(str(root))
    assert own_inputs(decl) == (Input(".buildkite/pipegen.yaml", "the pipegen config"),
                                Input("ci/hw.yaml", "the hardware inventory"))


def test_a_template_selects_the_steps_rendered_through_it(tmp_path):
    root = repo(tmp_path)
    render = ["render", "--templates", str(root / "ci" / "templates")]
    result = actions(root, "ci/templates/docker.j2\n", *render, "--unselected", "omit")
    text = result.stdout
    assert "key: gpu-step" in text and "key: cpu-step" not in text, text
    got = {d.step.key: d.reasons[0] for d in decide(load(str(root)), ChangeSet(("ci/templates/docker.j2",)),
                                                       Options(), template_inputs("ci/templates", ["docker.j2"],
                                                                                  {"docker.j2": ["gpu-step"]})).decisions}
    assert got["gpu-step"].rule == "pipegen-input" and "template docker.j2" in got["gpu-step"].text
    assert got["cpu-step"].rule == "no-match"
    # A file the shipped templates do not name (an included macro file) may shape every step.
    assert "everything" not in actions(root, "ci/templates/macros.j2\n", *render).stderr
    text = actions(root, "ci/templates/macros.j2\n", *render, "--unselected", "omit").stdout
    assert "key: gpu-step" in text and "key: cpu-step" in text


def test_template_inputs_are_pure():
    inputs = template_inputs("t", ["command.j2", "docker.j2", "k8s.j2", "x/y.j2"],
                             {"docker.j2": ["a"], "k8s.j2": []})
    assert [(i.entry, i.keys) for i in inputs] == [("t/command.j2", None), ("t/docker.j2", frozenset({"a"})),
                                                   ("t/k8s.j2", frozenset()), ("t/x/y.j2", None)]
    assert template_inputs("../outside", ["command.j2"], {}) == ()


def test_an_input_is_a_path_not_a_glob(tmp_path):
    root = repo(tmp_path, "steps: [.buildkite/steps.yaml]\nhardware: ci/hw[1].yaml\n", "ci/hw[1].yaml")
    assert select(root, "ci/hw[1].yaml\n")[1]["run_all"]
    assert not select(root, "ci/hw1.yaml\n")[1]["run_all"]


def test_the_vllm_presets_config_selects_nothing_but_says_so(tmp_path):
    write_files(tmp_path, {".buildkite/ci_config.yaml": "name: x\njob_dirs: [.buildkite/areas]\n",
                           ".buildkite/areas/a.yaml": STEPS.replace("device: gpu", "device: h100, num_gpus: 1")})
    got, data = select(tmp_path, ".buildkite/ci_config.yaml\n")
    assert not data["run_all"] and {a for a, _ in got.values()} == {"block"}  # as vLLM's generator decides
    assert any(".buildkite/ci_config.yaml changed" in w and "no step runs for it" in w for w in data["warnings"])
    # why says it too (it said only "selects no step"), not the declarations' warnings (num_gpus is ignored).
    text = actions(tmp_path, "", "why", ".buildkite/ci_config.yaml").stdout
    assert text == (".buildkite/ci_config.yaml:\n  warning: .buildkite/ci_config.yaml changed: it is the CI config "
                    "(vLLM's generator reruns nothing for it), which shapes no step here: no step runs for it\n")
