"""fp16 and bf16 as the checks see them: written from the formats' definitions, not
taken from the codec, so that a wrong constant there cannot hide."""

from __future__ import annotations

import torch

from qr_tests.quick_reduce.reference import FP16_MAX

# (significand bits, min normal exponent, max finite, saturates)
FORMATS = {
    torch.float16: (11, -14, FP16_MAX, True),
    torch.bfloat16: (8, -126, (2 - 2**-7) * 2.0**127, False),
}
UNIT = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}  # unit roundoff
TINY = {torch.float16: 2.0**-24, torch.bfloat16: 2.0**-133}  # smallest subnormal
# The epsilon added to the scale: 2^-24 in fp16, T(1e-7) = 0x33D7 in bf16.
EPS = {torch.float16: 2.0**-24, torch.bfloat16: 215 * 2.0**-31}


def bits_of(t: torch.Tensor) -> torch.Tensor:
    """A T tensor's bit patterns (int16): equal only when every value and every sign of
    zero is, which `==` does not see."""
    return t.contiguous().view(torch.int16)
