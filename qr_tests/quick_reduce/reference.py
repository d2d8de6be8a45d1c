"""Pure-PyTorch reference of QuickReduce: the blockwise codec, its wire format and
the two-shot all-reduce (see qr_tests/quick_reduce/README.md for the byte layout).

Every T-typed step (T = fp16 or bf16) is computed in fp32 and rounded to T once.
fp32 carries more than 2p+2 bits for both types, so each step equals the correctly
rounded T operation, on any device: the output is bit-identical on CPU and CUDA.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch
import torch.distributed as dist


class Level(enum.Enum):
    # Values match vLLM's QuickReduceRegime ids (column order of the min-size table).
    FP = 0
    INT8 = 1
    INT6 = 2
    INT4 = 3


BITS = {Level.INT8: 8, Level.INT6: 6, Level.INT4: 4}
BLOCK = 32  # a chunk of 64 elements holds two blocks: its even- and its odd-index elements
TILE = 2048  # elements per 4 KiB of fp16: the unit of the wire format
FP16_MAX = 65504.0
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)


def eps_for(dtype: torch.dtype) -> float:
    """The epsilon added to the decoding scale, as a value of T (1e-7 is not exact in bf16)."""
    if dtype == torch.float16:
        return 2.0**-24
    return float(torch.tensor(1e-7, dtype=torch.float32).to(dtype))


def tile_bytes(level: Level) -> int:
    """Wire bytes per tile: FP 4096, INT8 2176, INT6 1664, INT4 1152."""
    if level is Level.FP:
        return TILE * 2
    return TILE * BITS[level] // 8 + (TILE // BLOCK) * 2


def round_to(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round an fp32 result to T and back to fp32. fp16 overflow saturates to +-65504,
    as on the kernel (FP16_OVFL set); clamping before the cast gives the same result."""
    if dtype == torch.float16:
        v = v.clamp(-FP16_MAX, FP16_MAX)
    return v.to(dtype).float()


def to_fp16_saturating(x: torch.Tensor) -> torch.Tensor:
    """The bf16 -> fp16 cast of the bf16 path: round to nearest even, saturate."""
    return x.float().clamp(-FP16_MAX, FP16_MAX).to(torch.float16)


@dataclass
class Encoded:
    """One message before packing: codes (uint8, q + R, element order) and one scale
    (dec, in T) per block; for FP, `codes` holds the raw T values."""

    level: Level
    dtype: torch.dtype
    numel: int
    codes: torch.Tensor
    scales: torch.Tensor | None


class Codec:
    """The reference codec. Each step is a method so that tests can build mutants
    that get exactly one step wrong."""

    # -- block layout -------------------------------------------------------------
    def blocks(self, flat: torch.Tensor) -> torch.Tensor:
        """(n,) -> (n/32, 32): chunk c gives block 2c (even elements), 2c+1 (odd)."""
        return flat.view(-1, BLOCK, 2).transpose(1, 2).reshape(-1, BLOCK)

    def unblocks(self, blocks: torch.Tensor) -> torch.Tensor:
        return blocks.view(-1, 2, BLOCK).transpose(1, 2).reshape(-1)

    # -- arithmetic ---------------------------------------------------------------
    def block_max(self, b: torch.Tensor) -> torch.Tensor:
        """Largest-magnitude element with its sign; -m wins a tie with +m. A block of
        zeros has m = -0 only if it holds a -0: the kernel's m of an all-+0 block is +0,
        so its scale is -0 and its zeros decode to -0 (signbit, since -0 == +0)."""
        amax = b.abs().amax(dim=1)
        has_neg = ((b == -amax[:, None]) & b.signbit()).any(dim=1)
        return torch.where(has_neg, -amax, amax)

    def scales(self, m: torch.Tensor, bits: int, dtype: torch.dtype):
        r = 2 ** (bits - 1)
        dec = round_to(m * (-1.0 / r), dtype)
        enc = round_to(1.0 / round_to(dec + eps_for(dtype), dtype), dtype)
        return dec, enc

    def round(self, y: torch.Tensor) -> torch.Tensor:
        return torch.round(y)  # half to even

    # -- quantize / dequantize ----------------------------------------------------
    def quantize(self, x: torch.Tensor, level: Level) -> Encoded:
        if x.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"quick-reduce codec takes fp16 or bf16, got {x.dtype}")
        flat = x.reshape(-1)
        n = flat.numel()
        pad = -n % TILE  # elements past the end are zeros
        flat = torch.nn.functional.pad(flat, (0, pad))
        if level is Level.FP:
            return Encoded(level, x.dtype, n, flat, None)
        bits = BITS[level]
        r = 2 ** (bits - 1)
        b = self.blocks(flat.float())
        dec, enc = self.scales(self.block_max(b), bits, x.dtype)
        y = round_to(b * enc[:, None], x.dtype)
        q = self.round(y.clamp(-r, r - 1))
        codes = self.unblocks((q + r).to(torch.uint8))
        return Encoded(level, x.dtype, n, codes, dec.to(x.dtype))

    def dequantize(self, e: Encoded) -> torch.Tensor:
        if e.level is Level.FP:
            return e.codes[: e.numel]
        r = 2 ** (BITS[e.level] - 1)
        q = self.blocks(e.codes).float() - r
        x = round_to(q * e.scales.float()[:, None], e.dtype)
        return self.unblocks(x.to(e.dtype))[: e.numel]

    # -- wire format --------------------------------------------------------------
    def pack_codes(self, codes: torch.Tensor, bits: int) -> torch.Tensor:
        """(tiles, 2048) codes -> (tiles, 2048*bits/8) bytes."""
        if bits == 8:
            return codes
        lo = codes & 0x0F
        nib = lo[:, 0::2] | (lo[:, 1::2] << 4)  # element 2j low nibble, 2j+1 high
        if bits == 4:
            return nib
        hi = (codes >> 4).view(codes.shape[0], -1, 4)  # INT6: 2-bit tops, 4 per byte
        tops = hi[..., 0] | (hi[..., 1] << 2) | (hi[..., 2] << 4) | (hi[..., 3] << 6)
        return torch.cat([nib, tops], dim=1)

    def unpack_codes(self, data: torch.Tensor, bits: int) -> torch.Tensor:
        if bits == 8:
            return data
        nib = data[:, : TILE // 2]
        codes = torch.stack([nib & 0x0F, nib >> 4], dim=2).reshape(-1, TILE)
        if bits == 4:
            return codes
        tops = data[:, TILE // 2 :]
        hi = torch.stack([(tops >> s) & 0x03 for s in (0, 2, 4, 6)], dim=2)
        return codes | (hi.reshape(-1, TILE) << 4)

    def pack(self, e: Encoded) -> torch.Tensor:
        tiles = e.codes.numel() // TILE
        if e.level is Level.FP:
            return e.codes.contiguous().view(torch.uint8)
        body = self.pack_codes(e.codes.view(tiles, TILE), BITS[e.level])
        scales = e.scales.contiguous().view(torch.uint8).view(tiles, -1)
        return torch.cat([body, scales], dim=1).reshape(-1)

    def unpack(self, buf: torch.Tensor, level: Level, dtype: torch.dtype, numel: int) -> Encoded:
        tiles = buf.numel() // tile_bytes(level)
        if buf.numel() != tiles * tile_bytes(level) or tiles * TILE < numel:
            raise ValueError(f"{buf.numel()} bytes do not hold {numel} {level.name} values")
        if level is Level.FP:
            return Encoded(level, dtype, numel, buf.view(dtype), None)
        rows = buf.view(tiles, tile_bytes(level))
        split = TILE * BITS[level] // 8
        codes = self.unpack_codes(rows[:, :split], BITS[level]).reshape(-1)
        scales = rows[:, split:].contiguous().view(dtype).reshape(-1)
        return Encoded(level, dtype, numel, codes, scales)

    # -- conveniences -------------------------------------------------------------
    def encode(self, x: torch.Tensor, level: Level) -> torch.Tensor:
        return self.pack(self.quantize(x, level))

    def decode(self, buf: torch.Tensor, level: Level, dtype: torch.dtype, numel: int) -> torch.Tensor:
        return self.dequantize(self.unpack(buf, level, dtype, numel))

    def roundtrip(self, x: torch.Tensor, level: Level) -> torch.Tensor:
        """Q(x): encode, pack, unpack, decode; same shape and dtype as x."""
        return self.decode(self.encode(x, level), level, x.dtype, x.numel()).view(x.shape)


REFERENCE = Codec()


def _to_work(inp: torch.Tensor, cast: bool) -> torch.Tensor:
    flat = inp.reshape(-1)
    return to_fp16_saturating(flat) if cast and inp.dtype == torch.bfloat16 else flat


def sum_in_order(parts, dtype: torch.dtype) -> torch.Tensor:
    """Owner's reduction: from zero, rank 0..W-1, each addition rounded to T."""
    acc = torch.zeros_like(parts[0], dtype=torch.float32)
    for p in parts:
        acc = round_to(acc + p.float(), dtype)
    return acc.to(dtype)


def simulate_all_reduce(inputs, level: Level, cast_bf16_to_fp16: bool = True,
                        codec: Codec = REFERENCE) -> torch.Tensor:
    """Q(sum_r Q(x_r)) in one process: what every rank of the two-shot must return."""
    xs = [_to_work(x, cast_bf16_to_fp16) for x in inputs]
    t = xs[0].dtype
    total = sum_in_order([codec.roundtrip(x, level) for x in xs], t)
    return codec.roundtrip(total, level).to(inputs[0].dtype).view(inputs[0].shape)


def two_shot_all_reduce(inp: torch.Tensor, level: Level, group=None, *,
                        cast_bf16_to_fp16: bool = True, codec: Codec = REFERENCE,
                        out: torch.Tensor | None = None) -> torch.Tensor:
    """The two-shot all-reduce over torch.distributed, on whatever backend the group
    has for inp's device (gloo for CPU, NCCL/RCCL for GPU tensors).

    Phase 1 sends each tile-aligned segment, encoded, to its owner (all_to_all);
    the owner sums in rank order; phase 2 all-gathers the owners' encoded sums.
    Dtypes other than fp16/bf16 raise TypeError in Codec.quantize, before any collective."""
    world = dist.get_world_size(group)
    x = _to_work(inp, cast_bf16_to_fp16)
    t, n = x.dtype, x.numel()
    seg = max(1, math.ceil(n / (world * TILE))) * TILE
    x = torch.nn.functional.pad(x, (0, seg * world - n))
    send = torch.cat([codec.encode(x[r * seg:(r + 1) * seg], level) for r in range(world)])
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    parts = [codec.decode(p, level, t, seg) for p in recv.view(world, -1)]
    mine = codec.encode(sum_in_order(parts, t), level)
    gathered = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine, group=group)
    result = torch.cat([codec.decode(g, level, t, seg) for g in gathered])[:n]
    result = result.to(inp.dtype).view(inp.shape)
    if out is None:
        return result
    return out.copy_(result)
