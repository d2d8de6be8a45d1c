"""The suite's checks, written independently of the codec they judge.

- `scalar_encode`: a plain-Python model of the spec and the documented wire format
  (no torch, one value at a time), the oracle for bit-exact comparisons.
- `codec_bound` / `all_reduce_bound`: per-element error bounds derived from the
  codec per block (spec, "Accuracy"), from the inputs alone.
- `check_*`: each takes a codec and raises AssertionError with the evidence; the
  mutation tests run them against deliberately wrong codecs.
"""

from __future__ import annotations

import math
import struct

import torch

from qr_tests.quick_reduce import BITS, FP16_MAX, TILE, Codec, Level, simulate_all_reduce

# (significand bits, min normal exponent, max finite, saturates)
FORMATS = {
    torch.float16: (11, -14, FP16_MAX, True),
    torch.bfloat16: (8, -126, (2 - 2**-7) * 2.0**127, False),
}
UNIT = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}  # unit roundoff
TINY = {torch.float16: 2.0**-24, torch.bfloat16: 2.0**-133}  # smallest subnormal
# The epsilon added to the scale: 2^-24 in fp16, T(1e-7) = 0x33D7 in bf16.
EPS = {torch.float16: 2.0**-24, torch.bfloat16: 215 * 2.0**-31}
# The (dtype, bf16->fp16 cast) combinations the suite runs: the cast only acts on bf16.
DTYPE_CASTS = ((torch.float16, True), (torch.bfloat16, True), (torch.bfloat16, False))
KINDS = ("normal", "heavy", "ties", "zero_blocks", "extremes", "mixed_scales")
# The spec's relative L2 error of the all-reduce on standard-normal data, per level.
SPEC_REL_L2 = {Level.FP: 2e-4, Level.INT8: 7.5e-3, Level.INT6: 3e-2, Level.INT4: 1.2e-1}


# -- plain-Python model ---------------------------------------------------------------
def round_t(v: float, dtype) -> float:
    """Round a Python float to T, half to even; fp16 overflow saturates."""
    p, emin, maxv, saturate = FORMATS[dtype]
    if v == 0 or math.isnan(v):
        return v
    if not math.isinf(v):
        quantum = 2.0 ** (max(math.frexp(v)[1] - 1, emin) - (p - 1))
        v = math.copysign(round(v / quantum) * quantum, v)  # keeps -0
    if abs(v) > maxv:
        v = math.copysign(maxv if saturate else math.inf, v)
    return v


def _t_bytes(v: float, dtype) -> bytes:
    if dtype == torch.float16:
        return struct.pack("<e", v)
    return struct.pack("<f", v)[2:]  # v is a bf16 value: the top half of its fp32 bits


def _scalar_block(block, bits, dtype):
    r = 2 ** (bits - 1)
    amax = max(abs(v) for v in block)
    m = -amax if -amax in block else amax
    dec = round_t(m * (-1.0 / r), dtype)
    d = round_t(dec + EPS[dtype], dtype)
    enc = round_t(1.0 / d if d else math.inf, dtype)
    codes = [int(round(min(max(round_t(v * enc, dtype), -r), r - 1))) + r for v in block]
    return codes, dec


def scalar_encode(values, level: Level, dtype) -> tuple[bytes, list[float]]:
    """(wire bytes, decoded values) of a message, one element at a time."""
    vals = [float(v) for v in values]
    n = len(vals)
    vals += [0.0] * (-n % TILE)
    if level is Level.FP:
        return b"".join(_t_bytes(v, dtype) for v in vals), vals[:n]
    bits, r = BITS[level], 2 ** (BITS[level] - 1)
    out, decoded = bytearray(), [0.0] * len(vals)
    for t0 in range(0, len(vals), TILE):
        codes, scales = [0] * TILE, []
        for c in range(0, TILE, 64):
            for parity in (0, 1):
                idx = [t0 + c + parity + 2 * i for i in range(32)]
                block_codes, dec = _scalar_block([vals[i] for i in idx], bits, dtype)
                scales.append(dec)
                for i, code in zip(idx, block_codes):
                    codes[i - t0] = code
                    decoded[i] = round_t((code - r) * dec, dtype)
        if bits == 8:
            out += bytes(codes)
        else:
            out += bytes((codes[2 * j] & 15) | (codes[2 * j + 1] & 15) << 4 for j in range(TILE // 2))
            if bits == 6:
                out += bytes(sum((codes[4 * k + i] >> 4) << (2 * i) for i in range(4))
                             for k in range(TILE // 4))
        out += b"".join(_t_bytes(s, dtype) for s in scales)
    return bytes(out), decoded[:n]


# -- inputs ---------------------------------------------------------------------------
def make_input(kind: str, n: int, dtype, seed: int, limit: float | None = None) -> torch.Tensor:
    """Random test input of one of KINDS; |values| <= limit (default: T's max)."""
    g = torch.Generator().manual_seed(seed)
    k = -(-n // 64) * 64
    x = torch.randn(k, generator=g, dtype=torch.float64)
    blocks = x.view(-1, 32, 2)  # [chunk, element, parity]
    if kind == "heavy":
        x *= torch.exp(2 * torch.randn(k, generator=g, dtype=torch.float64))
    elif kind == "ties":  # +a and -a, the block's largest magnitudes, at random places
        a = blocks.abs().amax(1) * 1.25
        blocks[:, 0, :], blocks[:, 1, :] = a, -a
        perm = torch.rand(blocks.shape, generator=g).argsort(1)
        blocks.copy_(blocks.gather(1, perm))
    elif kind == "zero_blocks":
        blocks *= (torch.rand(blocks.shape[0], 1, 2, generator=g) > 0.4)
    elif kind == "mixed_scales":
        blocks *= 2.0 ** torch.randint(-12, 12, (blocks.shape[0], 1, 2), generator=g)
    elif kind == "extremes":
        big = FORMATS[dtype][2] if limit is None else limit
        pick = torch.randint(0, 4, (blocks.shape[0], 1, 2), generator=g)
        near_max = big * (1 - 0.05 * torch.rand(blocks.shape, generator=g, dtype=torch.float64))
        near_max *= torch.sign(blocks)
        near_max[:, 0, :] = big  # the exact maximum, e.g. 65504
        tiny = blocks * 2.0**-20  # subnormal in fp16
        blocks.copy_(torch.where(pick == 0, near_max, torch.where(pick == 1, tiny, blocks)))
    elif kind != "normal":
        raise ValueError(f"unknown input kind {kind!r}")
    hi = FORMATS[dtype][2] if limit is None else limit
    return x[:n].clamp(-hi, hi).to(dtype)


def relative_l2_error(level: Level, dtype, world: int, cast: bool = True, n: int = 1 << 16,
                      seed: int = 0) -> float:
    """Relative L2 error of the one-process all-reduce of `world` standard-normal inputs
    against their exact sum (the spec's "Accuracy" figure)."""
    xs = [make_input("normal", n, dtype, seed + r) for r in range(world)]
    exact = sum(x.double() for x in xs)
    got = simulate_all_reduce(xs, level, cast).double()
    return float((got - exact).norm() / exact.norm())


# -- bounds ---------------------------------------------------------------------------
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
        bound = bound + sum((w - x).abs() for w, x in zip(ws, xs))
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


# -- checks on a codec ----------------------------------------------------------------
# Hand-computed known answers (fp16 and bf16 alike: every value below is exact in
# both): (even-block values, odd-block values, {byte offset: expected bytes},
# fill byte of the rest of the codes, decoded even, decoded odd).
KNOWN_ANSWERS = {
    # even: m=4, dec=-0.5, enc=-2; 0.75 -> -1.5 -> -2 and -1.25 -> 2.5 -> 2 (half to
    # even); -3.75 -> 7.5 -> 8, clamped to 7. odd: tie 2/-2 -> m=-2, dec=0.25, enc=4;
    # +2 -> 8, clamped to 7. Byte j: element 2j in the low nibble, 2j+1 in the high.
    Level.INT4: ([4, 1, 0.75, 1.25, -1.25, -3.75], [2, -2, 0.5, 0.125],
                 {0: "f0 06 a6 86 8a 8f"}, 0x88,
                 [4, 1, 1, 1, -1, -3.5], [1.75, -2, 0.5, 0]),
    # even: m=4, dec=-0.125, enc=-8; 0.1875 -> -1.5 -> -2; -3.9375 -> 31.5 -> 32 -> 31.
    # odd: m=-2, dec=0.0625, enc=16; 0.15625 -> 2.5 -> 2. Low nibbles as INT4, then
    # from byte 1024 the top 2 bits, element 4k+i at bits 2i of byte k.
    Level.INT6: ([4, 1, 0.1875, -3.9375], [2, -2, 0.15625],
                 {0: "f0 08 2e 0f", 1024: "1c b9"}, None,
                 [4, 1, 0.25, -3.875], [1.9375, -2, 0.125]),
    # even: m=4, dec=-1/32, enc=-32; 0.046875 -> -1.5 -> -2; -3.984375 -> 127.5 -> 127.
    # odd: m=-1, dec=1/128, enc=128. One byte per code.
    Level.INT8: ([4, 0.046875, -3.984375], [1, -1],
                 {0: "00 ff 7e 00 ff"}, 0x80,
                 [4, 0.0625, -3.96875], [0.9921875, -1]),
}
KAT_SCALES = {  # the first two scales (even, odd block), little-endian T
    (Level.INT4, torch.float16): "00 b8 00 34", (Level.INT4, torch.bfloat16): "00 bf 80 3e",
    (Level.INT6, torch.float16): "00 b0 00 2c", (Level.INT6, torch.bfloat16): "00 be 80 3d",
    (Level.INT8, torch.float16): "00 a8 00 20", (Level.INT8, torch.bfloat16): "00 bd 00 3c",
}


def _chunk(even, odd) -> torch.Tensor:
    x = torch.zeros(64, dtype=torch.float64)
    x[0:2 * len(even):2] = torch.tensor(even, dtype=torch.float64)
    x[1:2 * len(odd):2] = torch.tensor(odd, dtype=torch.float64)
    return x


def _hex(data) -> str:
    return " ".join(f"{b:02x}" for b in bytes(data))


def check_known_answers(codec: Codec) -> None:
    for (level, dtype), scale_hex in KAT_SCALES.items():
        even, odd, at, fill, dec_even, dec_odd = KNOWN_ANSWERS[level]
        x = _chunk(even, odd).to(dtype)
        got = bytes(codec.encode(x, level).tolist())
        body = TILE * BITS[level] // 8
        want = bytearray([fill if fill is not None else 0] * body + [0] * 128)
        if level is Level.INT6:  # zero codes are 32: low nibble 0, top bits 2
            want[1024:1536] = b"\xaa" * 512
        for offset, text in at.items():
            want[offset:offset + len(bytes.fromhex(text))] = bytes.fromhex(text)
        want[body:body + 4] = bytes.fromhex(scale_hex)
        if got != bytes(want):
            diff = next(i for i in range(len(want)) if i >= len(got) or got[i] != want[i])
            raise AssertionError(f"{level.name} {dtype} known answer: wire bytes differ at "
                                 f"offset {diff}: got {_hex(got[diff:diff + 8])}, "
                                 f"want {_hex(want[diff:diff + 8])}")
        decoded = codec.decode(codec.encode(x, level), level, dtype, 64).double()
        want_dec = _chunk(dec_even, dec_odd)
        if not torch.equal(decoded, want_dec):
            raise AssertionError(f"{level.name} {dtype} known answer: decoded "
                                 f"{decoded[:12].tolist()}, want {want_dec[:12].tolist()}")


def check_scalar_model(codec: Codec, seed: int) -> None:
    """Bit-exact agreement with the plain-Python model, two kinds per level and dtype."""
    for i, (level, dtype) in enumerate((lv, dt) for lv in Level for dt in FORMATS):
        for kind in (KINDS[i % len(KINDS)], KINDS[(i + 3) % len(KINDS)]):
            n = 2048 + (seed + i) % 97  # not a multiple of 64: a padded second tile
            x = make_input(kind, n, dtype, seed + i)
            want_bytes, want_vals = scalar_encode(x.double().tolist(), level, dtype)
            got = codec.encode(x, level)
            what = f"{level.name} {dtype} {kind} n={n} seed={seed + i}"
            if bytes(got.tolist()) != want_bytes:
                raise AssertionError(f"{what}: wire bytes differ from the scalar model")
            vals = codec.decode(got, level, dtype, n).double()
            if not torch.equal(vals, torch.tensor(want_vals, dtype=torch.float64)):
                raise AssertionError(f"{what}: decoded values differ from the scalar model")


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


def bits_of(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int16)


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
