"""QR_QUANT in the torchrun examples: the TP all-reduce through the reference quick-reduce
(qr_tests/quick_reduce.py), checked against the codec's bounds."""

from __future__ import annotations

import torch
import torch.distributed as dist

from qr_tests.quick_reduce import BITS, BLOCK, CHUNK, Level, two_shot_all_reduce

FP16_ULP = 2.0**-11  # fp16 unit roundoff: relative error of one rounding to fp16

# Relative L2 error of one all-reduce of standard-normal data (spec: an independent model
# of the codec). The logits' relative L2 error must lie within LOGITS_WINDOW times it.
# Upper end: each all-reduce output is a residual branch no larger than the stream
# (tiny_model scales branches by 1/sqrt(2 * layers)), their independent errors add in
# quadrature, and RMS norm and the fixed lm_head pass a relative error through about
# unchanged, so the logits' error is at most about the codec's; 2x leaves headroom.
# Lower end: a run that never reached quick-reduce, or used a much finer level, fails.
# Measured over levels and layouts: 0.34x to 0.71x.
CODEC_REL_ERR = {"FP": 2e-4, "INT8": 7.5e-3, "INT6": 3e-2, "INT4": 1.2e-1}
LOGITS_WINDOW = (0.1, 2.0)


def _block_max(x: torch.Tensor) -> torch.Tensor:
    """Per element, the largest |value| of its codec block (the even or odd elements of its
    64-element chunk); quick_reduce aligns segments to whole chunks, so blocks are fixed."""
    flat = x.reshape(-1).abs()
    flat = torch.nn.functional.pad(flat, (0, -flat.numel() % CHUNK))
    peak = flat.view(-1, BLOCK, 2).amax(1, keepdim=True)  # (chunks, 1, parity)
    return peak.expand(-1, BLOCK, 2).reshape(-1)[: x.numel()].view(x.shape)


class QuickTensorParallel:
    """TP all-reduce through the two-shot quick-reduce, checking every call's error.

    Per element, with M_r the block maximum of rank r's fp16 input and R = 2^(bits-1):
    each rank's quantization is off by at most one step M_r / R (half a step, or a full one
    for the clamped +m of a tie); the owner's fp16 sum adds a rounding per rank; the sum,
    whose block maximum is at most (1 + 1/R + ...) sum_r M_r <= 1.15 sum_r M_r for R >= 8,
    is quantized once more. Scales, decoding and the fp32 -> fp16 casts each round
    relatively by at most FP16_ULP. Altogether, with S = sum_r M_r:
        INT: |error| <= (2.2 / R + (W + 8) * FP16_ULP) * S
        FP:  |error| <= (W + 2) * FP16_ULP * S      (one cast, W additions in fp16)
    """

    def __init__(self, level_name: str, world: int):
        self.level = Level[level_name]
        bits = BITS.get(self.level)
        ulps = (world + 8) if bits else (world + 2)
        self.coef = (2.2 / 2 ** (bits - 1) if bits else 0.0) + ulps * FP16_ULP
        self.worst = 0.0  # largest error / bound over all calls: must stay <= 1
        self.calls = 0

    def __call__(self, x: torch.Tensor, group) -> torch.Tensor:
        exact = x.clone()
        dist.all_reduce(exact, group=group)
        half = x.to(torch.float16)  # the dtype vLLM's fp16 models hand to quick-reduce
        out = two_shot_all_reduce(half, self.level, group).to(x.dtype)
        bound = _block_max(half.float())
        dist.all_reduce(bound, group=group)
        ratio = ((out - exact).abs() / (self.coef * bound).clamp_min(1e-30)).max().item()
        self.worst = max(self.worst, ratio)
        self.calls += 1
        return out


def logits_rel_err(logits: torch.Tensor, exact: torch.Tensor) -> float:
    return ((logits - exact).norm() / exact.norm()).item()


def logits_window(level_name: str) -> tuple[float, float]:
    err = CODEC_REL_ERR[level_name]
    return err * LOGITS_WINDOW[0], err * LOGITS_WINDOW[1]
