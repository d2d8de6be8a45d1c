"""Mutation check: each of the suite's checks rejects deliberately wrong codecs, so a
codec that passes them is not passing by accident."""

from __future__ import annotations

import pytest
import torch

from qr_tests.quick_reduce.bounds import check_all_reduce_bound, check_error_bound
from qr_tests.quick_reduce.known_answers import check_known_answers
from qr_tests.quick_reduce.reference import Codec
from qr_tests.quick_reduce.scalar_model import check_scalar_model


class FlippedScaleSign(Codec):
    def scales(self, m, bits, dtype):
        return super().scales(-m, bits, dtype)  # dec = +m/R instead of -m/R


class SwappedNibbles(Codec):  # consistent in pack and unpack: only the layout is wrong
    @staticmethod
    def _swap(codes):
        return codes.view(codes.shape[0], -1, 2).flip(2).reshape(codes.shape)

    def pack_codes(self, codes, bits):
        return codes if bits == 8 else super().pack_codes(self._swap(codes), bits)

    def unpack_codes(self, data, bits):
        codes = super().unpack_codes(data, bits)
        return codes if bits == 8 else self._swap(codes)


class RoundHalfUp(Codec):
    def round(self, y):
        return torch.floor(y + 0.5)


class OffByOneBlock(Codec):  # blocks start one element late
    def blocks(self, flat):
        return super().blocks(flat.roll(1))

    def unblocks(self, blocks):
        return super().unblocks(blocks).roll(-1)


class ZeroBlockScalePlusZero(Codec):  # -0 wins the tie of an all-+0 block: dec = +0, not -0
    def block_max(self, b):
        amax = b.abs().amax(dim=1)
        return torch.where((b == -amax[:, None]).any(dim=1), -amax, amax)


CHECKS = {
    "known_answers": lambda codec, seed: check_known_answers(codec),
    "scalar_model": check_scalar_model,
    "error_bound": check_error_bound,
    "all_reduce_bound": check_all_reduce_bound,
}
# Which checks must reject which mutant (a consistent nibble swap, round-half-up and the
# sign of a zero block's scale stay inside the error bound: only exact comparisons see them).
MUST_REJECT = {
    FlippedScaleSign: ("known_answers", "scalar_model", "error_bound", "all_reduce_bound"),
    SwappedNibbles: ("known_answers", "scalar_model"),
    RoundHalfUp: ("known_answers", "scalar_model"),
    OffByOneBlock: ("known_answers", "scalar_model", "error_bound", "all_reduce_bound"),
    ZeroBlockScalePlusZero: ("known_answers", "scalar_model"),
}


@pytest.mark.parametrize("mutant,check", [(m, c) for m, cs in MUST_REJECT.items() for c in cs],
                         ids=lambda v: getattr(v, "__name__", v))
def test_mutant_is_rejected(mutant, check, case_seed):
    with pytest.raises(AssertionError):
        CHECKS[check](mutant(), case_seed)
