"""The QuickAllReduce surface vLLM uses, backed by the reference two-shot all-reduce.

The environment, the policy and the platform checks follow vLLM
(vllm/distributed/device_communicators/quick_all_reduce.py); platform detection is
guarded and injectable (`Platform`), so the ROCm policy is tested on any machine.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist

from qr_tests.quick_reduce.reference import SUPPORTED_DTYPES, Level, two_shot_all_reduce

log = logging.getLogger(__name__)

MB = 1 << 20
ENV_QUANTIZATION = "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION"
ENV_CAST = "VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16"
ENV_MAX = "VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB"
ENV_MIN = "VLLM_ROCM_QUICK_REDUCE_MIN_SIZE_BYTES_MB"
QUANTIZATION_CHOICES = ("FP", "INT8", "INT6", "INT4", "NONE")
DEFAULT_MAX_SIZE = 2048 * MB  # the kernels' qr_max_size()
SUPPORTED_WORLD_SIZES = (2, 4, 8)
SUPPORTED_ARCHS = ("gfx94", "gfx95")

# Minimum message size in MB, columns FP / INT8 / INT6 / INT4 (Level values).
MIN_SIZE_MB = {
    (torch.float16, 2): (1, 2, 2, 1),
    (torch.float16, 4): (1, 16, 4, 2),
    (torch.float16, 8): (16, 4, 4, 2),
    (torch.bfloat16, 2): (2, 8, 8, 8),
    (torch.bfloat16, 4): (8, 64, 64, 16),
    (torch.bfloat16, 8): (16, 2048, 2048, 2048),
}


def _env_int(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"Invalid value {raw!r} for {name}: expected an integer (MB)") from None


@dataclass(frozen=True)
class QuickReduceConfig:
    """The four environment variables, parsed and validated."""

    level: Level | None  # None: NONE, quick reduce off
    cast_bf16_to_fp16: bool
    max_size: int  # bytes
    min_size: int | None  # bytes; None: the table applies

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> QuickReduceConfig:
        env = os.environ if environ is None else environ
        quant = env.get(ENV_QUANTIZATION, "NONE")
        if quant not in QUANTIZATION_CHOICES:  # case-sensitive, like vLLM's env_with_choices
            raise ValueError(f"Invalid value {quant!r} for {ENV_QUANTIZATION}. "
                             f"Valid options: {list(QUANTIZATION_CHOICES)}.")
        cast = env.get(ENV_CAST, "True").lower() in ("true", "1")
        max_mb = _env_int(env, ENV_MAX)
        max_size = DEFAULT_MAX_SIZE if max_mb is None else max_mb * MB
        min_mb = _env_int(env, ENV_MIN)
        min_size = None
        if min_mb is not None:
            if min_mb < 0:
                raise ValueError(f"Invalid value {min_mb} for {ENV_MIN}: must be non-negative")
            min_size = min_mb * MB
            if min_size > max_size:
                raise ValueError(f"Invalid value {min_mb} for {ENV_MIN}: must be <= the "
                                 f"max size ({max_size // MB} MB)")
        level = None if quant == "NONE" else Level[quant]
        return cls(level, cast, max_size, min_size)


def min_size_for(dtype: torch.dtype, world_size: int, level: Level, cast_bf16_to_fp16: bool) -> int:
    """The table's minimum in bytes; with the cast on, bf16 input uses the fp16 row."""
    if cast_bf16_to_fp16:
        dtype = torch.float16
    return MIN_SIZE_MB[(dtype, world_size)][level.value] * MB


def is_weak_contiguous(t: torch.Tensor) -> bool:
    """Contiguous, or a view whose elements fill the tail of its storage (vLLM's rule)."""
    if t.is_contiguous():
        return True
    tail = t.untyped_storage().nbytes() - t.storage_offset() * t.element_size()
    return tail == t.numel() * t.element_size()


@dataclass(frozen=True)
class Policy:
    """Which tensors the enabled communicator takes."""

    world_size: int
    level: Level
    use_fp16_kernels: bool
    max_size: int = DEFAULT_MAX_SIZE
    min_size: int | None = None

    def accepts(self, inp: torch.Tensor) -> bool:
        if inp.dtype not in SUPPORTED_DTYPES:
            return False
        nbytes = inp.numel() * inp.element_size()
        if nbytes % 16 or not is_weak_contiguous(inp):
            return False
        lo = self.min_size
        if lo is None:
            lo = min_size_for(inp.dtype, self.world_size, self.level, self.use_fp16_kernels)
        return lo <= nbytes <= self.max_size


@dataclass(frozen=True)
class Platform:
    """What the enable decision needs to know about the machine."""

    is_rocm: bool = False
    arch: str = ""  # e.g. "gfx942"
    kernels_available: bool = False  # vLLM's quick-reduce custom ops are built
    # Whether every pair of these physical GPUs is linked directly (XGMI; unknown: no).
    # Asked about the group's gathered ids, as vLLM does: a rank may see only its GPU.
    is_fully_connected: Callable[[list[int]], bool] = lambda ids: False
    physical_device_id: int = 0  # of this rank's device, for the handshake
    hostname: str = ""

    @property
    def arch_supported(self) -> bool:
        return self.is_rocm and self.arch.startswith(SUPPORTED_ARCHS)


def _vllm_is_fully_connected(physical_device_ids: list[int]) -> bool:
    try:
        from vllm.platforms import current_platform  # noqa: PLC0415
        return bool(current_platform.is_fully_connected(physical_device_ids))
    except Exception as e:
        log.debug("GPU topology unknown: %s", e)
        return False


def detect_platform(device_index: int = 0) -> Platform:
    """The real platform. Each probe is guarded: a missing vLLM, amdsmi or GPU means
    'not available', never an import error on other hardware."""
    is_rocm = getattr(torch.version, "hip", None) is not None
    arch = ""
    if is_rocm:
        try:
            arch = getattr(torch.cuda.get_device_properties(device_index), "gcnArchName", "")
        except Exception as e:  # no usable GPU
            log.debug("no ROCm device properties: %s", e)
    kernels = False
    physical = device_index
    try:
        from vllm import _custom_ops as ops  # noqa: PLC0415
        ops.qr_max_size()
        kernels = True
    except Exception as e:
        log.debug("quick-reduce kernels unavailable: %s", e)
    if is_rocm:
        try:
            from vllm.platforms import current_platform  # noqa: PLC0415
            physical = current_platform.visible_device_id_to_physical_device_id(device_index)
        except Exception as e:
            log.debug("physical device id unknown: %s", e)
    return Platform(is_rocm, arch, kernels, _vllm_is_fully_connected, physical,
                    socket.gethostname())


class QuickAllReduce:
    """vLLM's surface: `disabled`, `should_quick_allreduce`, `quick_all_reduce`,
    `close`, `use_fp16_kernels`. When enabled, it runs the reference two-shot
    all-reduce over `group` for CPU tensors, else over WORLD."""

    def __init__(self, group, device, *, platform: Platform | None = None,
                 environ: Mapping[str, str] | None = None,
                 model_dtype: torch.dtype | None = None) -> None:
        self.disabled = True
        self.disabled_reason = ""
        self.use_fp16_kernels = False
        self.policy: Policy | None = None
        self.group = group
        self.device = torch.device(f"cuda:{device}" if isinstance(device, int) else device)
        if platform is None:
            platform = detect_platform(self.device.index or 0)
        reason = self._setup(platform, environ, model_dtype)
        if reason:
            self.disabled_reason = reason
            log.info("quick all-reduce disabled: %s", reason)
            return
        self._data_group = group
        if self.device.type != "cpu":
            if dist.get_world_size() != self.world_size:
                raise ValueError("GPU tensors go over WORLD, but the CPU group is a subgroup")
            self._data_group = dist.group.WORLD
        self.disabled = False

    def _setup(self, platform: Platform, environ, model_dtype) -> str:
        """The checks in vLLM's order; returns why quick reduce is off, or ''."""
        if not platform.arch_supported:
            return f"needs ROCm on gfx94x/gfx95x (rocm={platform.is_rocm}, arch={platform.arch!r})"
        if not platform.kernels_available:
            return "quick-reduce kernels are not available"
        config = dist.get_backend_config(self.group)  # e.g. 'cuda:nccl' or 'cpu:gloo'
        if "cpu:" not in config:
            raise ValueError("QuickAllReduce needs a CPU (gloo) group for its handshake, "
                             f"not {config!r}")
        self.world_size = dist.get_world_size(self.group)
        # (host hash, physical device id) as a CPU tensor: object collectives need numpy
        host = int.from_bytes(hashlib.sha256(platform.hostname.encode()).digest()[:7], "little")
        mine = torch.tensor([host, platform.physical_device_id], dtype=torch.int64)
        peers = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(peers, mine, group=self.group)
        if len({int(p[0]) for p in peers}) > 1:
            return "the group spans nodes"
        if self.world_size not in SUPPORTED_WORLD_SIZES:
            return f"world size {self.world_size} not in {SUPPORTED_WORLD_SIZES}"
        if self.world_size > 2 and not platform.is_fully_connected([int(p[1]) for p in peers]):
            return "more than two GPUs that are not fully connected"
        env = QuickReduceConfig.from_env(environ)  # raises on invalid values
        self.use_fp16_kernels = env.cast_bf16_to_fp16
        if env.level is None:
            return f"{ENV_QUANTIZATION}=NONE"
        if model_dtype is not None and model_dtype not in SUPPORTED_DTYPES:
            return f"model dtype {model_dtype} is not fp16/bf16"
        self.policy = Policy(self.world_size, env.level, env.cast_bf16_to_fp16,
                             env.max_size, env.min_size)
        return ""

    def should_quick_allreduce(self, inp: torch.Tensor) -> bool:
        return not self.disabled and self.policy.accepts(inp)

    def quick_all_reduce(self, inp: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Out of place: returns `out` (allocated when None) holding Q(sum_r Q(x_r))."""
        if self.disabled:
            raise RuntimeError(f"quick all-reduce is disabled: {self.disabled_reason or 'closed'}")
        if out is None:
            out = torch.empty_like(inp)
        return two_shot_all_reduce(inp.contiguous(), self.policy.level, self._data_group,
                                   cast_bf16_to_fp16=self.use_fp16_kernels, out=out)

    def close(self) -> None:
        self.disabled = True
        self.disabled_reason = "closed"


VLLM_MODULE = "vllm.distributed.device_communicators.quick_all_reduce"


def accelerated_quick_all_reduce():
    """Conformance hook: vLLM's QuickAllReduce class, or (None, why not)."""
    try:
        import importlib  # noqa: PLC0415
        return importlib.import_module(VLLM_MODULE).QuickAllReduce, ""
    except Exception as e:  # ImportError, or vLLM failing to import on this hardware
        return None, f"vLLM's QuickAllReduce is not importable here ({type(e).__name__}: {e})"
