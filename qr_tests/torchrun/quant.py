"""QR_QUANT in the torchrun examples: the TP all-reduce through the reference quick-reduce
(qr_tests/quick_reduce/reference.py), checked against the codec's bounds."""

from __future__ import annotations

import torch
import torch.distributed as dist

from qr_tests.quick_reduce.bounds import SPEC_REL_L2, all_reduce_bound
from qr_tests.quick_reduce.reference import Level, two_shot_all_reduce

# The logits' relative L2 error must lie within LOGITS_WINDOW times bounds.SPEC_REL_L2, the
# spec's relative L2 error of one all-reduce of standard-normal data.
# Upper end: each all-reduce output is a residual branch no larger than the stream
# (tiny_model scales branches by 1/sqrt(2 * layers)), their independent errors add in
# quadrature, and RMS norm and the fixed lm_head pass a relative error through about
# unchanged, so the logits' error is at most about the codec's; 2x leaves headroom.
# Lower end: levels are 4x apart, so a run one level finer than asked lands at a quarter
# of the measured ratios (0.34x to 0.71x over levels and layouts), below 0.25x; one that
# never reached quick-reduce lands at 0. A coarser level fails the per-call bound below.
LOGITS_WINDOW = (0.25, 2.0)


class QuickTensorParallel:
    """TP all-reduce through the two-shot quick-reduce, in fp16 (the dtype vLLM's fp16
    models hand it), with every call's error checked against the per-element bound of
    qr_tests/quick_reduce/bounds.py, derived from the codec independently of reference.py
    (half a step per rank, the clamp of a tie, fp16 roundings, the second quantization of
    the sum, saturated encoding scales)."""

    def __init__(self, level_name: str):
        self.level = Level[level_name]
        self.worst = 0.0  # largest error / bound over all calls: must stay <= 1
        self.calls = 0

    def __call__(self, x: torch.Tensor, group) -> torch.Tensor:
        out = two_shot_all_reduce(x.to(torch.float16), self.level, group)
        inputs = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(inputs, x.contiguous(), group=group)
        exact, bound = all_reduce_bound([t.to(torch.float16) for t in inputs], self.level)
        err = (out.reshape(-1).double() - exact).abs()
        ratio = torch.where(err == 0, 0.0, err / bound)  # an error where the bound is 0: inf
        self.worst = max(self.worst, ratio.max().item())
        self.calls += 1
        return out.to(x.dtype)


def logits_rel_err(logits: torch.Tensor, exact: torch.Tensor) -> float:
    return ((logits - exact).norm() / exact.norm()).item()


def logits_window(level_name: str) -> tuple[float, float]:
    err = SPEC_REL_L2[Level[level_name]]
    return err * LOGITS_WINDOW[0], err * LOGITS_WINDOW[1]
