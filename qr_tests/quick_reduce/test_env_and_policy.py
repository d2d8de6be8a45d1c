"""The communicator's environment variables and its size, dtype and layout policy."""

from __future__ import annotations

import pytest
import torch

from qr_tests.quick_reduce.communicator import (
    DEFAULT_MAX_SIZE,
    ENV_CAST,
    ENV_MAX,
    ENV_MIN,
    ENV_QUANTIZATION,
    MB,
    Policy,
    QuickReduceConfig,
    min_size_for,
)
from qr_tests.quick_reduce.reference import Level

# The spec's minimum message sizes (MB, columns FP / INT8 / INT6 / INT4), written out
# rather than read from communicator.MIN_SIZE_MB, so that a wrong entry there fails.
SPEC_MIN_SIZE_MB = {
    (torch.float16, 2): (1, 2, 2, 1),
    (torch.float16, 4): (1, 16, 4, 2),
    (torch.float16, 8): (16, 4, 4, 2),
    (torch.bfloat16, 2): (2, 8, 8, 8),
    (torch.bfloat16, 4): (8, 64, 64, 16),
    (torch.bfloat16, 8): (16, 2048, 2048, 2048),
}


# -- environment ----------------------------------------------------------------------
def test_env_defaults():
    assert QuickReduceConfig.from_env({}) == QuickReduceConfig(None, True, DEFAULT_MAX_SIZE, None)


@pytest.mark.parametrize("value", ["FP", "INT8", "INT6", "INT4"])
def test_env_quantization_levels(value):
    assert QuickReduceConfig.from_env({ENV_QUANTIZATION: value}).level is Level[value]


@pytest.mark.parametrize("value", ["int4", "INT5", "INT3", "", " FP", "none"])
def test_env_quantization_invalid(value):
    with pytest.raises(ValueError, match=f"Invalid value '{value}' for {ENV_QUANTIZATION}"):
        QuickReduceConfig.from_env({ENV_QUANTIZATION: value})


@pytest.mark.parametrize("value,cast", [("true", True), ("TRUE", True), ("1", True),
                                        ("True", True), ("0", False), ("false", False),
                                        ("yes", False), ("", False), ("2", False)])
def test_env_cast(value, cast):
    assert QuickReduceConfig.from_env({ENV_CAST: value}).cast_bf16_to_fp16 is cast


def test_env_sizes():
    cfg = QuickReduceConfig.from_env({ENV_MAX: "512", ENV_MIN: "3"})
    assert (cfg.max_size, cfg.min_size) == (512 * MB, 3 * MB)
    assert QuickReduceConfig.from_env({ENV_MIN: "0"}).min_size == 0
    assert QuickReduceConfig.from_env({ENV_MAX: "8", ENV_MIN: "8"}).min_size == 8 * MB


@pytest.mark.parametrize("env,match", [
    ({ENV_MAX: "1.5"}, f"Invalid value '1.5' for {ENV_MAX}"),
    ({ENV_MAX: "lots"}, f"Invalid value 'lots' for {ENV_MAX}"),
    ({ENV_MIN: "2.0"}, f"Invalid value '2.0' for {ENV_MIN}"),
    ({ENV_MIN: "-1"}, "must be non-negative"),
    ({ENV_MIN: "2049"}, r"must be <= the max size \(2048 MB\)"),
    ({ENV_MAX: "4", ENV_MIN: "5"}, r"must be <= the max size \(4 MB\)"),
])
def test_env_size_errors(env, match):
    with pytest.raises(ValueError, match=match):
        QuickReduceConfig.from_env(env)


# -- policy ---------------------------------------------------------------------------
def meta(nbytes: int, dtype=torch.float16) -> torch.Tensor:
    """A tensor of nbytes with no memory behind it."""
    assert nbytes % 2 == 0
    return torch.empty(nbytes // 2, dtype=dtype, device="meta")


@pytest.mark.parametrize("key", sorted(SPEC_MIN_SIZE_MB, key=str))
@pytest.mark.parametrize("level", list(Level))
@pytest.mark.parametrize("cast", [True, False])
def test_min_size_thresholds(key, level, cast):
    dtype, world = key
    policy = Policy(world, level, cast)
    row = torch.float16 if cast else dtype
    lo = SPEC_MIN_SIZE_MB[(row, world)][level.value] * MB
    assert min_size_for(dtype, world, level, cast) == lo
    assert not policy.accepts(meta(lo - 16, dtype))
    assert policy.accepts(meta(lo, dtype))
    assert policy.accepts(meta(DEFAULT_MAX_SIZE, dtype))
    assert not policy.accepts(meta(DEFAULT_MAX_SIZE + 16, dtype))


def test_policy_shape_and_dtype_rules():
    policy = Policy(2, Level.INT4, True, max_size=64 * MB)
    assert policy.accepts(meta(4 * MB))
    assert not policy.accepts(torch.empty(MB, dtype=torch.float32, device="meta"))
    odd = torch.empty(2 * MB + 1, dtype=torch.float16, device="meta")
    assert not policy.accepts(odd)  # 4 MB + 2 bytes: not a multiple of 16
    assert not policy.accepts(meta(64 * MB + 16))
    square = torch.empty(2048, 2048, dtype=torch.float16, device="meta")
    # weakly contiguous (the elements fill the storage's tail, in any order) is enough
    # for an element-wise sum; a view with gaps is not
    assert policy.accepts(square.t()) and policy.accepts(square[1024:].t())
    assert not policy.accepts(square[:, :1024]) and not policy.accepts(square[:1024].t())
    override = Policy(2, Level.INT4, True, min_size=0)
    assert override.accepts(meta(16)) and not override.accepts(meta(8))
