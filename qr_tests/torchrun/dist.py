"""The distributed half of the torchrun examples: process groups, the collectives the model
calls, and the checks every rank makes on what it generated."""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist

from qr_tests.quick_reduce.harness import cpu_group
from qr_tests.torchrun import tiny_model as tm
from qr_tests.torchrun.config import Layout, ModelConfig
from qr_tests.torchrun.quant import QuickTensorParallel, logits_rel_err, logits_window

# fp32 logits of the split model against the one-process model: the same operations,
# only the association of sums differs (partial products summed across ranks). Reassociating
# a sum of K <= 64 terms moves it by at most K * 2^-24 ~ 4e-6 of the sum of its |terms|
# (Higham's gamma_K); 9 such sums in sequence reach the logits (2 per layer, then the head),
# the residual stream and RMS norm pass earlier errors on about unchanged, and the sums of
# |terms| run at most a few times the results: ~1e-4 of the logits' largest magnitude.
# Measured: ~3e-7.
FP32_REL_BOUND = 1e-4


class Mismatch(AssertionError):
    """A rank's outputs disagree with another rank's or with the one-process run."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise Mismatch(message)


def init_distributed() -> torch.device:
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        # TF32 would round matmul inputs to 10 mantissa bits, far outside FP32_REL_BOUND.
        torch.backends.cuda.matmul.allow_tf32 = False
    # No backend, so each machine runs its own: from torch 2.6 the detected accelerator's
    # (nccl, which is RCCL on ROCm; gloo on CPU). 2.4 and 2.5 register gloo for CPU plus nccl
    # when CUDA is available (pytorch#119149, in 2.3), so CUDA tensors go over nccl there too
    # and no version needs a named backend.
    dist.init_process_group()
    return device


def _my_group(layout: Layout, rank_lists: list[list[int]]):
    mine = None
    for ranks in rank_lists:
        group = dist.new_group(ranks)
        if layout.rank in ranks:
            mine = group
    return mine


class Groups:
    """This rank's TP, PP, DP and EP groups; every rank creates every group, in the same order."""

    def __init__(self, lay: Layout):
        d_, p_, t_ = range(lay.dp), range(lay.pp), range(lay.tp)
        self.tp = _my_group(lay, [[lay.rank_of(d, p, t) for t in t_] for d in d_ for p in p_])
        self.pp = _my_group(lay, [[lay.rank_of(d, p, t) for p in p_] for d in d_ for t in t_])
        self.dp = _my_group(lay, [[lay.rank_of(d, p, t) for d in d_] for p in p_ for t in t_])
        self.ep = _my_group(lay, [[lay.rank_of(d, p, t) for d in d_ for t in t_] for p in p_])


class DistComm:
    """The collectives tiny_model.Shard calls; `quant_all_reduce(x, group)` replaces the TP one."""

    def __init__(self, layout: Layout, groups: Groups, quant_all_reduce=None):
        self.layout, self.groups = layout, groups
        self._quant_all_reduce = quant_all_reduce

    def tp_all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        if self.layout.tp == 1:
            return x
        if self._quant_all_reduce is not None:
            return self._quant_all_reduce(x, self.groups.tp)
        dist.all_reduce(x, group=self.groups.tp)
        return x

    def ep_tokens(self, x: torch.Tensor) -> torch.Tensor:
        if self.layout.dp == 1:
            return x
        parts = [torch.empty_like(x) for _ in range(self.layout.dp)]
        dist.all_gather(parts, x, group=self.groups.dp)
        return torch.cat(parts)

    def ep_combine(self, x: torch.Tensor) -> torch.Tensor:
        if self.layout.ep_size > 1:
            dist.all_reduce(x, group=self.groups.ep)
        rows = x.shape[0] // self.layout.dp
        return x[self.layout.dp_rank * rows:(self.layout.dp_rank + 1) * rows]

    def _stage_rank(self, stage: int) -> int:
        lay = self.layout
        return lay.rank_of(lay.dp_rank, stage, lay.tp_rank)

    def recv_prev(self, buf: torch.Tensor) -> torch.Tensor:
        dist.recv(buf, src=self._stage_rank(self.layout.pp_rank - 1))
        return buf

    def send_next(self, x: torch.Tensor) -> None:
        dist.send(x.contiguous(), dst=self._stage_rank(self.layout.pp_rank + 1))

    def from_last_stage(self, x: torch.Tensor) -> torch.Tensor:
        if self.layout.pp > 1:
            dist.broadcast(x, src=self._stage_rank(self.layout.pp - 1), group=self.groups.pp)
        return x


def gather_checked(result: tuple[torch.Tensor, torch.Tensor], layout: Layout, group,
                   what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Every rank's (tokens, logits) for its replica's prompts -> the whole batch on every
    rank, gathered over the CPU `group`. Ranks of one replica must hold identical outputs."""
    # Tensor collectives, not *_object ones: those need numpy, which torch does not require.
    everyone = []
    for mine in result:
        mine = mine.cpu()
        parts = [torch.empty_like(mine) for _ in range(layout.world)]
        dist.all_gather(parts, mine, group=group)
        everyone.append(parts)
    per_replica = layout.tp * layout.pp
    for rank in range(layout.world):
        leader = rank - rank % per_replica
        _require(all(torch.equal(parts[rank], parts[leader]) for parts in everyone),
                 f"{what}: rank {rank} differs from rank {leader} of the same replica")
    return tuple(torch.cat(parts[::per_replica]) for parts in everyone)


def _max_rel_err(logits: torch.Tensor, exact: torch.Tensor) -> float:
    return ((logits - exact).abs().max() / exact.abs().max()).item()


class Example:
    """One torchrun example on this rank: the model, its replica's prompts, and its groups."""

    def __init__(self, cfg: ModelConfig, layout: Layout):
        self.cfg, self.layout = cfg, layout
        self.device = init_distributed()
        self.groups = Groups(layout)
        self.cpu_group = cpu_group()
        self.weights, self.prompts = tm.make_weights(cfg), tm.make_prompts(cfg)
        per_replica = cfg.prompts // layout.dp
        self.mine = slice(layout.dp_rank * per_replica, (layout.dp_rank + 1) * per_replica)

    def shard(self, quant_all_reduce=None) -> tm.Shard:
        comm = DistComm(self.layout, self.groups, quant_all_reduce)
        return tm.Shard(self.cfg, self.weights, self.device, self.layout, comm)

    def generate(self, shard: tm.Shard, what: str, forced: torch.Tensor | None = None):
        """Greedy (tokens, logits) of the whole batch, checked equal on every rank."""
        if forced is not None:
            forced = forced[self.mine].to(self.device)
        result = tm.generate(shard, self.prompts[self.mine].to(self.device),
                             self.cfg.new_tokens, forced)
        return gather_checked(result, self.layout, self.cpu_group, what)

    def run(self) -> dict:
        cfg, lay = self.cfg, self.layout
        one_process = tm.Shard(cfg, self.weights, self.device)
        ref_tokens, ref_logits = (t.cpu() for t in tm.generate(
            one_process, self.prompts.to(self.device), cfg.new_tokens))
        exact = self.shard()
        tokens, logits = self.generate(exact, "exact")
        _require(torch.equal(tokens, ref_tokens),
                 f"greedy tokens {tokens.tolist()} != one-process run's {ref_tokens.tolist()}")
        err = _max_rel_err(logits, ref_logits)
        _require(err <= FP32_REL_BOUND,
                 f"logits off the one-process run by {err:.2e} > {FP32_REL_BOUND}")
        report = {"rank": lay.rank, "model": cfg.name, "device": str(self.device),
                  "backend": dist.get_backend_config(), "tp": lay.tp, "pp": lay.pp,
                  "dp": lay.dp, "ep": lay.ep, "rel_err": float(f"{err:.3g}")}
        if lay.quant:
            report.update(self.quantized(exact, tokens, logits))
        if lay.rank == 0:
            report["tokens"] = tokens.tolist()
        return report

    def quantized(self, exact: tm.Shard, tokens: torch.Tensor, logits: torch.Tensor) -> dict:
        """Repeat the run with QR_QUANT's quick-reduce as the TP all-reduce.

        The exact run's tokens and expert choices are fed back (argmax and top-k are
        discrete: one flipped near-tie would change everything after it), so the logits
        differ only by the codec's error. The tokens the quantized model would choose
        itself must still equal the exact ones for FP and INT8.
        """
        level = self.layout.quant
        quick = QuickTensorParallel(level)
        shard = self.shard(quick)
        shard.replay = exact.routes
        q_tokens, q_logits = self.generate(shard, level, forced=tokens)
        _require(quick.calls > 0, "QR_QUANT set but quick-reduce never ran")
        _require(quick.worst <= 1.0, f"{level} all-reduce error {quick.worst:.2f}x its codec bound")
        err = logits_rel_err(q_logits, logits)
        low, high = logits_window(level)
        _require(low <= err <= high,
                 f"{level} logits off the exact run by {err:.2e}, outside [{low:.1e}, {high:.1e}]")
        if level in ("FP", "INT8"):
            _require(torch.equal(q_tokens, tokens),
                     f"{level} greedy tokens {q_tokens.tolist()} != exact {tokens.tolist()}")
        flips = sum(int((a != b).any(-1).sum()) for a, b in zip(shard.routes, shard.replay, strict=False))
        return {"quant": level, "quant_rel_err": float(f"{err:.3g}"),
                "codec_bound_use": round(quick.worst, 3),
                "token_flips": int((q_tokens != tokens).sum()), "expert_flips": flips}


def run(cfg: ModelConfig, layout: Layout) -> None:
    report = Example(cfg, layout).run()
    sys.stdout.write(f"OK {json.dumps(report)}\n")  # one write: ranks share the pipe
    sys.stdout.flush()
    dist.destroy_process_group()
