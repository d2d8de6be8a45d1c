"""`select` stays fast: heavy modules are imported only by the commands that need them.

Each check runs a fresh interpreter, since this test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import CONFIG, STEPS

REPO = Path(__file__).resolve().parent.parent
# GitPython, templates, torch, and the render/hardware stages: `select --files-from` needs none of them.
HEAVY = ("git", "jinja2", "torch", "pipegen.render", "pipegen.hardware")

# Runs the CLI in-process, then reports which modules it imported.
SELECT = """\
import json, sys
root = sys.argv[1]
sys.argv = ["pipegen", "select", "--root", root, "--files-from", "-"]
from pipegen.cli import main
code = None
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stderr.write("MODULES " + json.dumps([code, sorted(sys.modules)]) + "\\n")
"""


def _modules(code: str, *args: str, stdin: str = "") -> tuple[object, list[str]]:
    # cwd: this checkout's pipegen comes first on sys.path.
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, input=stdin, capture_output=True,
                          text=True, timeout=120)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    status, modules = json.loads(line.removeprefix("MODULES "))
    return status, modules


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text(CONFIG)
    (tmp_path / ".buildkite" / "steps" / "tests.yaml").write_text(STEPS)
    return tmp_path


@pytest.mark.parametrize("repo", ["small", "this repository"])
def test_select_from_a_file_list_imports_nothing_heavy(repo: str, small_repo: Path) -> None:
    root = small_repo if repo == "small" else REPO
    status, modules = _modules(SELECT, str(root), stdin="src/core/a.py\npipegen/cli.py\n")
    assert status in (0, None)
    assert "pipegen.decide" in modules  # it did select
    assert _heavy(modules) == []


IMPORT = """\
import json, sys
import pipegen
sys.stderr.write("MODULES " + json.dumps([0, sorted(sys.modules)]) + "\\n")
"""


def test_import_pipegen_imports_no_torch() -> None:
    status, modules = _modules(IMPORT)
    assert status == 0 and "pipegen" in modules
    assert not [m for m in modules if m == "torch" or m.startswith("torch.")]
