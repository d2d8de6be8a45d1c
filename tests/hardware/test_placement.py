"""Hardware inventory (pipegen/inventory.py) and placing steps on it (pipegen/hardware.py)."""

from __future__ import annotations

import pytest

from pipegen.declarations.yamlio import load_text
from pipegen.errors import DeclarationError
from pipegen.hardware.inventory import load_inventory, parse_inventory, preset_inventory
from pipegen.hardware.placement import place
from pipegen.model import Declarations, Location, Settings, Step
from tests.helpers import FIXTURE

INVENTORY = """
default: h100
no_gpu: cpu
templates:
  rocm: {kind: docker, image: "rocm/ci:$BUILDKITE_COMMIT", devices: [/dev/kfd, /dev/dri]}
families:
  cpu: {vendor: cpu, queue: cpu-q}
  h100: {vendor: nvidia, arch: sm_90, queues: {1: h100-1, 2: h100-2}}
  mi355: {vendor: amd, arch: gfx950, template: rocm, queues: {1: mi355-1, 2: mi355-2, 8: mi355-8}}
routes:
  - {label: ":docker:*", family: cpu}
"""


def inventory():
    return parse_inventory(load_text(INVENTORY, "hw.yaml"), "hw.yaml")


def step(**kw):
    base = {"key": "s", "label": "S", "group": "", "location": Location("steps.yaml", 3, 1)}
    base.update(kw)
    return Step(**base)


def test_mi355_two_gpus_lands_on_its_two_gpu_queue():
    job = place(step(device="mi355", num_devices=2), inventory())
    assert (job.family.name, job.gpus, job.queue, job.vendor, job.arch) == ("mi355", 2, "mi355-2", "amd", "gfx950")
    assert job.template.kind == "docker" and job.template.devices == ("/dev/kfd", "/dev/dri")


def test_pool_name_fixes_the_gpu_count():
    assert place(step(device="mi355_8"), inventory()).queue == "mi355-8"
    assert place(step(device="mi355:2"), inventory()).queue == "mi355-2"


def test_cpu_step_lands_on_cpu_queue_with_zero_gpus():
    job = place(step(device="cpu"), inventory())
    assert (job.queue, job.gpus, job.agents) == ("cpu-q", 0, (("queue", "cpu-q"),))


def test_defaults_routes_and_no_gpu():
    inv = inventory()
    assert place(step(), inv).queue == "h100-1"
    assert place(step(num_devices=2), inv).queue == "h100-2"
    assert place(step(no_gpu=True), inv).queue == "cpu-q"
    assert place(step(label=":docker: build"), inv).family.name == "cpu"


def test_missing_gpu_count_names_step_and_what_is_missing():
    with pytest.raises(DeclarationError) as err:
        place(step(key="big", device="mi355", num_devices=4), inventory())
    text = str(err.value)
    assert "steps.yaml:3" in text and "'big'" in text and "4 GPU" in text and "1, 2, 8" in text


def test_unknown_device_suggests_a_family():
    with pytest.raises(DeclarationError) as err:
        place(step(device="mi35"), inventory())
    assert "mi35" in str(err.value) and "mi355" in str(err.value)


def test_pool_size_must_match_num_devices():
    with pytest.raises(DeclarationError, match="means 8 GPU"):
        place(step(device="mi355_8", num_devices=2), inventory())


def test_gpus_on_a_cpu_family_is_an_error():
    with pytest.raises(DeclarationError, match="no GPUs"):
        place(step(device="cpu", num_devices=2), inventory())


@pytest.mark.parametrize("text, message", [
    ("families: {x: {queue: q}}", "vendor"),
    ("families: {x: {vendor: nvidia, queue: q, agents: {queue: r}}}", "names a queue in 'agents' and in 'queue'"),
    ("families: {x: {vendor: cpu, queues: {2: q}}}", "CPU family"),
    ("families: {x: {vendor: nvidia, queue: q, template: nope}}", "unknown template"),
    ("families: {x: {vendor: nvidia, queue: q, colour: red}}", "unknown family 'x' field"),
    ("families: {x: {vendor: nvidia, queue: q, aliases: [y]}}", "unknown family 'x' field 'aliases'"),
    ("default: y\nfamilies: {x: {vendor: nvidia, queue: q}}", "unknown family 'y'"),
    ("families: {}", "no 'families'"),
])
def test_invalid_inventories_are_clear_errors(text, message):
    with pytest.raises(DeclarationError, match=message):
        parse_inventory(load_text(text, "hw.yaml"), "hw.yaml")


def test_inventory_file_is_read_from_settings_and_default_path(tmp_path):
    (tmp_path / ".buildkite").mkdir()
    (tmp_path / ".buildkite" / "hardware.yaml").write_text(INVENTORY)
    decl = Declarations(steps=(), settings=Settings(), layout="pipegen", root=str(tmp_path))
    assert load_inventory(decl).family("mi355") is not None
    inline = Declarations(steps=(), settings=Settings(hardware_inline=load_text(INVENTORY, "cfg")), layout="pipegen")
    assert load_inventory(inline).default == "h100"


VLLM_TABLE = {
    # (device, num_devices) -> queue, spec point 10 / ci-infra get_agent_queue
    ("h100", None): "mithril-h100-pool",
    ("a100", 2): "a100_queue",
    ("h200", 8): "H200",
    ("b200", None): "B200",
    ("cpu", None): "cpu_queue_premerge_us_east_1",
    ("cpu-small", None): "small_cpu_queue_premerge",
    ("mi300_2", None): "amd_mi300_2",
    ("mi355_8", 8): "amd_mi355_8",
    (None, 2): "gpu_4_queue",
    (None, 4): "gpu_4_queue",
    (None, None): "gpu_1_queue",
    ("intel_gpu", None): "intel-gpu",
    ("h200_18gb", None): "h200_18gb",
    ("b200-k8s", 2): "b200-k8s",
}


@pytest.mark.parametrize("device, count", list(VLLM_TABLE))
def test_vllm_queue_table(device, count):
    assert place(step(device=device, num_devices=count), preset_inventory("vllm")).queue == VLLM_TABLE[(device, count)]


@pytest.mark.parametrize("branch, label, queue", [
    ("feature", ":docker: Build image", "cpu_queue_premerge_us_east_1"),
    ("main", ":docker: Build image", "cpu_queue_postmerge_us_east_1"),
    ("feature", ":docker: Build arm64 image", "arm64_cpu_queue_premerge"),
    ("main", ":docker: Build CPU arm64 image", "arm64_cpu_queue_postmerge"),
])
def test_vllm_docker_builds_go_to_cpu_of_their_arch_and_stage(branch, label, queue):
    from pipegen.hardware.build_context import apply, resolve
    from pipegen.hardware.build_spec import BuildInfo

    inventory = preset_inventory("vllm")
    inventory = apply(inventory, resolve(inventory.build, BuildInfo(branch=branch)))
    assert place(step(label=label), inventory).queue == queue


@pytest.mark.parametrize("config", [None, ".buildkite/test-amd.yaml", "legacy-test-pipeline.yaml"])
def test_every_vllm_step_is_placed(config):
    if not FIXTURE.is_dir():
        pytest.skip(f"vLLM fixture not found at {FIXTURE}")
    from pipegen.dialects.load import load
    from pipegen.hardware.placement import jobs

    decl = load(str(FIXTURE), config)
    placed = jobs(decl, load_inventory(decl))
    assert len(placed) == len(decl.steps)
    assert all(j.queue for j in placed)
    for job in placed:
        if config == ".buildkite/test-amd.yaml":  # legacy AMD: every step's device is its pool, its queue amd_<pool>
            assert job.queue == f"amd_{job.step.device}"
