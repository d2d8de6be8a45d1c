"""The distributed half of the torchrun examples: process groups, the collectives the model
calls, and the checks every rank makes on what it generated."""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist

from qr_tests import tiny_model as tm
from qr_tests.torchrun_config import Layout, ModelConfig

# fp32 logits of the split model against the one-process model. Both run the same
# operations; only the association of sums differs (partial products summed across ranks,
# per-rank softmax stacks). Each dot product here has at most K = 64 terms, so reassociation
# moves it by at most K * 2^-24 ~ 4e-6 of the sum of its |terms| (Higham's gamma_K); the
# residual stream passes 2 * 4 + 1 = 9 such products to the logits and RMS norms rescale
# by about the inverse activation size (~3). 9 * 4e-6 * 3 ~ 1e-4 of the logits' scale
# (their largest magnitude, ~15); measured errors are ~1e-6 of it.
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
    if torch.torch_version.TorchVersion(torch.__version__) < (2, 6):
        # Before 2.6 an unnamed backend meant nccl whenever the build had it, even on a host
        # without a GPU (pytorch#117746); name what 2.6+ picks by itself instead.
        dist.init_process_group("cpu:gloo,cuda:nccl" if device.type == "cuda" else "gloo")
    else:
        dist.init_process_group()  # the device's default: nccl (RCCL on ROCm) or gloo on CPU
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


def gather_checked(result: tuple[torch.Tensor, torch.Tensor], layout: Layout, cpu_group,
                   what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Every rank's (tokens, logits) for its replica's prompts -> the whole batch on every rank.

    Ranks of one replica must hold identical outputs; the assembled batch must then equal
    the one rank 0 broadcasts over the CPU group.
    """
    # Tensor collectives, not *_object ones: those need numpy, which torch does not require.
    everyone = []
    for mine in result:
        mine = mine.cpu()
        parts = [torch.empty_like(mine) for _ in range(layout.world)]
        dist.all_gather(parts, mine, group=cpu_group)
        everyone.append(parts)
    per_replica = layout.tp * layout.pp
    for rank in range(layout.world):
        leader = rank - rank % per_replica
        _require(all(torch.equal(parts[rank], parts[leader]) for parts in everyone),
                 f"{what}: rank {rank} differs from rank {leader} of the same replica")
    full = tuple(torch.cat(parts[::per_replica]) for parts in everyone)
    for mine in full:
        from_rank0 = mine.clone()
        dist.broadcast(from_rank0, src=0, group=cpu_group)
        _require(torch.equal(mine, from_rank0), f"{what}: outputs differ from rank 0's")
    return full


def _rel_err(logits: torch.Tensor, exact: torch.Tensor) -> float:
    return ((logits - exact).abs().max() / exact.abs().max()).item()


def run(cfg: ModelConfig, layout: Layout) -> None:
    device = init_distributed()
    groups = Groups(layout)
    cpu_group = dist.new_group(backend="gloo")
    weights, prompts = tm.make_weights(cfg), tm.make_prompts(cfg)
    ref_tokens, ref_logits = (t.cpu() for t in tm.generate(
        tm.Shard(cfg, weights, device), prompts.to(device), cfg.new_tokens))

    per_replica = cfg.prompts // layout.dp
    mine = slice(layout.dp_rank * per_replica, (layout.dp_rank + 1) * per_replica)
    shard = tm.Shard(cfg, weights, device, layout, DistComm(layout, groups))
    tokens, logits = gather_checked(
        tm.generate(shard, prompts[mine].to(device), cfg.new_tokens), layout, cpu_group, "exact")
    _require(torch.equal(tokens, ref_tokens),
             f"greedy tokens {tokens.tolist()} != one-process run's {ref_tokens.tolist()}")
    err = _rel_err(logits, ref_logits)
    _require(err <= FP32_REL_BOUND, f"logits off the one-process run by {err:.2e} > {FP32_REL_BOUND}")
    report = {"rank": layout.rank, "model": cfg.name, "device": str(device),
              "backend": dist.get_backend_config(), "tp": layout.tp, "pp": layout.pp, "dp": layout.dp,
              "ep": layout.ep, "rel_err": float(f"{err:.3g}")}
    if layout.rank == 0:
        report["tokens"] = tokens.tolist()
    sys.stdout.write(f"OK {json.dumps(report)}\n")  # one write: ranks share the pipe
    sys.stdout.flush()
    dist.destroy_process_group()
