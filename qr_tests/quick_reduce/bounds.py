"""How far the codec may be from exact: per-element bounds derived from each input's own
blocks (spec, "Accuracy"), and the checks that hold a codec or an all-reduce to them."""

from __future__ import annotations

import math

import torch

from qr_tests.quick_reduce.formats import EPS, FORMATS, TINY, UNIT, bits_of
from qr_tests.quick_reduce.inputs import DTYPE_CASTS, KINDS, make_input
from qr_tests.quick_reduce.reference import BITS, FP16_MAX, Codec, Level, simulate_all_reduce

# The spec's relative L2 error of the all-reduce on standard-normal data, per level.
SPEC_REL_L2 = {Level.FP: 2e-4, Level.INT8: 7.5e-3, Level.INT6: 3e-2, Level.INT4: 1.2e-1}


def relative_l2_error(level: Level, dtype, world: int, cast: bool = True, n: int = 1 << 16,
                      seed: int = 0) -> float:
    """Relative L2 error of the one-process all-reduce of `world` standard-normal inputs
    against their exact sum (the spec's "Accuracy" figure)."""
    xs = [make_input("normal", n, dtype, seed + r) for r in range(world)]
    exact = sum(x.double() for x in xs)
    got = simulate_all_reduce(xs, level, cast).double()
    return float((got - exact).norm() / exact.norm())


def _signed_block_max(v: torch.Tensor) -> torch.Tensor:
    """v: [chunk, element, parity]; the block's largest magnitude, negative on a tie."""
    hi, lo = v.amax(1, keepdim=True), v.amin(1, keepdim=True)
    return torch.where(-lo >= hi, lo, hi)


def _pad64(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1).double()
    return torch.nn.functional.pad(flat, (0, -flat.numel() % 64))


def codec_bound(x: torch.Tensor, level: Level, dtype) -> torch.Tensor:
    """Per-element bound on |Q(x) - x| (float64), from x's own blocks.

    Half a step s = |m|/R; for an element of the sign opposite to m, the clamp at R-1
    can cost up to |x|/s - (R-1) steps (a full step for +m in a tie). Then three
    roundings to T before rint and one after (4.1 u |x|), the epsilon added to the
    scale (at most R*eps in x units) and subnormal steps. In fp16, a block whose
    s < 1/65504 has its encoding scale saturated: values shrink by 65504*s."""
    n = x.numel()
    if level is Level.FP:
        return torch.zeros(n, dtype=torch.float64, device=x.device)
    r, u = 2 ** (BITS[level] - 1), UNIT[dtype]
    v = _pad64(x).view(-1, 32, 2)
    m = _signed_block_max(v)
    s = m.abs() / r
    clamp_cost = torch.where(s > 0, v.abs() / s.clamp_min(1e-300) - (r - 1), 0.0)
    h = torch.where(v * m < 0, clamp_cost.clamp_min(0.5), 0.5)
    bound = h * s * (1 + u) + 4.1 * u * v.abs() + _constant_error(level, dtype)
    if dtype == torch.float16:  # enc = 1/s saturates at 65504: q shrinks by 65504*s
        bound = bound + v.abs() * (1 - FP16_MAX * s * (1 - 3 * u)).clamp_min(0)
    return bound.reshape(-1)[:n]


def _constant_error(level: Level, dtype) -> float:
    """The part of the codec bound that does not scale with the block: the epsilon added
    to the scale (at most R*eps in x units, twice) and subnormal steps."""
    r = 2 ** (BITS[level] - 1)
    return 2 * r * EPS[dtype] + (r + 1) * TINY[dtype]


def all_reduce_bound(inputs, level: Level, cast_bf16_to_fp16: bool = True):
    """(exact sum in float64, per-element bound on |result - exact|)."""
    dtype = inputs[0].dtype
    cast = cast_bf16_to_fp16 and dtype == torch.bfloat16
    t = torch.float16 if cast else dtype
    xs = [x.reshape(-1).double() for x in inputs]
    # the bf16 -> fp16 cast, saturating; written here, not taken from the codec
    ws = [x.clamp(-FP16_MAX, FP16_MAX).half().double() if cast else x for x in xs]
    exact = sum(xs)
    e1 = sum(codec_bound(w.to(t), level, t) for w in ws)
    partial = sum(w.abs() for w in ws) + e1
    sum_err = 1.01 * (len(ws) - 1) * UNIT[t] * partial
    reach = sum(ws).abs() + e1 + sum_err  # |S| is at most this
    floor = (sum(ws).abs() - e1 - sum_err).clamp_min(0)  # and at least this
    bound = e1 + sum_err
    if level is not Level.FP:
        n, r, u = reach.numel(), 2 ** (BITS[level] - 1), UNIT[t]

        def block_max(v):
            blocks = torch.nn.functional.pad(v, (0, -n % 64)).view(-1, 32, 2)
            return blocks.amax(1, keepdim=True).expand_as(blocks).reshape(-1)[:n]

        s2 = block_max(reach) / r
        bound = bound + s2 * (1 + u) + 4.1 * u * reach + _constant_error(level, t)
        if t == torch.float16:  # the sum's block may be small enough to saturate enc
            s2_lo = block_max(floor) / r
            bound = bound + reach * (1 - FP16_MAX * s2_lo * (1 - 3 * u)).clamp_min(0)
    if cast:
        bound = bound + sum((w - x).abs() for w, x in zip(ws, xs, strict=False))
        bound = bound + UNIT[torch.bfloat16] * (exact.abs() + bound)
    return exact, bound


def assert_within(actual: torch.Tensor, exact: torch.Tensor, bound: torch.Tensor, what: str) -> None:
    err = (actual.reshape(-1).double() - exact.reshape(-1)).abs()
    bad = ~(err <= bound)  # NaN fails
    if bad.any():
        i = int((err - bound).nan_to_num(math.inf).argmax())
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.numel()} elements outside the codec bound; "
            f"worst at index {i} (chunk {i // 64}, {'odd' if i % 2 else 'even'} block): "
            f"got {float(actual.reshape(-1)[i])!r}, exact {float(exact[i])!r}, "
            f"|error| {float(err[i]):.6g} > bound {float(bound[i]):.6g}")


def check_error_bound(codec: Codec, seed: int, n: int = 6000) -> None:
    """Q(x) within the per-block bound, and each block's signed maximum exact."""
    for level in (Level.INT8, Level.INT6, Level.INT4):
        r = 2 ** (BITS[level] - 1)
        for dtype in FORMATS:
            for j, kind in enumerate(KINDS):
                x = make_input(kind, n, dtype, seed + j)
                q = codec.roundtrip(x, level)
                what = f"Q_{level.name}(x) {dtype} {kind} seed={seed + j}"
                assert_within(q, x.double(), codec_bound(x, level, dtype), what)
                v = _pad64(x).view(-1, 32, 2)
                m = _signed_block_max(v)
                sure = m.abs() / r > 2**13 * EPS[dtype]  # the epsilon cannot move the scale
                at_max = (v == m) & sure
                got = _pad64(q).view(-1, 32, 2)
                if not torch.equal(got[at_max], v[at_max]):
                    raise AssertionError(f"{what}: a block's largest-magnitude element did "
                                         "not come back exactly (it must map to -R)")


def check_all_reduce_bound(codec: Codec, seed: int, n: int = 4096) -> None:
    """The single-process two-shot model with this codec, within the bound."""
    for world in (2, 4):
        for level in Level:
            for dtype, cast in DTYPE_CASTS:
                xs = [make_input("heavy" if r % 2 else "normal", n, dtype, seed + r,
                                 limit=FP16_MAX / world) for r in range(world)]
                got = simulate_all_reduce(xs, level, cast, codec=codec)
                exact, bound = all_reduce_bound(xs, level, cast)
                assert_within(got, exact, bound, f"all-reduce W={world} {level.name} {dtype} "
                                                 f"cast={cast} seed={seed}")


def check_all_reduce_results(results, inputs, level: Level, cast: bool, what: str) -> None:
    """Every rank bit-identical to the single-process model, and within the bound."""
    want = simulate_all_reduce(inputs, level, cast)
    for r, got in enumerate(results):
        if got.dtype != want.dtype or got.shape != want.shape:
            raise AssertionError(f"{what}: rank {r} returned {got.dtype}{tuple(got.shape)}, "
                                 f"want {want.dtype}{tuple(want.shape)}")
        if not torch.equal(bits_of(got), bits_of(want)):
            i = int((bits_of(got) != bits_of(want)).reshape(-1).nonzero()[0])
            raise AssertionError(f"{what}: rank {r} differs from Q(sum Q(x_r)) at index {i}: "
                                 f"{float(got.reshape(-1)[i])!r} vs {float(want.reshape(-1)[i])!r}")
    exact, bound = all_reduce_bound(inputs, level, cast)
    assert_within(want, exact, bound, what)
