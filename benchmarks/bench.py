"""Benchmarks: pipegen's commands on vLLM's configuration, beside the floor.

    python benchmarks/bench.py            # every benchmark
    python benchmarks/bench.py select     # one of: select, scale, render, check

Each command is timed as a whole process (median of --runs runs), next to
the floor that no implementation can beat on the same machine: starting
Python (`python -c pass`) and asking git for the same diff. vLLM's own
generator needs about 0.8 s for `select` on this configuration.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT.parent / "shared" / "fixtures" / "vllm-2026-05-29"
PIPEGEN = [sys.executable, "-m", "pipegen"]
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "CI": "1"}


def median_seconds(command: list[str], cwd: Path, runs: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, env=env or GIT_ENV, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(name: str, seconds: float, target: float | None = None) -> None:
    verdict = "" if target is None else ("  ok" if seconds <= target else f"  OVER {target:.2f} s")
    print(f"  {name:<52} {seconds * 1000:8.1f} ms{verdict}")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, stdout=subprocess.DEVNULL)


def vllm_repo(workdir: Path, changed: int = 1000) -> Path:
    """A git repository with vLLM's .buildkite/ on main and `changed` files changed on a branch."""
    repo = workdir / "vllm"
    shutil.copytree(FIXTURE / ".buildkite", repo / ".buildkite")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "change")
    paths = [p for p in (FIXTURE / "tracked-files.txt").read_text().splitlines() if not p.startswith(".buildkite/")]
    for path in paths[:: max(1, len(paths) // changed)][:changed]:
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("changed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return repo


def bench_select(workdir: Path, runs: int) -> None:
    repo = vllm_repo(workdir)
    print("select on vLLM's configuration, 1,000 changed files (target: 0.25 s median)")
    row("floor: python -c pass", median_seconds([sys.executable, "-c", "pass"], repo, runs))
    row("floor: git diff --name-only main...HEAD", median_seconds(["git", "diff", "--name-only", "main...HEAD"], repo, runs))
    row("pipegen select --base main", median_seconds([*PIPEGEN, "select", "--base", "main"], repo, runs), 0.25)
    row("pipegen select --base main --format json",
        median_seconds([*PIPEGEN, "select", "--base", "main", "--format", "json"], repo, runs), 0.25)


def bench_scale(workdir: Path, runs: int) -> None:
    """10,000 steps against 100,000 changed files, in process (target: 2 s)."""
    import random

    from pipegen.decide import decide
    from pipegen.model import ChangeSet, Declarations, Location, Options, Settings, Step

    rng = random.Random(0)
    folders = [f"pkg{i}/sub{j}" for i in range(200) for j in range(50)]
    files = tuple(f"{rng.choice(folders)}/mod{k}/file{k}.py" for k in range(100_000))
    # Half the steps watch whole folders (they match), half watch single modules (most don't).
    steps = tuple(
        Step(key=f"step-{i}", label=f"Step {i}", group="g", location=Location("bench.yaml", i + 1),
             dependencies=(tuple(rng.sample(folders, 8)) if i % 2 else
                           tuple(f"{rng.choice(folders)}/mod{rng.randrange(10**6)}" for _ in range(8)))
             + (f"!{rng.choice(folders)}/mod1",))
        for i in range(10_000)
    )
    decl = Declarations(steps=steps, settings=Settings(), layout="pipegen")
    times = []
    for _ in range(max(1, runs // 4)):
        start = time.perf_counter()
        selection = decide(decl, ChangeSet(files), Options())
        times.append(time.perf_counter() - start)
    print("matching scale: 10,000 steps x 100,000 changed files (target: 2 s)")
    row(f"decide() ({selection.counts()['run']} run)", statistics.median(times), 2.0)


BENCHMARKS: dict[str, Callable[[Path, int], None]] = {"select": bench_select, "scale": bench_scale}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"any of {', '.join(BENCHMARKS)} (default: all)")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    unknown = set(args.names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    if not FIXTURE.is_dir():
        sys.exit(f"vLLM fixtures not found at {FIXTURE}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, median of {args.runs} runs")
    for name in args.names or BENCHMARKS:
        with tempfile.TemporaryDirectory() as tmp:
            BENCHMARKS[name](Path(tmp), args.runs)


if __name__ == "__main__":
    main()
