"""The communicator: platform gates, on CPU ranks with an injected MI300 platform, and the
ROCm-only end-to-end checks (the reference and vLLM's kernels on real GPUs)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch
import torch.distributed as dist

from qr_tests.conftest import seed_for
from qr_tests.quick_reduce.bounds import all_reduce_bound, assert_within
from qr_tests.quick_reduce.communicator import (
    ENV_CAST,
    ENV_MIN,
    ENV_QUANTIZATION,
    MB,
    Platform,
    QuickAllReduce,
    accelerated_quick_all_reduce,
    detect_platform,
    min_size_for,
)
from qr_tests.quick_reduce.formats import bits_of
from qr_tests.quick_reduce.harness import cpu_group, run_ranks
from qr_tests.quick_reduce.inputs import DTYPE_CASTS, make_input
from qr_tests.quick_reduce.reference import Level, simulate_all_reduce

MI300 = Platform(is_rocm=True, arch="gfx942:sramecc+:xnack-", kernels_available=True,
                 is_fully_connected=lambda ids: True, hostname="node0")


# -- platform gates -------------------------------------------------------------------
@pytest.mark.parametrize("platform,reason", [
    (Platform(), "needs ROCm"),
    (replace(MI300, is_rocm=False), "needs ROCm"),
    (replace(MI300, arch="gfx90a:sramecc+:xnack-"), "arch='gfx90a"),
    (replace(MI300, arch="gfx1100"), "arch='gfx1100'"),
    (replace(MI300, kernels_available=False), "kernels are not available"),
])
def test_platform_gates(platform, reason):
    # these checks come first, before any env parsing: a bad value is not read
    comm = QuickAllReduce(None, "cpu", platform=platform, environ={ENV_QUANTIZATION: "bad"})
    assert comm.disabled and reason in comm.disabled_reason
    assert not comm.should_quick_allreduce(torch.empty(2 * MB, dtype=torch.float16, device="meta"))


def test_real_detection_here_is_guarded():
    platform = detect_platform()
    if platform.arch_supported and platform.kernels_available:
        pytest.skip("a quick-reduce capable ROCm agent: the end-to-end tests cover it")
    comm = QuickAllReduce(None, "cpu")
    assert comm.disabled and comm.disabled_reason


def test_conformance_hook_explains_absence():
    cls, why = accelerated_quick_all_reduce()
    if cls is not None:
        pytest.skip("vLLM is installed here: the ROCm tests use it")
    assert why.startswith("vLLM's QuickAllReduce is not importable here")


def nccl_group_worker(ctx):
    ctx.init_process_group()  # on a GPU rank: NCCL for WORLD
    try:
        QuickAllReduce(dist.group.WORLD, ctx.device, platform=MI300)
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.needs_gpu(vendor="any", count=1)
def test_nccl_group_is_refused():
    [message] = run_ranks(nccl_group_worker, 1, gpus=[0], timeout=120)
    assert message and message.startswith("QuickAllReduce needs a CPU (gloo) group")


# -- the communicator on CPU ranks, with the platform injected ---------------------------
LEVEL_COMBOS = [(level, dtype, cast) for level in Level for dtype, cast in DTYPE_CASTS]


def communicator_input(i: int, dtype, seed: int, rank: int) -> torch.Tensor:
    """Rank `rank`'s input for the i-th of LEVEL_COMBOS (the ranks and the check agree)."""
    return make_input("heavy", 4096 + 64 * i, dtype, seed + 100 * i + rank)


def min_size_input(world: int, seed: int, rank: int) -> torch.Tensor:
    """Rank `rank`'s fp16 input of exactly the table's INT4 minimum."""
    n = min_size_for(torch.float16, world, Level.INT4, True) // 2
    return make_input("normal", n, torch.float16, seed + rank)


def communicator_worker(ctx, seed):
    ctx.init_process_group()
    group, world, rank = cpu_group(), ctx.world_size, ctx.rank
    report = {}

    def reason(quant=None, platform=MI300, model_dtype=None):
        env = {} if quant is None else {ENV_QUANTIZATION: quant}
        return QuickAllReduce(group, "cpu", platform=platform, environ=env,
                              model_dtype=model_dtype).disabled_reason

    asked = []

    def not_fully_connected(ids):
        asked.append(ids)
        return False

    report["mesh"] = reason("INT4", replace(MI300, is_fully_connected=not_fully_connected,
                                            physical_device_id=10 + rank))
    report["mesh_ids"] = asked
    # a bad value is not read: the node check comes before the environment
    report["nodes"] = reason("bad", replace(MI300, hostname=f"node{rank}"))
    report["none"] = reason()
    report["fp32"] = reason("INT8", model_dtype=torch.float32)
    try:
        reason("int4")
    except ValueError as e:
        report["invalid"] = str(e)
    if world == 4:
        sub = dist.new_group([0, 1, 2], backend="gloo")
        if rank < 3:
            report["world3"] = QuickAllReduce(sub, "cpu", platform=MI300,
                                              environ={ENV_QUANTIZATION: "INT4"}).disabled_reason
    outs = []
    for i, (level, dtype, cast) in enumerate(LEVEL_COMBOS):
        env = {ENV_QUANTIZATION: level.name, ENV_CAST: str(int(cast)), ENV_MIN: "0"}
        comm = QuickAllReduce(group, "cpu", platform=MI300, environ=env)
        assert not comm.disabled and comm.use_fp16_kernels is cast, comm.disabled_reason
        x = communicator_input(i, dtype, seed, rank)
        assert comm.should_quick_allreduce(x)
        outs.append(comm.quick_all_reduce(x))
        out = torch.empty_like(x)
        assert comm.quick_all_reduce(x, out=out) is out and torch.equal(out, outs[-1])
        comm.close()
        assert comm.disabled and not comm.should_quick_allreduce(x)
        try:
            comm.quick_all_reduce(x)
            raise AssertionError("a closed communicator ran")
        except RuntimeError:
            pass
    # the table's own minimum, at a real size
    comm = QuickAllReduce(group, "cpu", platform=MI300, environ={ENV_QUANTIZATION: "INT4"})
    x = min_size_input(world, seed, rank)
    assert comm.should_quick_allreduce(x) and not comm.should_quick_allreduce(x[8:])
    outs.append(comm.quick_all_reduce(x))
    return report, outs


@pytest.mark.parametrize("world", [2, 4])
def test_communicator_on_cpu_ranks(world):
    seed = seed_for("communicator", world)
    results = run_ranks(communicator_worker, world, (seed,), timeout=240)
    for report, _ in results:
        assert (report["mesh"] == "") is (world == 2)
        if world == 4:
            assert report["mesh"] == "more than two GPUs that are not fully connected"
            assert report["mesh_ids"] == [[10, 11, 12, 13]]  # the group's, gathered
        assert report["nodes"] == "the group spans nodes"
        assert report["none"] == f"{ENV_QUANTIZATION}=NONE"
        assert "float32" in report["fp32"]
        assert report["invalid"].startswith(f"Invalid value 'int4' for {ENV_QUANTIZATION}")
    if world == 4:
        assert [r[0]["world3"] for r in results[:3]] == ["world size 3 not in (2, 4, 8)"] * 3
    for i, (level, dtype, cast) in enumerate(LEVEL_COMBOS):
        xs = [communicator_input(i, dtype, seed, r) for r in range(world)]
        want = simulate_all_reduce(xs, level, cast)
        for rank, (_, outs) in enumerate(results):
            assert torch.equal(bits_of(outs[i]), bits_of(want)), f"{level.name} {dtype} rank {rank}"
    want = simulate_all_reduce([min_size_input(world, seed, r) for r in range(world)],
                               Level.INT4)
    assert all(torch.equal(bits_of(outs[-1]), bits_of(want)) for _, outs in results)


# -- ROCm agents: the real platform, and vLLM's kernels against the reference --------------
def rocm_worker(ctx, seed, use_vllm):
    """On each GPU rank: run the reference (ours) or vLLM's QuickAllReduce per level."""
    ctx.init_process_group()  # RCCL for the GPU tensors
    torch.cuda.set_device(0)
    group, world = cpu_group(), ctx.world_size
    cls = QuickAllReduce
    if use_vllm:
        cls, why = accelerated_quick_all_reduce()
        if cls is None:
            return {"skip": why}
    outs, policy = {}, {}
    for level in Level:
        for dtype, cast in DTYPE_CASTS:
            os.environ.update({ENV_QUANTIZATION: level.name, ENV_CAST: str(int(cast))})
            comm = cls(group, torch.device(ctx.device))
            if comm.disabled:
                return {"skip": f"{cls.__module__}.QuickAllReduce is disabled on this agent"
                                f" ({getattr(comm, 'disabled_reason', 'see its log')})"}
            lo = min_size_for(dtype, world, level, cast)
            x = make_input("normal", lo // 2, dtype, seed + ctx.rank).cuda()
            probe = [torch.empty(n // 2, dtype=dtype, device="cuda") for n in (lo - 16, lo)]
            policy[(level, dtype, cast)] = [comm.should_quick_allreduce(p) for p in probe]
            outs[(level, dtype, cast)] = comm.quick_all_reduce(x).cpu()
            comm.close()
    return {"outs": outs, "policy": policy}


def _run_on_rocm(use_vllm: bool):
    seed = seed_for("rocm", use_vllm)
    results = run_ranks(rocm_worker, 2, (seed, use_vllm), gpus=[0, 1], timeout=400)
    if "skip" in results[0]:
        pytest.skip(results[0]["skip"])
    return seed, results


@pytest.mark.needs_gpu(vendor="amd", count=2)
def test_reference_on_rocm_is_bit_identical_to_cpu():
    seed, results = _run_on_rocm(use_vllm=False)
    for level, dtype, cast in results[0]["outs"]:
        n = min_size_for(dtype, 2, level, cast) // 2
        want = simulate_all_reduce([make_input("normal", n, dtype, seed + r) for r in (0, 1)],
                                   level, cast)
        for res in results:
            assert torch.equal(bits_of(res["outs"][(level, dtype, cast)]), bits_of(want))


@pytest.mark.needs_gpu(vendor="amd", count=2)
def test_vllm_quick_all_reduce_conforms_to_reference():
    seed, results = _run_on_rocm(use_vllm=True)
    for key, got in results[0]["outs"].items():
        level, dtype, cast = key
        assert results[0]["policy"][key] == [False, True], f"vLLM's min size for {key}"
        n = min_size_for(dtype, 2, level, cast) // 2
        xs = [make_input("normal", n, dtype, seed + r) for r in (0, 1)]
        exact, bound = all_reduce_bound(xs, level, cast)
        for rank, res in enumerate(results):
            assert_within(res["outs"][key], exact, bound,
                          f"vLLM {level.name} {dtype} cast={cast} rank {rank}")
        assert torch.equal(bits_of(results[1]["outs"][key]), bits_of(got)), "ranks differ"
