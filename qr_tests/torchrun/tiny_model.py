"""A tiny decoder-only transformer (dense or mixture-of-experts) from seeded random weights,
and the slice of it one rank holds under tensor, pipeline and expert parallelism.

The single-process model is the same code with the trivial layout, so the parallel run and
the reference differ only in how the work is split and in the order of fp32 sums.
"""

from __future__ import annotations

import math

import torch

from qr_tests.torchrun.config import Layout, ModelConfig


def make_weights(cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Every rank draws the same weights on CPU from cfg.seed (so nothing is downloaded)."""
    gen = torch.Generator().manual_seed(cfg.seed)

    def rand(*shape: int, scale: float | None = None) -> torch.Tensor:
        # 1/sqrt(fan_in) keeps activations O(1) through the layers.
        return torch.randn(*shape, generator=gen) * (scale or 1 / math.sqrt(shape[-1]))

    h, f = cfg.hidden, cfg.ffn
    w = {
        "embed": rand(cfg.vocab, h, scale=1.0),
        "pos": rand(cfg.prompt_len + cfg.new_tokens, h, scale=1.0),
        "lm_head": rand(cfg.vocab, h),
    }
    # Residual branches scaled by 1/sqrt(2 * layers), as GPT-2 initialises them.
    out_scale = 1 / math.sqrt(2 * cfg.layers)
    for layer in range(cfg.layers):
        for name in "qkv":
            w[f"{layer}.{name}"] = rand(h, h)
        w[f"{layer}.o"] = rand(h, h) * out_scale
        if cfg.experts:
            w[f"{layer}.router"] = rand(cfg.experts, h)
            w[f"{layer}.up"] = rand(cfg.experts, f, h)
            w[f"{layer}.down"] = rand(cfg.experts, h, f) * out_scale
        else:
            w[f"{layer}.up"] = rand(f, h)
            w[f"{layer}.down"] = rand(h, f) * out_scale
    return w


def make_prompts(cfg: ModelConfig) -> torch.Tensor:
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    return torch.randint(cfg.vocab, (cfg.prompts, cfg.prompt_len), generator=gen)


class LocalComm:
    """The collectives of a one-process run: every reduction is already complete, and its
    single pipeline stage never sends or receives."""

    def tp_all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def ep_tokens(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def ep_combine(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def from_last_stage(self, x: torch.Tensor) -> torch.Tensor:
        return x


def _rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Shard:
    """What one rank holds: heads and MLP columns/rows of its TP rank (or whole experts of
    its EP rank), for the layers of its pipeline stage."""

    def __init__(self, cfg: ModelConfig, weights: dict[str, torch.Tensor], device: torch.device,
                 layout: Layout | None = None, comm=None):
        layout = Layout() if layout is None else layout
        self.cfg, self.layout, self.comm = cfg, layout, LocalComm() if comm is None else comm
        per_stage = cfg.layers // layout.pp
        self.layers = range(layout.pp_rank * per_stage, (layout.pp_rank + 1) * per_stage)
        self.first = layout.pp_rank == 0
        self.last = layout.pp_rank == layout.pp - 1
        self.head_dim = cfg.hidden // cfg.heads
        self.local_heads = cfg.heads // layout.tp
        cols = self._span(cfg.hidden, layout.tp, layout.tp_rank)  # this rank's heads' columns
        ffn = self._span(cfg.ffn, layout.tp, layout.tp_rank)
        self.experts = self._span(cfg.experts, layout.ep_size, layout.ep_rank)

        w = {name: weights[name] for name in ("embed", "pos", "lm_head")}
        for layer in self.layers:
            for name in "qkv":  # column-parallel: whole heads
                w[f"{layer}.{name}"] = weights[f"{layer}.{name}"][cols]
            w[f"{layer}.o"] = weights[f"{layer}.o"][:, cols]  # row-parallel
            up, down = weights[f"{layer}.up"], weights[f"{layer}.down"]
            if not cfg.experts:
                w[f"{layer}.up"], w[f"{layer}.down"] = up[ffn], down[:, ffn]
            elif layout.ep:  # whole experts, split over the EP ranks
                w[f"{layer}.up"], w[f"{layer}.down"] = up[self.experts], down[self.experts]
            else:  # every expert, its intermediate width split over the TP ranks
                w[f"{layer}.up"], w[f"{layer}.down"] = up[:, ffn], down[:, :, ffn]
            if cfg.experts:
                w[f"{layer}.router"] = weights[f"{layer}.router"]
        self.w = {name: t.to(device) for name, t in w.items()}
        self.device = device
        # Expert choices of every MoE call, in call order; with `replay` set, the choices of
        # another run are used instead (see generate's `forced`: the same idea for experts).
        self.routes: list[torch.Tensor] = []
        self.replay: list[torch.Tensor] | None = None

    @staticmethod
    def _span(total: int, parts: int, index: int) -> slice:
        size = total // parts
        return slice(index * size, (index + 1) * size)

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits (batch, vocab) for token ids (batch, time), on every rank of the replica."""
        batch, time = ids.shape
        if self.first:
            h = self.w["embed"][ids] + self.w["pos"][:time]
        else:
            h = self.comm.recv_prev(torch.empty(batch, time, self.cfg.hidden, device=self.device))
        for layer in self.layers:
            h = h + self._attention(layer, _rms_norm(h))
            mlp = self._moe if self.cfg.experts else self._mlp
            h = h + mlp(layer, _rms_norm(h))
        if self.last:
            out = _rms_norm(h[:, -1]) @ self.w["lm_head"].T
        else:
            self.comm.send_next(h)
            out = torch.empty(batch, self.cfg.vocab, device=self.device)
        return self.comm.from_last_stage(out)

    def _attention(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        batch, time, _ = x.shape
        q, k, v = ((x @ self.w[f"{layer}.{n}"].T)
                   .view(batch, time, self.local_heads, self.head_dim).transpose(1, 2)
                   for n in "qkv")
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        causal = torch.ones(time, time, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(causal, float("-inf")).softmax(-1) @ v
        attn = attn.transpose(1, 2).reshape(batch, time, -1)
        return self.comm.tp_all_reduce(attn @ self.w[f"{layer}.o"].T)

    def _mlp(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        up = torch.nn.functional.silu(x @ self.w[f"{layer}.up"].T)
        return self.comm.tp_all_reduce(up @ self.w[f"{layer}.down"].T)

    def _moe(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])
        if self.layout.ep:  # this rank's experts serve the tokens of every replica
            tokens = self.comm.ep_tokens(tokens)
        scores = tokens @ self.w[f"{layer}.router"].T
        chosen = scores.topk(self.cfg.top_k, dim=-1).indices
        self.routes.append(chosen)
        if self.replay is not None:
            chosen = self.replay[len(self.routes) - 1]
        gates = scores.gather(-1, chosen).softmax(-1)
        out = torch.zeros_like(tokens)
        for i, expert in enumerate(range(self.cfg.experts)[self.experts]):
            # Gate per token, zero where the router did not pick this expert: computing the
            # expert on every token keeps the code short and adds exact zeros elsewhere.
            gate = (gates * (chosen == expert)).sum(-1, keepdim=True)
            up = torch.nn.functional.silu(tokens @ self.w[f"{layer}.up"][i].T)
            out += gate * (up @ self.w[f"{layer}.down"][i].T)
        if self.layout.ep:
            return self.comm.ep_combine(out).reshape(shape)
        return self.comm.tp_all_reduce(out).reshape(shape)


def generate(model: Shard, prompts: torch.Tensor, steps: int,
             forced: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy tokens (batch, steps) and the logits they came from (batch, steps, vocab).

    With `forced`, those tokens are fed back instead of the model's own, so logits stay
    comparable with a run whose greedy choices they are; the argmax tokens are still returned,
    and they equal `forced` exactly when free greedy decoding would have produced it.
    """
    ids, tokens, logits = prompts, [], []
    for step in range(steps):
        out = model.logits(ids)
        tokens.append(out.argmax(-1))
        logits.append(out)
        fed = tokens[-1] if forced is None else forced[:, step]
        ids = torch.cat([ids, fed[:, None]], dim=1)
    return torch.stack(tokens, 1), torch.stack(logits, 1)
