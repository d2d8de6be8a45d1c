"""The multi-process harness itself: failures surface, hangs are killed, nothing stays."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from qr_tests.conftest import lacking, needs_gpu_args
from qr_tests.quick_reduce.harness import VISIBILITY_VARS, RankError, RankTimeout, device_env, run_ranks


def report(ctx):
    return ctx.rank, ctx.world_size, ctx.device, {k: os.environ.get(k) for k in VISIBILITY_VARS}


def raise_on_rank_one(ctx):
    if ctx.rank == 1:
        raise ValueError("boom from rank 1")
    time.sleep(60)  # a peer blocked on the failed rank: must be killed, not awaited


def hang_on_rank_one(ctx, pid_file):
    if ctx.rank == 1:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(pid_file, "w") as f:
            f.write(str(child.pid))
        while True:  # a rank stuck in a collective
            time.sleep(0.1)
    return "done"


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_results_in_rank_order_and_gpus_hidden():
    results = run_ranks(report, 3, timeout=60)
    assert [r[:3] for r in results] == [(r, 3, "cpu") for r in range(3)]
    for _, _, _, env in results:
        assert env == dict.fromkeys(env, "")


def test_rank_exception_becomes_the_failure():
    start = time.monotonic()
    with pytest.raises(RankError) as info:
        run_ranks(raise_on_rank_one, 2, timeout=60)
    text = str(info.value)
    assert text.startswith("rank 1 of 2 failed (exit code 1)")
    assert "in raise_on_rank_one" in text and "ValueError: boom from rank 1" in text
    assert "[0] were still running and have been killed" in text
    assert time.monotonic() - start < 30


def test_hung_rank_is_named_and_killed_with_its_children(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    with pytest.raises(RankTimeout) as info:
        run_ranks(hang_on_rank_one, 2, (str(pid_file),), timeout=4)
    text = str(info.value)
    assert text.startswith("rank(s) [1] of 2 still running after 4 s")
    assert "hang_on_rank_one" in text  # the stack dumped before the kill
    deadline = time.monotonic() + 5
    pid = int(pid_file.read_text())
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), "the hung rank's child survived"


@pytest.mark.parametrize("environ,ordinal,vendor,want", [
    ({}, None, "none", {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "",
                        "ROCR_VISIBLE_DEVICES": ""}),
    ({}, 1, "nvidia", {"CUDA_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": None,
                       "ROCR_VISIBLE_DEVICES": None}),
    ({"CUDA_VISIBLE_DEVICES": "4,6"}, 1, "nvidia", {"CUDA_VISIBLE_DEVICES": "6",
                                                    "HIP_VISIBLE_DEVICES": None,
                                                    "ROCR_VISIBLE_DEVICES": None}),
    ({}, 2, "amd", {"ROCR_VISIBLE_DEVICES": "2", "HIP_VISIBLE_DEVICES": None,
                    "CUDA_VISIBLE_DEVICES": None}),
    # the agent gave the job GPUs 4-7 through ROCR; HIP picks the 2nd and 4th of those
    ({"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "1,3"}, 1, "amd",
     {"ROCR_VISIBLE_DEVICES": "7", "HIP_VISIBLE_DEVICES": None, "CUDA_VISIBLE_DEVICES": None}),
    ({"CUDA_VISIBLE_DEVICES": "3,2"}, 0, "amd", {"ROCR_VISIBLE_DEVICES": "3",
                                                 "HIP_VISIBLE_DEVICES": None,
                                                 "CUDA_VISIBLE_DEVICES": None}),
])
def test_each_rank_sees_exactly_its_device(environ, ordinal, vendor, want):
    assert device_env(environ, ordinal, vendor) == want


@pytest.mark.parametrize("need,have,skip", [
    (("any", 1), ("nvidia", 1), False),
    (("any", 2), ("nvidia", 1), True),
    (("amd", 1), ("nvidia", 8), True),
    (("nvidia", 4), ("nvidia", 8), False),
    (("any", 1), ("none", 0), True),
])
def test_needs_gpu_skip_rule(need, have, skip):
    reason = lacking(*need, *have)
    assert bool(reason) == skip
    if skip:
        assert reason.startswith(f"needs {need[1]} ") and f"has {have[1]} ({have[0]})" in reason


@pytest.mark.parametrize("mark,want", [
    (pytest.mark.needs_gpu, ("any", 1)),
    (pytest.mark.needs_gpu(vendor="amd", count=8), ("amd", 8)),
    (pytest.mark.needs_gpu("amd"), None),  # positional
    (pytest.mark.needs_gpu(vendor="intel"), None),
    (pytest.mark.needs_gpu(count=0), None),
    (pytest.mark.needs_gpu(count="2"), None),
    (pytest.mark.needs_gpu(gpus=2), None),  # unknown keyword
])
def test_needs_gpu_marker_is_validated(mark, want):
    """A malformed marker is a usage error, not a silently skipped (or run) test."""
    if want is None:
        with pytest.raises(pytest.UsageError):
            needs_gpu_args(mark.mark)
    else:
        assert needs_gpu_args(mark.mark) == want


def test_malformed_marker_is_a_usage_error_at_collection(tmp_path):
    """Checked when collected, so `-m "not needs_gpu"` (which deselects before setup)
    still catches a typo."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["qr_tests.conftest"]\n')
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n\n@pytest.mark.needs_gpu(vendor='intel')\ndef test_x():\n    pass\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}  # for qr_tests.conftest
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m",
                           "not needs_gpu", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert "test_typo.py::test_x: bad needs_gpu marker {'vendor': 'intel'}" in proc.stderr
