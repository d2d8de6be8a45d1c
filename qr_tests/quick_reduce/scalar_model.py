"""A plain-Python model of the spec and the documented wire format: no torch, one value
at a time, its own rounding. The oracle the codec must match bit for bit."""

from __future__ import annotations

import math
import struct

import torch

from qr_tests.quick_reduce.formats import EPS, FORMATS, bits_of
from qr_tests.quick_reduce.inputs import KINDS, make_input
from qr_tests.quick_reduce.reference import BITS, TILE, Codec, Level


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
    # m keeps its sign; -m wins a tie with +m. A block of zeros has m = -0 only if it
    # holds a -0, so an all-+0 block gets dec = +0 * -1/R = -0, as on the kernel.
    m = -amax if any(v == -amax and math.copysign(1.0, v) < 0 for v in block) else amax
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
                for i, code in zip(idx, block_codes, strict=True):
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
            vals = codec.decode(got, level, dtype, n)
            want = torch.tensor(want_vals, dtype=torch.float64).to(dtype)
            if not torch.equal(bits_of(vals), bits_of(want)):  # the sign of zero too
                raise AssertionError(f"{what}: decoded values differ from the scalar model")
