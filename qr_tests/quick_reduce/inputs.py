"""The suite's random inputs: six kinds, each aimed at one part of the codec."""

from __future__ import annotations

import torch

from qr_tests.quick_reduce.formats import FORMATS

KINDS = ("normal", "heavy", "ties", "zero_blocks", "extremes", "mixed_scales")
# The (dtype, bf16->fp16 cast) combinations the suite runs: the cast only acts on bf16.
DTYPE_CASTS = ((torch.float16, True), (torch.bfloat16, True), (torch.bfloat16, False))


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
