"""Codec and collective behaviour of the quick-reduce reference."""

from __future__ import annotations

import pytest
import torch

from qr_tests.conftest import BASE_SEED, seed_for
from qr_tests.quick_reduce.bounds import (
    SPEC_REL_L2,
    all_reduce_bound,
    assert_within,
    check_all_reduce_bound,
    check_all_reduce_results,
    check_error_bound,
    relative_l2_error,
)
from qr_tests.quick_reduce.formats import bits_of
from qr_tests.quick_reduce.harness import run_ranks
from qr_tests.quick_reduce.inputs import DTYPE_CASTS, KINDS, make_input
from qr_tests.quick_reduce.known_answers import check_known_answers
from qr_tests.quick_reduce.reference import (
    FP16_MAX,
    REFERENCE,
    SUPPORTED_DTYPES,
    TILE,
    Level,
    simulate_all_reduce,
    tile_bytes,
    two_shot_all_reduce,
)
from qr_tests.quick_reduce.scalar_model import check_scalar_model


# -- codec ----------------------------------------------------------------------------
@pytest.mark.parametrize("level,size", [(Level.FP, 4096), (Level.INT8, 2176),
                                        (Level.INT6, 1664), (Level.INT4, 1152)])
def test_wire_size_per_4kib(level, size):
    assert tile_bytes(level) == size
    for n, tiles in ((TILE, 1), (1, 1), (TILE + 1, 2), (5 * TILE, 5)):
        x = torch.randn(n).half()
        assert REFERENCE.encode(x, level).numel() == tiles * size


def test_known_answers():
    check_known_answers(REFERENCE)


def test_matches_scalar_model(case_seed):
    check_scalar_model(REFERENCE, case_seed)


def test_error_within_per_block_bound(case_seed):
    check_error_bound(REFERENCE, case_seed)


@pytest.mark.parametrize("level", list(Level))
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_deterministic_and_shape_preserving(level, dtype, case_seed):
    x = make_input("heavy", 3 * 1001, dtype, case_seed).view(3, -1)
    a, b = REFERENCE.encode(x, level), REFERENCE.encode(x.clone(), level)
    assert torch.equal(a, b)
    q = REFERENCE.roundtrip(x, level)
    assert q.shape == x.shape and q.dtype == dtype
    assert torch.equal(bits_of(q), bits_of(REFERENCE.roundtrip(x, level)))


@pytest.mark.parametrize("level", [Level.INT8, Level.INT6, Level.INT4])
def test_zero_blocks_and_fp16_saturation(level):
    x = torch.zeros(4 * 64, dtype=torch.float64)
    x[64:128] = FP16_MAX  # a block at the fp16 maximum comes back exactly
    x[128:192:2] = torch.linspace(-FP16_MAX, FP16_MAX, 32, dtype=torch.float64)  # a +-max tie
    q = REFERENCE.roundtrip(x.half(), level).double()
    assert torch.equal(q[:64], torch.zeros(64, dtype=torch.float64))  # all-zero block
    assert torch.equal(q[64:128], x[64:128])
    assert q[128] == -FP16_MAX and q[190] < FP16_MAX  # +max clamps to R-1 steps
    assert torch.isfinite(q).all()


@pytest.mark.parametrize("level", [Level.INT8, Level.INT6, Level.INT4])
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_zero_block_sign_as_the_kernel(level, dtype):
    """An all-+0 block: m = +0, so dec = +0 * -1/R = -0 and its zeros decode to 0 * -0 = -0,
    as on the kernel. A zero block holding a -0 has m = -0: dec = +0, decoded +0. Only the
    sign bit tells these apart (== does not)."""
    x = torch.zeros(128, dtype=dtype)
    x[65] = -0.0  # chunk 1's odd block holds a -0; its even block and chunk 0 are all +0
    scales = REFERENCE.quantize(x, level).scales
    assert scales[:4].signbit().tolist() == [True, True, True, False]
    assert scales[4:].signbit().all()  # the padding's blocks: all +0
    q = REFERENCE.roundtrip(x, level)
    assert q[:65].signbit().all() and not q[65::2].signbit().any() and q[66::2].signbit().all()
    summed = simulate_all_reduce([torch.zeros(64, dtype=dtype)] * 2, level)  # the sum is +0
    assert summed.signbit().all()


def test_all_reduce_sum_saturates_in_fp16():
    xs = [torch.full((64,), 60000.0).half(), torch.full((64,), 60000.0).half()]
    xs[1][::2] = -60000.0
    got = simulate_all_reduce(xs, Level.INT8).double()
    assert torch.equal(got[1::2], torch.full((32,), FP16_MAX, dtype=torch.float64))
    assert torch.equal(got[::2], torch.zeros(32, dtype=torch.float64))


@pytest.mark.parametrize("world", [2, 4, 8])
@pytest.mark.parametrize("level", list(Level))
def test_ones_come_out_exact(level, world):
    """The spec's warning: ones are exact at every level, so they test nothing."""
    xs = [torch.ones(4096, dtype=torch.float16)] * world
    assert torch.equal(simulate_all_reduce(xs, level), torch.full((4096,), float(world)).half())


def test_bf16_cast_saturates():
    """1e5 is beyond fp16: the cast gives +-65504, which cancel. Without the clamp it
    gives +-inf; the sum saturates after each addition and ends at -65504."""
    a = torch.full((64,), 1e5, dtype=torch.bfloat16)
    assert torch.equal(simulate_all_reduce([a, -a], Level.FP), torch.zeros_like(a))


def test_other_dtypes_are_refused():
    with pytest.raises(TypeError, match="takes fp16 or bf16, got torch.float32"):
        simulate_all_reduce([torch.zeros(64), torch.zeros(64)], Level.INT8)


def test_bf16_cast_runs_in_fp16():
    xs = [make_input("normal", 5000, torch.bfloat16, s) for s in (1, 2)]
    got = simulate_all_reduce(xs, Level.INT6, cast_bf16_to_fp16=True)
    via_fp16 = simulate_all_reduce([x.half() for x in xs], Level.INT6).to(torch.bfloat16)
    assert got.dtype == torch.bfloat16 and torch.equal(bits_of(got), bits_of(via_fp16))
    native = simulate_all_reduce(xs, Level.INT6, cast_bf16_to_fp16=False)
    assert not torch.equal(bits_of(native), bits_of(got))


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("level", list(Level))
def test_relative_error_near_spec(level, world, case_seed):
    err = relative_l2_error(level, torch.float16, world, seed=case_seed)
    assert SPEC_REL_L2[level] / 2 < err < SPEC_REL_L2[level] * 2, err


def test_all_reduce_model_within_bound(case_seed):
    check_all_reduce_bound(REFERENCE, case_seed)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("level", list(Level))
def test_bounds_stay_on_the_inputs_device(level, dtype):
    """The torchrun ranks check CUDA tensors: a constant made on the CPU fails there
    (found on 2 H200s). The meta device catches it here, as a device mismatch."""
    xs = [torch.empty(1000, dtype=dtype, device="meta") for _ in range(2)]
    exact, bound = all_reduce_bound(xs, level)
    assert (exact.device.type, bound.device.type, bound.shape) == ("meta", "meta", (1000,))


# -- the collective on several processes -------------------------------------------------
def collective_cases(world: int):
    """(level, dtype, cast, kind, n, seed) per case; seeds fresh per session."""
    lengths = (1, 63, 64, 2049, 6000, 70001)
    cases = []
    for i, (level, (dtype, cast)) in enumerate((lv, c) for lv in Level for c in DTYPE_CASTS):
        kind, n = KINDS[i % len(KINDS)], lengths[(i + world) % len(lengths)]
        cases.append((level, dtype, cast, kind, n, seed_for("collective", world, i)))
    return cases  # messages at the table's minimum sizes: test_rocm_quick_reduce


def case_inputs(case, world):
    level, dtype, cast, kind, n, seed = case
    return [make_input(kind, n, dtype, seed + r, limit=FP16_MAX / world) for r in range(world)]


def collective_worker(ctx, cases):
    ctx.init_process_group()
    if ctx.rank == 0:  # alone: a collective before the TypeError would put ranks out of step
        try:
            two_shot_all_reduce(torch.zeros(64, device=ctx.device), Level.INT8)
            raise AssertionError("a float32 input was all-reduced")
        except TypeError:
            pass
    outs = []
    for case in cases:
        level, dtype, cast = case[:3]
        x = case_inputs(case, ctx.world_size)[ctx.rank].to(ctx.device)
        out = torch.empty_like(x)
        got = two_shot_all_reduce(x, level, cast_bf16_to_fp16=cast, out=out)
        assert got is out
        outs.append(got.cpu())
    return outs


def _check_collective(results, cases, world):
    for i, case in enumerate(cases):
        level, dtype, cast, kind, n, seed = case
        what = (f"W={world} {level.name} {dtype} cast={cast} {kind} n={n} "
                f"seed={seed} (QR_SEED={BASE_SEED})")
        check_all_reduce_results([r[i] for r in results], case_inputs(case, world),
                                 level, cast, what)


@pytest.mark.parametrize("world", [2, 4])
def test_two_shot_on_cpu_ranks(world):
    cases = collective_cases(world)
    _check_collective(run_ranks(collective_worker, world, (cases,), timeout=240), cases, world)


# -- CUDA: bit-identical to the CPU --------------------------------------------------------
@pytest.mark.needs_gpu(vendor="any", count=1)
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_codec_on_gpu_is_bit_identical(dtype, case_seed):
    for level in Level:
        for j, kind in enumerate(KINDS):
            x = make_input(kind, 300_001, dtype, case_seed + j)
            cpu = REFERENCE.encode(x, level)
            gpu = REFERENCE.encode(x.cuda(), level)
            assert torch.equal(gpu.cpu(), cpu), f"{level.name} {dtype} {kind} wire bytes"
            back = REFERENCE.decode(gpu, level, dtype, x.numel()).cpu()
            want = REFERENCE.decode(cpu, level, dtype, x.numel())
            assert torch.equal(bits_of(back), bits_of(want))


@pytest.mark.needs_gpu(vendor="any", count=1)
def test_one_process_run_on_gpu():
    cases = collective_cases(1)
    _check_collective(run_ranks(collective_worker, 1, (cases,), gpus=[0], timeout=240),
                      cases, 1)


@pytest.mark.needs_gpu(vendor="any", count=2)
def test_two_shot_on_gpu_ranks():
    cases = collective_cases(2)
    _check_collective(run_ranks(collective_worker, 2, (cases,), gpus=[0, 1], timeout=240),
                      cases, 2)


@pytest.mark.parametrize("world,err", [(2, 2.5), (4, 5.0), (8, 10.0)])
def test_vllm_pattern_int4_error(world, err):
    """vLLM's `i % 23` input: the INT4 error is exactly atol=2.5 at W=2 (spec), so that
    tolerance passes a codec one step worse; the per-element bound still covers it."""
    xs = [(torch.arange(4096) % 23).half()] * world
    exact, bound = all_reduce_bound(xs, Level.INT4)
    got = simulate_all_reduce(xs, Level.INT4).double()
    assert float((got - exact).abs().max()) == err
    assert_within(got, exact, bound, f"i % 23, W={world}")
