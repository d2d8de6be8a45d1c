"""Model sizes and the parallel layout of the torchrun examples, read from the environment.

Torch-free on purpose: the examples check the layout before importing torch, so a bad
size fails in a fraction of a second instead of after the ~2 s import on every rank.
"""

from __future__ import annotations

from dataclasses import dataclass

QUANT_LEVELS = ("FP", "INT8", "INT6", "INT4")


class ConfigError(ValueError):
    """A layout that cannot run; its message is the one line the example prints."""


@dataclass(frozen=True)
class ModelConfig:
    name: str
    default_tp: int = 1  # TP_SIZE when unset: vLLM's dense example runs tp=2, its MoE one tp=1
    vocab: int = 64
    hidden: int = 32
    heads: int = 4
    layers: int = 4
    ffn: int = 64  # intermediate width of the MLP, or of each expert
    experts: int = 0  # 0: dense MLP
    top_k: int = 2
    prompts: int = 4
    prompt_len: int = 6
    new_tokens: int = 4
    seed: int = 0


# Seeds: of the first 400, those whose greedy choices have the widest top-2 logit gaps
# (>= 5.8% of the largest logit; INT8 quick-reduce moved logits by < 1/10 of that), so
# tokens can be required to survive FP and INT8 quick-reduce.
DENSE = ModelConfig("dense", default_tp=2, seed=252)
MOE = ModelConfig("moe", ffn=32, experts=8, seed=5)


@dataclass(frozen=True)
class Layout:
    """One rank's place in a world of dp x pp x tp ranks, tp innermost like vLLM's."""

    world: int = 1
    rank: int = 0
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False
    quant: str | None = None

    @property
    def tp_rank(self) -> int:
        return self.rank % self.tp

    @property
    def pp_rank(self) -> int:
        return self.rank // self.tp % self.pp

    @property
    def dp_rank(self) -> int:
        return self.rank // (self.tp * self.pp)

    @property
    def ep_size(self) -> int:
        # Like vLLM, expert parallelism spans the data- and tensor-parallel ranks of a stage.
        return self.dp * self.tp if self.ep else 1

    @property
    def ep_rank(self) -> int:
        return self.dp_rank * self.tp + self.tp_rank if self.ep else 0

    def rank_of(self, dp: int, pp: int, tp: int) -> int:
        return (dp * self.pp + pp) * self.tp + tp


def _size(env, name: str, default: int | None) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def _flag(env, name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false"):
        return False
    if raw in ("1", "true"):
        return True
    raise ConfigError(f"{name} must be 0, 1, true or false, got {raw!r}")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def layout_from_env(env, model: ModelConfig) -> Layout:
    """Parse TP_SIZE, PP_SIZE, DP_SIZE, ENABLE_EP and QR_QUANT for the rank torchrun started.

    DP_SIZE defaults to WORLD_SIZE / (TP_SIZE * PP_SIZE), as vLLM's torchrun examples
    treat the ranks left over as independent replicas.
    """
    if "RANK" not in env or "WORLD_SIZE" not in env:
        raise ConfigError("launch with torchrun (RANK and WORLD_SIZE are unset)")
    world, rank = int(env["WORLD_SIZE"]), int(env["RANK"])
    tp = _size(env, "TP_SIZE", model.default_tp)
    pp = _size(env, "PP_SIZE", 1)
    _require(world % (tp * pp) == 0,
             f"TP_SIZE={tp} x PP_SIZE={pp} does not divide WORLD_SIZE={world}")
    dp = _size(env, "DP_SIZE", world // (tp * pp))
    _require(tp * pp * dp == world,
             f"TP_SIZE={tp} x PP_SIZE={pp} x DP_SIZE={dp} != WORLD_SIZE={world}")
    ep = _flag(env, "ENABLE_EP")
    quant = env.get("QR_QUANT", "").strip() or None
    _require(quant is None or quant in QUANT_LEVELS,
             f"QR_QUANT must be one of {', '.join(QUANT_LEVELS)}, got {quant!r}")
    _require(quant is None or tp > 1, "QR_QUANT routes the TP all-reduce: needs TP_SIZE > 1")

    _require(model.heads % tp == 0, f"TP_SIZE={tp} does not divide the {model.heads} heads")
    _require(model.layers % pp == 0, f"PP_SIZE={pp} does not divide the {model.layers} layers")
    _require(model.prompts % dp == 0, f"DP_SIZE={dp} does not divide the {model.prompts} prompts")
    if ep:
        _require(model.experts > 0, "ENABLE_EP needs the MoE example")
        _require(model.experts % (tp * dp) == 0,
                 f"expert parallel size TP_SIZE x DP_SIZE={tp * dp} "
                 f"does not divide the {model.experts} experts")
    else:
        _require(model.ffn % tp == 0, f"TP_SIZE={tp} does not divide the MLP width {model.ffn}")
    return Layout(world=world, rank=rank, tp=tp, pp=pp, dp=dp, ep=ep, quant=quant)
