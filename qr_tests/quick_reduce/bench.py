"""Measurements for qr_tests/README.md (a script, not a test).

  python qr_tests/quick_reduce/bench.py --table            # rel. L2 error, CPU
  python qr_tests/quick_reduce/bench.py --digest [--out D] # codec + 1-process run digests
  python qr_tests/quick_reduce/bench.py --throughput       # codec vs copy, needs CUDA
  python qr_tests/quick_reduce/bench.py --all-reduce        # two-shot vs all_reduce, every GPU

--digest hashes the wire bytes and decoded bits of fixed-seed inputs on the CPU and,
where present, on CUDA (codec, and a one-process two-shot run over the default
process group), so digests from different machines can be compared too.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from qr_tests.quick_reduce.bounds import SPEC_REL_L2, relative_l2_error  # noqa: E402
from qr_tests.quick_reduce.formats import bits_of  # noqa: E402
from qr_tests.quick_reduce.harness import run_ranks  # noqa: E402
from qr_tests.quick_reduce.inputs import DTYPE_CASTS, KINDS, make_input  # noqa: E402
from qr_tests.quick_reduce.reference import FP16_MAX, REFERENCE, Level, simulate_all_reduce, two_shot_all_reduce  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
NAMES = {dtype: name for name, dtype in DTYPES.items()}


def _column(dtype, cast) -> str:
    """'fp16', 'bf16 (cast)' or 'bf16 (no cast)': the cast only acts on bf16."""
    if dtype == torch.float16:
        return NAMES[dtype]
    return f"{NAMES[dtype]} ({'cast' if cast else 'no cast'})"


def relative_error_table(n: int = 1 << 20, seed: int = 0) -> str:
    head = ["level", "spec"] + [f"{_column(*c)} W={w}" for c in DTYPE_CASTS for w in (2, 4)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for level in Level:
        cells = [level.name, f"{SPEC_REL_L2[level]:g}"]
        for dtype, cast in DTYPE_CASTS:
            for world in (2, 4):
                cells.append(f"{relative_l2_error(level, dtype, world, cast, n, seed):.2e}")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _digest(*tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        t = t.cpu().contiguous()  # raw bytes without numpy (absent on some venvs)
        h.update(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))
    return h.hexdigest()[:16]


def codec_digests(device: str, n: int = 100_003) -> dict:
    out = {}
    for dname, dtype in DTYPES.items():
        for level in Level:
            for j, kind in enumerate(KINDS):
                x = make_input(kind, n, dtype, 1000 + j).to(device)
                wire = REFERENCE.encode(x, level)
                back = REFERENCE.decode(wire, level, dtype, n)
                out[f"codec {level.name} {dname} {kind}"] = _digest(wire, bits_of(back))
    return out


ALL_REDUCE_CASES = [(level, NAMES[dtype], cast) for level in Level for dtype, cast in DTYPE_CASTS]


def _all_reduce_input(dname, world, rank):
    return make_input("heavy", 70_001, DTYPES[dname], 2000 + rank, limit=FP16_MAX / world)


def one_process_worker(ctx):
    ctx.init_process_group()
    import torch.distributed as dist  # noqa: PLC0415
    res = {"backend": dist.get_backend_config()}
    for level, dname, cast in ALL_REDUCE_CASES:
        x = _all_reduce_input(dname, 1, 0).to(ctx.device)
        y = two_shot_all_reduce(x, level, cast_bf16_to_fp16=cast)
        res[f"all-reduce W=1 {level.name} {dname} cast={cast}"] = _digest(bits_of(y))
    return res


def all_reduce_digests_cpu() -> dict:
    return {f"all-reduce W=1 {level.name} {dname} cast={cast}": _digest(bits_of(
        simulate_all_reduce([_all_reduce_input(dname, 1, 0)], level, cast)))
        for level, dname, cast in ALL_REDUCE_CASES}


def digests(out_dir: str | None) -> bool:
    result = {"torch": torch.__version__, "cpu": {**codec_digests("cpu"), **all_reduce_digests_cpu()}}
    if torch.cuda.is_available():
        result["device"] = torch.cuda.get_device_name()
        gpu = codec_digests("cuda")
        from qr_tests.quick_reduce import bench as this  # importable by name in the rank
        ranks = run_ranks(this.one_process_worker, 1, gpus=[0], timeout=300)
        result["backend"] = ranks[0].pop("backend")
        result["cuda"] = {**gpu, **ranks[0]}
    same = "cuda" not in result or result["cuda"] == result["cpu"]
    print(f"{len(result['cpu'])} digests; CUDA present: {'cuda' in result}; identical: {same}")
    if out_dir:
        with open(os.path.join(out_dir, "digests.json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    return same


def _time(fn, inputs, reps: int, before=lambda: None) -> float:
    """Median microseconds of fn(x) over reps runs, rotating through inputs; `before()`
    runs ahead of each timed run, outside the timing."""
    for x in inputs[:3]:
        fn(x)
    times = []
    for i in range(reps):
        before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        x = inputs[i % len(inputs)]
        start.record()
        fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return statistics.median(times)


def _graph_time(fn, x, reps: int) -> float:
    """Median microseconds of one replay of fn(x) captured as a CUDA graph."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(x)
    return _time(lambda _: graph.replay(), [x], reps)


def throughput(reps: int = 100) -> str:
    rows = ["| size | copy us (GB/s) | level | Q(x) eager us (GB/s) | x copy | Q(x) graph us |",
            "|---|---|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    for mb in (1, 8, 64):
        n = mb * (1 << 20) // 2
        # rotate through 512 MB of inputs (and outputs), far past the 60 MB L2
        inputs = [torch.randn(n, device="cuda").half() for _ in range(max(2, 512 // mb))]
        pairs = [(x, torch.empty_like(x)) for x in inputs]
        copy_us = _time(lambda p: p[1].copy_(p[0]), pairs, reps)
        gbs = lambda us, mb=mb: mb * (1 << 20) / us / 1e3  # noqa: E731
        for level in Level:
            def q(x, level=level):
                return REFERENCE.roundtrip(x, level)
            q_us = _time(q, inputs, reps)
            try:
                graph = f"{_graph_time(q, inputs[0], reps):.1f}"
            except RuntimeError as e:  # keep the eager numbers if capture fails
                graph = f"n/a ({type(e).__name__})"
            rows.append(f"| {mb} MB | {copy_us:.1f} ({gbs(copy_us):.0f}) | {level.name} | "
                        f"{q_us:.1f} ({gbs(q_us):.0f}) | {q_us / copy_us:.1f} | {graph} |")
            print(rows[-1], flush=True)
        del inputs, pairs
        torch.cuda.empty_cache()
    return "\n".join(rows)


ALL_REDUCE_MB = (1, 8, 64, 256)


def _align_ranks() -> None:
    """A barrier before each run, so the ranks' device events time the collective, not a
    wait for a late peer."""
    import torch.distributed as dist  # noqa: PLC0415
    torch.cuda.synchronize()
    dist.barrier()


def all_reduce_worker(ctx, reps):
    """Rank 0's median for each (dtype, size, method). all_reduce works in place on a
    copy (its values grow each run; NCCL's time does not depend on them), so the
    reference reads the same finite input every time."""
    ctx.init_process_group()
    import torch.distributed as dist  # noqa: PLC0415
    torch.cuda.set_device(0)
    res = {"backend": dist.get_backend_config()}
    for dname, dtype in DTYPES.items():
        for mb in ALL_REDUCE_MB:
            n = mb * (1 << 20) // 2
            x = torch.randn(n, device="cuda").to(dtype)
            res[f"{dname} {mb} all_reduce"] = _time(dist.all_reduce, [x.clone()], reps, _align_ranks)
            for level in Level:
                res[f"{dname} {mb} {level.name}"] = _time(
                    lambda t, level=level: two_shot_all_reduce(t, level), [x], reps, _align_ranks)
            del x
            torch.cuda.empty_cache()
    return res


def all_reduce_table(reps: int = 50) -> str:
    world = torch.cuda.device_count()
    from qr_tests.quick_reduce import bench as this  # importable by name in the ranks
    res = run_ranks(this.all_reduce_worker, world, (reps,), gpus=list(range(world)), timeout=580)[0]
    levels = [level.name for level in Level]
    rows = [f"{torch.cuda.get_device_name()} x{world}, torch {torch.__version__}, {res['backend']}, "
            f"median of {reps} runs (us, rank 0)", "",
            "| dtype | size | all_reduce | " + " | ".join(f"ref {name}" for name in levels) + " |",
            "|---|---|---|" + "---|" * len(levels)]
    for dname in DTYPES:
        for mb in ALL_REDUCE_MB:
            cells = [f"{res[f'{dname} {mb} {m}']:.0f}" for m in ("all_reduce", *levels)]
            rows.append(f"| {dname} | {mb} MB | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--digest", action="store_true")
    ap.add_argument("--throughput", action="store_true")
    ap.add_argument("--all-reduce", action="store_true")
    ap.add_argument("--out", help="folder for digests.json")
    a = ap.parse_args()
    ok = True
    if a.table:
        print(relative_error_table())
    if a.digest:
        ok = digests(a.out)
    if a.throughput:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
        throughput()
    if a.all_reduce:
        print(all_reduce_table())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
