"""pipegen as users install it: a wheel built from a copy of the repository's files, installed into a fresh
virtual environment that borrows only this environment's dependencies (tests/test_installed.py, and
benchmarks/bench.py, which times the installed form)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path


def build(root: Path, names: Iterable[str], work: Path, *, wheel_only: bool = False) -> Path:
    """Copy `names` (paths under `root`) to `work`/source and build there, offline (`--no-isolation`:
    setuptools comes from this environment); the folder of the built sdist and wheel. Without `wheel_only`
    as `python -m build` does by default: the sdist first, the wheel from it, so a file the sdist lacks is
    missing from the wheel too."""
    source, dist = work / "source", work / "dist"
    for name in names:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, source / name)
    subprocess.run([sys.executable, "-m", "build", *(["--wheel"] if wheel_only else []), "--no-isolation",
                    "--outdir", str(dist), str(source)], check=True, capture_output=True, text=True)
    return dist


def install(wheel: Path, venv: Path, *, compile: bool = True) -> Path:
    """A fresh virtual environment at `venv` with `wheel` installed (not editable, no dependencies): its
    Python. The dependencies come from this environment as plain path entries: its .pth files (the
    editable install's among them) are not processed, so its pipegen stays invisible."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    borrowed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    (site / "borrowed-deps.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", *([] if compile else ["--no-compile"]), str(wheel)],
                   check=True, capture_output=True, text=True)
    return python
