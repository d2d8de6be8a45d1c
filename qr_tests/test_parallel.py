"""The suites under pytest-xdist, as GPU agents run them (`PYTEST_ADDOPTS=-n 8`): every worker
draws from the seed the session's header prints, so `QR_SEED=<n>` replays a parallel run too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_xdist_workers_share_the_printed_seed(tmp_path):
    (tmp_path / "test_seed.py").write_text(textwrap.dedent("""
        import os
        import pytest
        from qr_tests.conftest import BASE_SEED

        @pytest.mark.parametrize("case", range(8))
        def test_record(case, tmp_path_factory):
            out = os.environ["SEEDS_OUT"]
            with open(os.path.join(out, f"{os.environ['PYTEST_XDIST_WORKER']}-{case}"), "w") as f:
                f.write(str(BASE_SEED))
    """))
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("QR_SEED", "PYTEST_ADDOPTS")}
    env.update(SEEDS_OUT=str(seeds), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "qr_tests.conftest", "-n", "2", "-p",
                           "no:cacheprovider", "--dist", "each", str(tmp_path / "test_seed.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = re.search(r"QR_SEED=(\d+)", done.stdout)
    assert printed, done.stdout
    recorded = {p.name: p.read_text() for p in seeds.iterdir()}
    assert {name.split("-")[0] for name in recorded} == {"gw0", "gw1"}  # both workers ran cases
    assert set(recorded.values()) == {printed.group(1)}
