"""Families chosen by agent tags (not only by queue), and hardware beyond NVIDIA, AMD and CPU."""

from __future__ import annotations

import json

from tests.helpers import assert_valid, by_key, git_repo, invoke

HARDWARE = """
default: linux
families:
  linux: {vendor: cpu}
  cuda: {vendor: nvidia, agents: {queue: juliagpu, cuda: "*"}}
  cuda-sm80: {vendor: nvidia, arch: sm_80, agents: {queue: juliagpu, cuda: "*", cap: sm_80}}
  rocm: {vendor: amd, agents: {rocm: "*"}}
  oneapi: {vendor: intel, agents: {queue: juliagpu, intel: "*"}}
  metal: {vendor: apple, agents: {queue: juliaecosystem, metal: "*"}}
  tpu: {vendor: other, arch: v5e, agents: {tpu: v5e}}
  pod: {vendor: intel, template: k8s, agents: {queue: k8s}}
templates:
  k8s: {kind: kubernetes, pod_spec: {containers: [{image: "img:1"}]}}
"""
STEPS = """
steps:
  - label: Julia
    key: julia
    hardware: [cuda, cuda-sm80, "rocm:2", oneapi, metal, tpu]
    commands: [julia --project -e 'using Pkg; Pkg.test()']
    source_file_dependencies: [src/]
  - label: Docs
    key: docs
    agents: {os: linux}
    commands: [make docs]
    source_file_dependencies: [docs/]
  - label: Pod
    key: pod
    hardware: ["pod:2"]
    commands: ["true"]
    source_file_dependencies: [src/]
"""


def make(tmp_path, hardware=HARDWARE):
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                                        ".buildkite/hardware.yaml": hardware, ".buildkite/steps/ci.yaml": STEPS,
                                        "src/a.jl": "", "docs/index.md": ""})




def test_a_family_chosen_by_tags_puts_exactly_its_tags_on_its_jobs(tmp_path):
    result = invoke(make(tmp_path), "render", "--all")
    assert result.exit_code == 0, result.output
    steps = by_key(assert_valid(result.stdout))
    assert steps["julia-cuda"]["agents"] == {"queue": "juliagpu", "cuda": "*"}
    assert steps["julia-cuda-sm80"]["agents"] == {"queue": "juliagpu", "cuda": "*", "cap": "sm_80"}
    assert steps["julia-rocm"]["agents"] == {"rocm": "*"}  # no queue: the agents' default queue
    assert steps["julia-oneapi"]["agents"] == {"queue": "juliagpu", "intel": "*"}
    assert steps["julia-metal"]["agents"] == {"queue": "juliaecosystem", "metal": "*"}
    assert steps["julia-tpu"]["agents"] == {"tpu": "v5e"}
    # a family without queue or tags: the step's own tags, and no queue the input never had
    assert steps["docs"]["agents"] == {"os": "linux"}
    assert steps["julia-rocm"]["label"] == "Julia (rocm x2)"
    pod = steps["pod"]["plugins"][0]["kubernetes"]["podSpec"]["containers"][0]
    assert pod["resources"]["limits"] == {"gpu.intel.com/i915": 2}  # Intel's device plugin


def test_a_queue_named_twice_is_a_declaration_error(tmp_path):
    root = make(tmp_path, HARDWARE.replace('cuda: {vendor: nvidia, agents: {queue: juliagpu, cuda: "*"}}',
                                           'cuda: {vendor: nvidia, queues: {1: gpu}, agents: {queue: juliagpu}}'))
    result = invoke(root, "render", "--all")
    assert result.exit_code == 2
    assert "hardware.yaml:5" in result.stderr and "family 'cuda' names a queue in 'agents' and in 'queues'" \
        in result.stderr


def test_check_finds_no_missing_queue_for_a_tag_family_at_any_gpu_count(tmp_path):
    root = make(tmp_path)
    result = invoke(root, "check", "--format", "json")
    assert not [f for f in json.loads(result.stdout)["findings"] if f["code"] == "no-queue"], result.stdout


def test_run_never_claims_to_run_intel_apple_or_fleet_hardware_it_cannot_see(tmp_path):
    root = make(tmp_path)
    result = invoke(root, "run", "--step", "julia", "--dry-run", env={"PIPEGEN_HARDWARE": "cpu"})
    assert result.exit_code == 0, result.output
    assert "needs 1 GPU of family oneapi (intel); pipegen run detects only NVIDIA and AMD GPUs (on a machine " \
           "with intel hardware: --hardware intel:ARCH)" in result.stdout
    assert "julia-metal: needs 1 GPU of family metal (apple)" in result.stdout
    assert "julia-tpu: needs 1 GPU of family tpu (v5e)" in result.stdout
    # told what the machine has, run places the step on it
    for spec, target in (("intel:pvc", "oneapi"), ("apple:m2", "metal"), ("other:v5e", "tpu"),
                         ("nvidia:sm_80:1", "cuda")):
        planned = invoke(root, "run", "--step", "julia", "--dry-run", "--hardware", spec)
        assert planned.exit_code == 0, planned.output
        assert f"julia-{target} on {target}" in planned.stdout, (spec, planned.stdout)
    bad = invoke(root, "run", "--step", "julia", "--dry-run", "--hardware", "intel:")
    assert bad.exit_code == 2 and "'intel:pvc'" in bad.stderr
