"""Benchmarks: pipegen's commands on vLLM's configuration, beside the floor.

    python benchmarks/bench.py            # every benchmark
    python benchmarks/bench.py select     # one of: select, scale, render, check, vllm, audit, import
    PIPEGEN_VLLM_TREE=~/vllm python benchmarks/bench.py vllm audit   # check and audit on vLLM's real tree

Each command is timed as a whole process (median of --runs runs), next to
the floor that no implementation can beat on the same machine: starting
Python (`python -c pass`) and asking git for the same diff. vLLM's own
generator needs about 0.8 s for `select` on this configuration.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT.parent / "shared" / "fixtures" / "vllm-2026-05-29"
PIPEGEN = [sys.executable, "-m", "pipegen"]
DEFAULT_VLLM_TREE = "/tmp/vllm"  # a vLLM checkout for `bench.py vllm` ($PIPEGEN_VLLM_TREE)
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "CI": "1"}


def pinned() -> list[str]:
    """`taskset -c 0,1` to time a command on two cores (as a CI agent has), where taskset and two cores exist."""
    return ["taskset", "-c", "0,1"] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []


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
    row("floor: git diff --name-only main...HEAD",
        median_seconds(["git", "diff", "--name-only", "main...HEAD"], repo, runs))
    row("pipegen select --base main", median_seconds([*PIPEGEN, "select", "--base", "main"], repo, runs), 0.25)
    row("pipegen select --base main --format json",
        median_seconds([*PIPEGEN, "select", "--base", "main", "--format", "json"], repo, runs), 0.25)


def bench_scale(workdir: Path, runs: int) -> None:
    """10,000 steps against 100,000 changed files, in process (target: 2 s)."""
    import random

    from pipegen.model import ChangeSet, Declarations, Location, Options, Settings, Step
    from pipegen.selection.decide import decide

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


def generated_repo(workdir: Path, files: int = 5000, steps: int = 200, tests: int = 500) -> Path:
    """A git repository of `files` tracked files for `check`: a package in 40 areas whose
    modules import their area, the core and (one in twenty) another area; `tests` test
    files over `steps` steps, each watching its area, the core and its tests (so the
    cross-area imports are uncovered); conftest.py files; a stale entry every 50 steps."""
    import random

    rng = random.Random(0)
    repo = workdir / "generated"
    areas = 40
    modules_total = files - tests - files // 10 - 2 * areas - 10
    per_area = modules_total // areas
    modules = {a: [f"pkg/area{a}/sub{i % 5}/mod{i}.py" for i in range(per_area)] for a in range(areas)}
    core = [f"pkg/core/mod{i}.py" for i in range(modules_total - per_area * areas)]
    written = {"pkg/__init__.py": "", "pkg/core/__init__.py": "", "tests/__init__.py": "",
               "tests/helpers.py": "import pkg.core\n", "tests/conftest.py": "import pytest\n"}
    body = "\n\ndef f(x):\n    return x\n" * 5
    for area, names in modules.items():
        written[f"pkg/area{area}/__init__.py"] = ""
        written[f"tests/area{area}/__init__.py"] = ""
        written[f"tests/area{area}/conftest.py"] = f"from pkg.area{area} import *\n"
        for path in names:
            lines = [f"import {rng.choice(names)[:-3].replace('/', '.')}", "import os", "import numpy as np",
                     f"from pkg.core import {rng.choice(core).rsplit('/', 1)[1][:-3]}"]
            if rng.random() < 0.05:
                lines.append(f"import {rng.choice(modules[rng.randrange(areas)])[:-3].replace('/', '.')}")
            written[path] = "\n".join(lines) + body
    for path in core:
        written[path] = f"from . import {rng.choice(core).rsplit('/', 1)[1][:-3]}\nimport json\n"
    test_files = [f"tests/area{t % areas}/test_{t}.py" for t in range(tests)]
    for t, path in enumerate(test_files):
        written[path] = f"import pytest\nfrom pkg.area{t % areas}.sub{t % 5} import mod{t % per_area}\n" \
                        "from ..helpers import h\n\ndef test_x():\n    assert True\n"
    entries = []
    for s in range(steps):
        deps = [f"pkg/area{s % areas}/", "pkg/core/", "pkg/__init__.py", f"tests/area{s % areas}/", "tests/helpers.py",
                "tests/__init__.py", "tests/conftest.py"] + ([f"pkg/area{s % areas}/gone.py"] if s % 50 == 0 else [])
        entries.append(f"- label: Step {s}\n  key: step-{s}\n  commands:\n"
                       + "".join(f"  - \"pytest -v -s {p} -k 'not slow'\"\n" for p in test_files[s::steps])
                       + "  source_file_dependencies:\n" + "".join(f"  - {d}\n" for d in deps))
    written[".buildkite/pipegen.yaml"] = "steps: [.buildkite/steps.yaml]\n"
    written[".buildkite/steps.yaml"] = "steps:\n" + "".join(entries)
    for index in range(files - len(written)):
        written[f"docs/page{index}.md"] = "doc\n"
    for path, text in written.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def bench_check(workdir: Path, runs: int) -> None:
    """`pipegen check` on the generated repository, pinned to two cores (target: 2 s)."""
    repo = generated_repo(workdir)
    pin = pinned()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([*pin, *PIPEGEN, "check"], cwd=repo, env=GIT_ENV, stdout=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):  # 1: findings, which the repository has on purpose
            sys.exit(f"pipegen check failed ({done.returncode})")
    summary = done.stdout.strip().splitlines()[-1]
    print(f"check on 5,000 files, 200 steps, 500 test files{' (taskset -c 0,1)' if pin else ''} (target: 2 s)")
    print(f"  {summary}")
    row("floor: python -c pass", median_seconds([*pin, sys.executable, "-c", "pass"], repo, runs))
    row("pipegen check", statistics.median(times), 2.0)


def bench_vllm(workdir: Path, runs: int) -> None:
    """`pipegen check` on vLLM's real tree (sources on disk), installed (bytecode compiled), pinned to two
    cores: without any cache (a fresh agent), with the import scans cached but not the report (a changed
    tree), and with the report kept (nothing changed; targets: 1 s, -, 0.3 s)."""
    tree = _vllm_tree("check")
    if tree is None:
        return
    pin = pinned()
    check = [*pin, *installed(workdir / "installed"), "check"]
    cache = workdir / "cache"
    warm = compiled({**GIT_ENV, "PIPEGEN_CACHE_DIR": str(cache)}, workdir)
    done = subprocess.run(check, cwd=tree, env=warm, stdout=subprocess.PIPE, text=True)  # fills the cache
    if done.returncode not in (0, 1):
        sys.exit(f"pipegen check failed ({done.returncode})")
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=tree, capture_output=True, text=True)
    print(f"check on vLLM's tree at {commit.stdout.strip()}, installed{' (taskset -c 0,1)' if pin else ''} "
          "(targets: 1 s without cache, 0.3 s with it)")
    print(f"  {done.stdout.strip().splitlines()[-1]} ({len(done.stdout.splitlines())} lines of text)")
    row("floor: python -c pass", median_seconds([*pin, check[len(pin)], "-c", "pass"], tree, runs, warm))
    for name, keep, target in (("no cache", None, 1.0), ("import scans cached, report not kept", "scans", None),
                               ("report kept", "all", 0.3)):
        if keep:
            subprocess.run(check, cwd=tree, env=warm, stdout=subprocess.DEVNULL)
        times = []
        for _ in range(runs if keep == "all" else max(3, runs // 4)):
            if keep != "all":
                shutil.rmtree(cache / "check" if keep else cache, ignore_errors=True)
            times.append(timed(check, tree, warm))
        row(f"pipegen check, {name} (CPU {statistics.median(c for _, c in times) * 1000:.0f} ms)",
            statistics.median(s for s, _ in times), target)


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds, and the CPU seconds (user + system) the command and its children used: on a
    machine shared with other work the wall time grows, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_audit(workdir: Path, runs: int) -> None:
    """`pipegen audit --last 500` on vLLM's history, alone and with --compare (targets: 20 s and 40 s)."""
    tree = _vllm_tree("audit")
    if tree is None:
        return
    pin = pinned()
    audit = [*pin, *PIPEGEN, "audit", "--last", "500"]
    ref = subprocess.run(["git", "rev-parse", "--short=12", "HEAD~150"], cwd=tree, capture_output=True, text=True)
    print(f"audit of 500 first-parent commits of vLLM's history{' (taskset -c 0,1)' if pin else ''} "
          "(targets: 20 s, 40 s with --compare)")
    repeats = max(1, runs // 7)
    row("pipegen audit --last 500", median_seconds(audit, tree, repeats), 20.0)
    row(f"pipegen audit --last 500 --compare {ref.stdout.strip()}",
        median_seconds([*audit, "--compare", ref.stdout.strip()], tree, repeats), 40.0)


def _vllm_tree(name: str) -> Path | None:
    """The vLLM checkout ($PIPEGEN_VLLM_TREE), or None after saying why the benchmark is skipped."""
    tree = Path(os.environ.get("PIPEGEN_VLLM_TREE", DEFAULT_VLLM_TREE))
    if (tree / ".buildkite" / "ci_config.yaml").is_file():
        return tree
    print(f"{name} on vLLM's tree: skipped, no vLLM checkout at {tree} (set $PIPEGEN_VLLM_TREE to a clone of "
          "github.com/vllm-project/vllm with its sources and history, e.g. at 4ff865c)")
    return None


def compiled(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """`env` with Python's bytecode written and read under `workdir` (PYTHONPYCACHEPREFIX), as an installed
    program runs: pip compiles a package's modules when it installs it, and a program started from its folder
    (vLLM's generator) writes its own. Without this, an editable install under PYTHONDONTWRITEBYTECODE=1
    compiles every module of pipegen on every run (about a sixth of render's instructions). PYTHONPATH is dropped:
    each program runs from where it is installed."""
    env = {name: value for name, value in env.items() if name not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    return {**env, "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}


def installed(workdir: Path) -> list[str]:
    """This checkout (what its next commit would hold) built into a wheel and installed in a fresh virtual
    environment (tests/wheel.py), as a user runs pipegen: not the editable install, whose import hook costs
    every run about 30 ms. The command that starts it."""
    sys.path.insert(0, str(ROOT))
    from tests.wheel import build, install

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    names = [n for n in listed.split("\0") if n.startswith(("pipegen/", "templates/")) or n and "/" not in n]
    (wheel,) = build(ROOT, names, workdir, wheel_only=True).glob("*.whl")
    return [str(install(wheel, workdir / "venv")), "-m", "pipegen"]


def bench_render(workdir: Path, runs: int) -> None:
    """`pipegen render` on vLLM's configuration with 1,000 changed files, validation included (target: 0.3 s),
    beside vLLM's generator when it is given (target: 1/4 of its time): both in the same repository, on the
    same change, each computing the diff itself, both as installed programs (bytecode compiled)."""
    repo = vllm_repo(workdir)
    files = workdir / "changed.txt"
    files.write_text(subprocess.run(["git", "diff", "--name-only", "main...HEAD"], cwd=repo, capture_output=True,
                                    text=True, check=True).stdout)
    pin, pipegen = pinned(), installed(workdir / "installed")
    render = [*pin, *pipegen, "render", "--base", "main"]
    listed = [*pin, *pipegen, "render", "--files-from", str(files)]
    warm = compiled({**GIT_ENV, "PIPEGEN_CACHE_DIR": str(workdir / "cache")}, workdir)
    done = subprocess.run(render, cwd=repo, env=warm, stdout=subprocess.PIPE, text=True, check=True)  # fills the cache
    size = f"{len(done.stdout.splitlines()):,} lines"
    print(f"render on vLLM's configuration, 1,000 changed files, installed{' (taskset -c 0,1)' if pin else ''} "
          f"(target: 0.3 s median; vLLM's generator: ~0.8 s)")
    row("floor: python -c pass", median_seconds([*pin, pipegen[0], "-c", "pass"], repo, runs, warm))
    row("floor: python -c 'import yaml, jinja2, click'",
        median_seconds([*pin, pipegen[0], "-c", "import yaml, jinja2, click"], repo, runs, warm))
    row("pipegen select --base main (same change)",
        median_seconds([*pin, *pipegen, "select", "--base", "main"], repo, runs, warm))
    row("pipegen render --files-from (the same paths listed)", median_seconds(listed, repo, runs, warm))
    rendered = [timed(render, repo, warm) for _ in range(runs)]
    cpu_ms = statistics.median(c for _, c in rendered) * 1000
    row(f"pipegen render --base main ({size}, validated; CPU {cpu_ms:.0f} ms)",
        statistics.median(s for s, _ in rendered), 0.3)
    cold = {**warm, "PIPEGEN_CACHE_DIR": ""}  # no cache: parses, compiles the schema and the templates every run
    row("pipegen render, no cache (first run on a fresh agent)", median_seconds(render, repo, max(3, runs // 4), cold))
    bench_generator(workdir, repo, runs, pin, lambda: timed(render, repo, warm))


def bench_generator(workdir: Path, repo: Path, runs: int, pin: list[str],
                    render: Callable[[], tuple[float, float]]) -> None:
    """vLLM's own generator on the same change, in the same run, each of its runs followed by one of `render`
    (so that a change in the machine's load falls on both; target: pipegen render <= 1/4 of it).

    Needs a copy of vllm-project/ci-infra's buildkite/pipeline_generator in $PIPEGEN_BENCH_GENERATOR and a
    Python with its dependencies (pyyaml, click, pydantic, requests) in $PIPEGEN_BENCH_GENERATOR_PYTHON.
    Its calls to `aws` and `docker` (image-cache credentials) are answered by stand-ins that exit 0.
    """
    generator, python = os.environ.get("PIPEGEN_BENCH_GENERATOR"), os.environ.get("PIPEGEN_BENCH_GENERATOR_PYTHON")
    if not generator or not python:
        print("  (vLLM's generator: skipped; set PIPEGEN_BENCH_GENERATOR and PIPEGEN_BENCH_GENERATOR_PYTHON)")
        return
    stubs = workdir / "stubs"
    stubs.mkdir()
    for name in ("aws", "docker", "buildkite-agent"):
        (stubs / name).write_text("#!/bin/sh\necho stub\n")
        (stubs / name).chmod(0o755)
    base = subprocess.run(["git", "rev-parse", "main"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    env = compiled({**GIT_ENV, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "BUILDKITE_BRANCH": "change",
                    "BUILDKITE_PULL_REQUEST": "false", "BUILDKITE_COMMIT": "abc", "MERGE_BASE_COMMIT": base}, workdir)
    command = [*pin, python, os.path.join(generator, "main.py"), "--pipeline_config_path", ".buildkite/ci_config.yaml",
               "--output_file_path", str(workdir / "generated.yaml")]
    subprocess.run(command, cwd=repo, env=env, stdout=subprocess.DEVNULL, check=True)  # writes its bytecode
    generated, rendered = [], []
    for _ in range(max(3, runs // 2)):
        generated.append(timed(command, repo, env))
        rendered.append(render())
    wall, cpu = (statistics.median(x[i] for x in generated) for i in (0, 1))
    row(f"vLLM's generator, same change (git diff included; CPU {cpu * 1000:.0f} ms)", wall)
    ours_wall, ours_cpu = (statistics.median(x[i] for x in rendered) for i in (0, 1))
    row(f"pipegen render, between the generator's runs (CPU {ours_cpu * 1000:.0f} ms)", ours_wall)
    print(f"  pipegen render / vLLM's generator: {ours_wall / wall:.2f} wall, {ours_cpu / cpu:.2f} CPU "
          "(target: at most 0.25)")


def bench_import(workdir: Path, runs: int) -> None:
    """`pipegen import` of a generated 300-step pipeline (big_pipeline.py), proof included: written, rendered
    back with --all and compared (target: 1 s). Installed, as a user runs it (bytecode compiled); with the cache
    of a machine that ran it before, and without (an import is often the first pipegen command run)."""
    from big_pipeline import repository_files

    repo = workdir / "big"
    for name, text in repository_files(300).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    pin, pipegen = pinned(), installed(workdir / "installed")
    command = [*pin, *pipegen, "import", ".buildkite/pipeline.yml", "--force"]
    warm = compiled({**GIT_ENV, "PIPEGEN_CACHE_DIR": str(workdir / "cache")}, workdir)
    first = subprocess.run(command, cwd=repo, env=warm, stdout=subprocess.PIPE, text=True)  # fills the caches
    if first.returncode != 0:  # a timing of a failed or unproven import would say nothing
        sys.exit(f"pipegen import exited {first.returncode}:\n{first.stdout}")
    lines = len((repo / ".buildkite" / "pipeline.yml").read_text().splitlines())
    print(f"import of a {lines:,}-line pipeline{' (taskset -c 0,1)' if pin else ''}: "
          f"{first.stdout.splitlines()[0].split(' from ')[0].lower()}, proven equal (target: 1 s)")
    row("floor: python -c 'import yaml, jinja2, click'",
        median_seconds([*pin, pipegen[0], "-c", "import yaml, jinja2, click"], repo, runs, warm))
    for name, env in (("cached", warm), ("no cache", {**warm, "PIPEGEN_CACHE_DIR": ""})):
        timings = [timed(command, repo, env) for _ in range(runs)]
        cpu = statistics.median(c for _, c in timings)
        row(f"pipegen import, {name} (CPU {cpu * 1000:.0f} ms)", statistics.median(w for w, _ in timings), 1.0)


BENCHMARKS: dict[str, Callable[[Path, int], None]] = {
    "select": bench_select, "scale": bench_scale, "check": bench_check, "render": bench_render, "vllm": bench_vllm,
    "audit": bench_audit, "import": bench_import,
}


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
