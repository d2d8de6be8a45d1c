"""Multi-process harness: run `fn(ctx, *args)` on W ranks and return their results.

- Rendezvous through a `file://` store in a fresh temp dir: no port to race for.
- Each rank is its own process group (session); on any exit path the whole group is
  SIGKILLed, grandchildren included, so nothing is left behind.
- A rank that raises: its traceback becomes the RankError message.
- A rank still running at the timeout: its Python stack is dumped (faulthandler,
  SIGUSR1), then it is killed, and RankTimeout names it.
- Each rank sees exactly its device: GPU visibility variables are set or cleared
  before the interpreter starts (see `device_env`).

This module imports no torch at import time, so ranks that need none start fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
TAIL = 3000


class RankError(Exception):
    """A rank failed; the message carries its traceback and output."""


class RankTimeout(RankError):
    """Ranks were still running at the timeout and were killed."""


@dataclass
class RankContext:
    rank: int
    world_size: int
    init_method: str
    device: str  # "cpu" or "cuda:0" (the rank's only visible GPU)

    def init_process_group(self, **kwargs) -> None:
        """No backend named: torch picks the one for this machine's accelerator."""
        import torch.distributed as dist  # noqa: PLC0415
        dist.init_process_group(init_method=self.init_method, rank=self.rank,
                                world_size=self.world_size, **kwargs)



def cpu_group():
    """A gloo group for CPU-side handshakes: the default group when it has a CPU backend."""
    import torch.distributed as dist  # noqa: PLC0415
    if "cpu:" in dist.get_backend_config():  # e.g. 'cpu:gloo' on a CPU-only machine
        return dist.group.WORLD
    return dist.new_group(backend="gloo")


def gpu_inventory() -> tuple[str, int]:
    """('nvidia'|'amd'|'none', count) of the GPUs this process sees."""
    try:
        import torch  # noqa: PLC0415
        count = torch.cuda.device_count()
    except Exception:
        return "none", 0
    if count == 0:
        return "none", 0
    return ("amd" if getattr(torch.version, "hip", None) else "nvidia"), count


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def device_env(environ, ordinal: int | None, vendor: str) -> dict[str, str | None]:
    """Visibility variables for a rank (None: unset). `ordinal` indexes the devices
    the parent sees; None hides every GPU. One variable rules and the others are
    cleared, so no two filters compose: CUDA_VISIBLE_DEVICES on NVIDIA,
    ROCR_VISIBLE_DEVICES (the lowest level) on AMD."""
    if ordinal is None:
        return dict.fromkeys(VISIBILITY_VARS, "")
    if vendor == "nvidia":
        seen = _split(environ.get("CUDA_VISIBLE_DEVICES", "")) or None
        token = seen[ordinal] if seen else str(ordinal)
        return {"CUDA_VISIBLE_DEVICES": token, "HIP_VISIBLE_DEVICES": None,
                "ROCR_VISIBLE_DEVICES": None}
    if vendor != "amd":
        raise ValueError(f"unknown GPU vendor {vendor!r}")
    # HIP (or its alias CUDA_VISIBLE_DEVICES) indexes the devices ROCR leaves visible.
    hip = _split(environ.get("HIP_VISIBLE_DEVICES") or environ.get("CUDA_VISIBLE_DEVICES") or "")
    rocr = _split(environ.get("ROCR_VISIBLE_DEVICES", ""))
    index = hip[ordinal] if hip else str(ordinal)
    if rocr:
        if not index.isdigit():
            raise ValueError(f"cannot resolve HIP device {index!r} within ROCR_VISIBLE_DEVICES")
        index = rocr[int(index)]
    return {"ROCR_VISIBLE_DEVICES": index, "HIP_VISIBLE_DEVICES": None, "CUDA_VISIBLE_DEVICES": None}


def _tail(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return text if len(text) <= TAIL else "..." + text[-TAIL:]


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return float("inf")


def signal_each(pids, sig: int) -> None:
    """Send `sig` to each pid; a process already gone is skipped."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def dump_stacks(pids, settle_s: float) -> None:
    """Ask each process for its Python stack (faulthandler registered on SIGUSR1 writes
    it to the process's stderr) and give them `settle_s` seconds to write it."""
    signal_each(pids, signal.SIGUSR1)
    time.sleep(settle_s)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the leader may be gone; its group may not


def run_ranks(fn, world_size: int, args=(), *, timeout: float = 120.0,
              gpus: list[int] | None = None, env: dict[str, str] | None = None):
    """Run `fn(ctx, *args)` on `world_size` fresh interpreters; return the ranks'
    return values. `fn` must be importable (module level). `gpus[r]` is the
    parent-visible GPU ordinal of rank r; without `gpus` the ranks see no GPU."""
    if gpus is not None and len(gpus) != world_size:
        raise ValueError("one GPU ordinal per rank")
    vendor = gpu_inventory()[0] if gpus is not None else "none"
    tmp = tempfile.mkdtemp(prefix="qr_ranks_")
    procs: list[subprocess.Popen] = []
    logs = [os.path.join(tmp, f"rank{r}.log") for r in range(world_size)]
    try:
        init = f"file://{os.path.join(tmp, 'rendezvous')}"
        for r in range(world_size):
            ordinal = None if gpus is None else gpus[r]
            spec = os.path.join(tmp, f"rank{r}.spec")
            with open(spec, "wb") as f:
                pickle.dump({"fn": fn, "args": args, "ctx": RankContext(
                    r, world_size, init, "cpu" if ordinal is None else "cuda:0")}, f)
            child_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
            for k, v in device_env(os.environ, ordinal, vendor).items():
                child_env.pop(k, None) if v is None else child_env.__setitem__(k, v)
            boot = ("import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
                    "from qr_tests.quick_reduce.harness import _rank_main; _rank_main(sys.argv[2])")
            with open(logs[r], "wb") as out:
                procs.append(subprocess.Popen(
                    [sys.executable, "-c", boot, json.dumps(sys.path), spec],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=child_env, start_new_session=True))
        return _collect(procs, logs, tmp, world_size, timeout)
    finally:
        for p in procs:
            _kill_group(p)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _collect(procs, logs, tmp, world_size, timeout):
    deadline = time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in procs]
        failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
        if failed:  # the first to fail is usually the cause: list it first
            failed.sort(key=lambda r: _mtime(os.path.join(tmp, f"rank{r}.error")))
            raise RankError(_failure_message(failed, codes, logs, tmp, world_size))
        if all(c == 0 for c in codes):
            break
        if time.monotonic() > deadline:
            hung = [r for r, c in enumerate(codes) if c is None]
            dump_stacks([procs[r].pid for r in hung], 0.5)  # into each rank's log
            parts = [f"rank(s) {hung} of {world_size} still running after {timeout:g} s; "
                     "killed with their process groups"]
            for r in hung:
                parts.append(f"--- rank {r} (pid {procs[r].pid}) output and stack ---\n"
                             f"{_tail(logs[r])}")
            raise RankTimeout("\n".join(parts))
        time.sleep(0.02)
    results = []
    for r in range(world_size):
        with open(os.path.join(tmp, f"rank{r}.result"), "rb") as f:
            results.append(pickle.load(f))
    return results


def _failure_message(failed, codes, logs, tmp, world_size) -> str:
    parts = []
    for r in failed:
        err = os.path.join(tmp, f"rank{r}.error")
        how = f"exit code {codes[r]}" if codes[r] > 0 else f"signal {-codes[r]}"
        tb = _tail(err) if os.path.exists(err) else "(no Python traceback: the process died)"
        parts.append(f"rank {r} of {world_size} failed ({how}):\n{tb}\n"
                     f"--- rank {r} output ---\n{_tail(logs[r])}")
    running = [r for r, c in enumerate(codes) if c is None]
    if running:
        parts.append(f"rank(s) {running} were still running and have been killed")
    return "\n".join(parts)


def _rank_main(spec_path: str) -> None:
    """Entry point of a rank's interpreter."""
    import faulthandler  # noqa: PLC0415
    import traceback  # noqa: PLC0415
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    base = spec_path[: -len(".spec")]
    try:
        with open(spec_path, "rb") as f:
            spec = pickle.load(f)
        result = spec["fn"](spec["ctx"], *spec["args"])
        with open(base + ".result.tmp", "wb") as f:
            pickle.dump(result, f)
        os.replace(base + ".result.tmp", base + ".result")
    except BaseException:
        with open(base + ".error", "w") as f:
            f.write(traceback.format_exc())
        sys.stdout.flush()
        os._exit(1)  # skip atexit hooks that could block on a broken collective
    finally:
        dist = sys.modules.get("torch.distributed")
        if dist is not None and dist.is_initialized():
            dist.destroy_process_group()
