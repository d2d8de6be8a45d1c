"""Hand-computed known answers: wire bytes, scales and decoded values of one chunk per
level, in fp16 and bf16."""

from __future__ import annotations

import torch

from qr_tests.quick_reduce.formats import bits_of
from qr_tests.quick_reduce.reference import BITS, TILE, Codec, Level

# Hand-computed known answers (fp16 and bf16 alike: every value below is exact in
# both): (even-block values, odd-block values, {byte offset: expected bytes},
# fill byte of the rest of the codes, decoded even, decoded odd). The rest of the chunk
# is +0; a zero decodes to 0 * dec: -0 in the even blocks (m > 0, dec < 0), +0 in the odd.
KNOWN_ANSWERS = {
    # even: m=4, dec=-0.5, enc=-2; 0.75 -> -1.5 -> -2 and -1.25 -> 2.5 -> 2 (half to
    # even); -3.75 -> 7.5 -> 8, clamped to 7. odd: tie 2/-2 -> m=-2, dec=0.25, enc=4;
    # +2 -> 8, clamped to 7. Byte j: element 2j in the low nibble, 2j+1 in the high.
    Level.INT4: ([4, 1, 0.75, 1.25, -1.25, -3.75], [2, -2, 0.5, 0.125],
                 {0: "f0 06 a6 86 8a 8f"}, 0x88,
                 [4, 1, 1, 1, -1, -3.5], [1.75, -2, 0.5, 0]),
    # even: m=4, dec=-0.125, enc=-8; 0.1875 -> -1.5 -> -2; -3.9375 -> 31.5 -> 32 -> 31.
    # odd: m=-2, dec=0.0625, enc=16; 0.15625 -> 2.5 -> 2. Low nibbles as INT4, then
    # from byte 1024 the top 2 bits, element 4k+i at bits 2i of byte k.
    Level.INT6: ([4, 1, 0.1875, -3.9375], [2, -2, 0.15625],
                 {0: "f0 08 2e 0f", 1024: "1c b9"}, None,
                 [4, 1, 0.25, -3.875], [1.9375, -2, 0.125]),
    # even: m=4, dec=-1/32, enc=-32; 0.046875 -> -1.5 -> -2; -3.984375 -> 127.5 -> 127.
    # odd: m=-1, dec=1/128, enc=128. One byte per code.
    Level.INT8: ([4, 0.046875, -3.984375], [1, -1],
                 {0: "00 ff 7e 00 ff"}, 0x80,
                 [4, 0.0625, -3.96875], [0.9921875, -1]),
}
KAT_SCALES = {  # the first two scales (even, odd block), little-endian T
    (Level.INT4, torch.float16): "00 b8 00 34", (Level.INT4, torch.bfloat16): "00 bf 80 3e",
    (Level.INT6, torch.float16): "00 b0 00 2c", (Level.INT6, torch.bfloat16): "00 be 80 3d",
    (Level.INT8, torch.float16): "00 a8 00 20", (Level.INT8, torch.bfloat16): "00 bd 00 3c",
}


def _chunk(even, odd, even_zero: float = 0.0) -> torch.Tensor:
    x = torch.zeros(64, dtype=torch.float64)
    x[0::2] = even_zero
    x[0:2 * len(even):2] = torch.tensor(even, dtype=torch.float64)
    x[1:2 * len(odd):2] = torch.tensor(odd, dtype=torch.float64)
    return x


def _hex(data) -> str:
    return " ".join(f"{b:02x}" for b in bytes(data))


def check_known_answers(codec: Codec) -> None:
    for (level, dtype), scale_hex in KAT_SCALES.items():
        even, odd, at, fill, dec_even, dec_odd = KNOWN_ANSWERS[level]
        x = _chunk(even, odd).to(dtype)
        got = bytes(codec.encode(x, level).tolist())
        body = TILE * BITS[level] // 8
        # the other 31 chunks are padding, all +0: m = +0, so their 62 scales are -0 (00 80)
        want = bytearray([fill if fill is not None else 0] * body) + b"\x00\x80" * 64
        if level is Level.INT6:  # zero codes are 32: low nibble 0, top bits 2
            want[1024:1536] = b"\xaa" * 512
        for offset, text in at.items():
            want[offset:offset + len(bytes.fromhex(text))] = bytes.fromhex(text)
        want[body:body + 4] = bytes.fromhex(scale_hex)
        if got != bytes(want):
            diff = next(i for i in range(len(want)) if i >= len(got) or got[i] != want[i])
            raise AssertionError(f"{level.name} {dtype} known answer: wire bytes differ at "
                                 f"offset {diff}: got {_hex(got[diff:diff + 8])}, "
                                 f"want {_hex(want[diff:diff + 8])}")
        decoded = codec.decode(codec.encode(x, level), level, dtype, 64)
        want_dec = _chunk(dec_even, dec_odd, even_zero=-0.0).to(dtype)
        if not torch.equal(bits_of(decoded), bits_of(want_dec)):  # the sign of zero too
            raise AssertionError(f"{level.name} {dtype} known answer: decoded "
                                 f"{decoded[:12].tolist()}, want {want_dec[:12].tolist()}")
