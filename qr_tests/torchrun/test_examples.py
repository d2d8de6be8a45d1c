"""The torchrun examples as subprocesses, like vLLM's "Distributed Torchrun + Examples"
step: every launch must exit 0 with every rank reporting OK (the ranks check each other
and the one-process run themselves; see dist.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from qr_tests.quick_reduce.harness import VISIBILITY_VARS, dump_stacks, run_ranks, signal_each
from qr_tests.torchrun.config import DENSE, MOE, QUANT_LEVELS, ConfigError, layout_from_env

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]  # `torchrun` of this interpreter
LAUNCH_TIMEOUT_S = 60  # a launch takes ~5 s on 2 cores; a hung collective must not stall CI
PARALLEL_VARS = ("TP_SIZE", "PP_SIZE", "DP_SIZE", "ENABLE_EP", "QR_QUANT")
HIDE_GPUS = dict.fromkeys(VISIBILITY_VARS, "")

# vLLM's list at world size 4 (each launch also covers a quick-reduce level where noted),
# then world size 2. Dense: TP defaults to 2 and DP fills the rest; MoE: TP defaults to 1.
# The last item is the (tp, pp, dp, ep) layout every rank must report having run.
CASES = [
    ("example.py", 4, {}, (2, 1, 2, False)),
    ("example.py", 4, {"PP_SIZE": "2", "QR_QUANT": "FP"}, (2, 2, 1, False)),
    ("example_moe.py", 4, {"TP_SIZE": "4", "QR_QUANT": "INT6"}, (4, 1, 1, False)),
    ("example_moe.py", 4, {"TP_SIZE": "2", "PP_SIZE": "2"}, (2, 2, 1, False)),
    ("example_moe.py", 4, {"DP_SIZE": "4", "ENABLE_EP": "1"}, (1, 1, 4, True)),
    ("example_moe.py", 4, {"TP_SIZE": "2", "DP_SIZE": "2", "ENABLE_EP": "1",
                                    "QR_QUANT": "INT4"}, (2, 1, 2, True)),
    ("example.py", 2, {"QR_QUANT": "INT8"}, (2, 1, 1, False)),
    ("example_moe.py", 2, {"TP_SIZE": "2", "QR_QUANT": "INT8"}, (2, 1, 1, False)),
    ("example.py", 2, {"TP_SIZE": "1", "PP_SIZE": "2"}, (1, 2, 1, False)),
    ("example_moe.py", 2, {"DP_SIZE": "2", "ENABLE_EP": "1"}, (1, 1, 2, True)),
]


def _case_id(case) -> str:
    script, world, env, _ = case
    return "-".join([script.removesuffix(".py"), f"w{world}"]
                    + [f"{k}={v}" for k, v in env.items()])


def _descendants(pid: int) -> list[int]:
    """Processes below `pid`, from /proc (Linux): torchrun starts each rank in a session of
    its own, so killing the launcher's process group would leave the ranks running."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process has exited
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _environ_without_layout() -> dict[str, str]:
    """This process's environment minus the variables the examples read their layout from."""
    return {k: v for k, v in os.environ.items() if k not in PARALLEL_VARS}


def launch(script: str, world: int, env: dict[str, str], extra_env: dict[str, str]):
    """Run `torchrun --standalone` (it picks a free port) and return (returncode, output).

    On timeout each rank is first asked for its Python stack (SIGUSR1, faulthandler), so
    the failure shows where it hung, then the launcher and every rank are killed."""
    child_env = _environ_without_layout()
    child_env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra_env, **env)
    cmd = [*TORCHRUN, "--standalone", f"--nproc-per-node={world}", f"qr_tests/torchrun/{script}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=LAUNCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        ranks = _descendants(proc.pid)
        dump_stacks(ranks, 1)
        signal_each([proc.pid, *ranks], signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} timed out after {LAUNCH_TIMEOUT_S} s; output:\n{out}")
    return proc.returncode, out


def reports(out: str) -> dict[int, dict]:
    return {r["rank"]: r for r in (json.loads(m) for m in re.findall(r"^OK (\{.*\})$", out, re.M))}


def check_launch(script: str, world: int, env: dict[str, str], extra_env: dict[str, str],
                 layout: tuple[int, int, int, bool]):
    """Launch, require exit 0 and an OK from every rank, each with the model of `script` and
    the (tp, pp, dp, ep) `layout` the environment asks for."""
    rc, out = launch(script, world, env, extra_env)
    env_text = " ".join(f"{k}={v}" for k, v in env.items())
    where = f"{env_text} torchrun --nproc-per-node={world} qr_tests/torchrun/{script}"
    assert rc == 0, f"{where} exited {rc}; ranks' output:\n{out}"
    got = reports(out)
    assert sorted(got) == list(range(world)), f"{where}: not every rank reported OK:\n{out}"
    model = MOE if script.endswith("_moe.py") else DENSE
    for r in got.values():
        assert (r["model"], r["tp"], r["pp"], r["dp"], r["ep"]) == (model.name, *layout), \
            f"{where}: rank {r['rank']} ran {r}, want {model.name} (tp, pp, dp, ep) = {layout}"
    if "QR_QUANT" in env:
        assert all(r["quant"] == env["QR_QUANT"] for r in got.values()), out
    return got


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_torchrun_example_cpu(case):
    script, world, env, layout = case
    got = check_launch(script, world, env, HIDE_GPUS, layout)
    assert {r["device"] for r in got.values()} == {"cpu"}, got
    assert all("gloo" in r["backend"] for r in got.values()), got


@pytest.mark.needs_gpu(vendor="any", count=1)
@pytest.mark.parametrize("script,model", [("example.py", DENSE),
                                          ("example_moe.py", MOE)])
def test_torchrun_example_one_gpu_matches_cpu(script, model):
    """World size 1 on the GPU: the default backend of a CUDA device, and the same greedy
    tokens as the one-process model on CPU."""
    import torch  # noqa: PLC0415 - only GPU machines get here

    from qr_tests.torchrun import tiny_model as tm  # noqa: PLC0415

    got = check_launch(script, 1, {"TP_SIZE": "1"}, {}, (1, 1, 1, False))
    assert got[0]["device"] == "cuda:0", got
    cpu_model = tm.Shard(model, tm.make_weights(model), torch.device("cpu"))
    cpu_tokens, _ = tm.generate(cpu_model, tm.make_prompts(model), model.new_tokens)
    assert got[0]["tokens"] == cpu_tokens.tolist()


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.needs_gpu(vendor="any", count=c[1]))
                                  for c in CASES], ids=_case_id)
def test_torchrun_example_on_gpus(case):
    """One GPU per rank, the default (NCCL/RCCL) backend."""
    script, world, env, layout = case
    got = check_launch(script, world, env, {}, layout)
    assert {r["device"] for r in got.values()} == {f"cuda:{i}" for i in range(world)}, got
    assert all("nccl" in r["backend"] for r in got.values()), got


@pytest.mark.parametrize("env,message", [
    ({"TP_SIZE": "3"}, "TP_SIZE=3 x PP_SIZE=1 does not divide WORLD_SIZE=4"),
    ({"DP_SIZE": "4"}, "TP_SIZE=2 x PP_SIZE=1 x DP_SIZE=4 != WORLD_SIZE=4"),
    ({"TP_SIZE": "x"}, "TP_SIZE must be a positive integer, got 'x'"),
    ({"ENABLE_EP": "yes"}, "ENABLE_EP must be 0, 1, true or false, got 'yes'"),
    ({"QR_QUANT": "INT2"}, "QR_QUANT must be one of FP, INT8, INT6, INT4, got 'INT2'"),
    ({"QR_QUANT": "INT8", "TP_SIZE": "1"}, "QR_QUANT routes the TP all-reduce: needs TP_SIZE > 1"),
])
def test_bad_layout_one_line_nonzero_exit(env, message):
    """Checked before torch is imported: one line on rank 0, exit status 2, no traceback."""
    for rank, stderr in (("0", f"error: {message}\n"), ("1", "")):
        full_env = {**_environ_without_layout(), "WORLD_SIZE": "4", "RANK": rank, **env}
        proc = subprocess.run([sys.executable, "qr_tests/torchrun/example.py"], cwd=ROOT,
                              env=full_env, capture_output=True, text=True, timeout=30)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", stderr), f"rank {rank}"


def test_bad_layout_exits_before_torch_is_imported():
    """A bad layout costs no torch import (seconds per rank on a small agent)."""
    probe = ("import runpy, sys\n"
             "try:\n    runpy.run_path('qr_tests/torchrun/example.py', run_name='__main__')\n"
             "except SystemExit as e:\n    print(e.code, 'torch' in sys.modules)\n")
    env = {**_environ_without_layout(), "WORLD_SIZE": "4", "RANK": "1", "TP_SIZE": "3"}
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=30)
    assert proc.stdout == "2 False\n", proc.stdout + proc.stderr


def test_quant_levels_are_the_codec_levels():
    """config.py names the levels without importing torch; they must stay Level's."""
    from qr_tests.quick_reduce.reference import Level  # noqa: PLC0415

    assert tuple(Level.__members__) == QUANT_LEVELS


def quick_tp_worker(ctx):
    """QR_QUANT's all-reduce and its bound check on the rank's device, at world size 1."""
    import torch  # noqa: PLC0415

    from qr_tests.torchrun.quant import QuickTensorParallel  # noqa: PLC0415

    ctx.init_process_group()
    torch.manual_seed(0)
    out = {}
    for name in QUANT_LEVELS:
        quick = QuickTensorParallel(name)
        x = torch.randn(4, 6, 32, device=ctx.device)
        y = quick(x, None)
        out[name] = (quick.calls, quick.worst <= 1.0, y.device.type, tuple(y.shape))
    return out


@pytest.mark.needs_gpu(vendor="any", count=1)
def test_quantized_tp_all_reduce_on_one_gpu():
    """The QR_QUANT path on CUDA tensors: its bound check once built CPU constants, which
    only the 2-GPU torchrun launches found. One GPU is enough to catch that."""
    from qr_tests.torchrun import test_examples as this  # noqa: PLC0415 - importable in the rank

    got = run_ranks(this.quick_tp_worker, 1, gpus=[0], timeout=240)[0]
    assert got == dict.fromkeys(QUANT_LEVELS, (1, True, "cuda", (4, 6, 32))), got


@pytest.mark.parametrize("model,world,env,message", [
    (DENSE, 8, {"TP_SIZE": "8"}, "TP_SIZE=8 does not divide the 4 heads"),
    (DENSE, 8, {"PP_SIZE": "8", "TP_SIZE": "1"}, "PP_SIZE=8 does not divide the 4 layers"),
    (DENSE, 8, {"TP_SIZE": "1"}, "DP_SIZE=8 does not divide the 4 prompts"),
    (DENSE, 2, {"ENABLE_EP": "1"}, "ENABLE_EP needs the MoE example"),
    (MOE, 16, {"DP_SIZE": "4", "TP_SIZE": "4", "ENABLE_EP": "1"},
     "expert parallel size TP_SIZE x DP_SIZE=16 does not divide the 8 experts"),
    (MOE, 1, {}, None),
])
def test_layout_limits_of_the_model(model, world, env, message):
    full_env = {"WORLD_SIZE": str(world), "RANK": "0", **env}
    if message is None:
        assert layout_from_env(full_env, model).world == world
        return
    with pytest.raises(ConfigError) as err:
        layout_from_env(full_env, model)
    assert str(err.value) == message


def test_layout_ranks_follow_vllm_order():
    """TP innermost, then PP, then DP; expert parallelism spans a stage's DP x TP ranks."""
    env = {"WORLD_SIZE": "8", "RANK": "6", "TP_SIZE": "2", "PP_SIZE": "2", "ENABLE_EP": "1"}
    lay = layout_from_env(env, MOE)
    assert (lay.dp, lay.dp_rank, lay.pp_rank, lay.tp_rank) == (2, 1, 1, 0)
    assert (lay.ep_size, lay.ep_rank) == (4, 2)
    assert lay.rank_of(lay.dp_rank, lay.pp_rank, lay.tp_rank) == 6
