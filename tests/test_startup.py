"""`select` stays fast: heavy modules are imported only by the commands that need them.

Each check runs a fresh interpreter, since this test process has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CLI_CONFIG, CLI_STEPS
from tests.helpers import ROOT as REPO

# git (GitPython, if installed), templates, torch, and the render/hardware stages: `select --files-from` needs none of them.
HEAVY = ("git", "jinja2", "torch", "pipegen.render.rendered", "pipegen.hardware.placement")

# Runs the CLI in-process (argv: the command's arguments), then reports which modules it imported.
CLI = """\
import json, sys
sys.argv = ["pipegen", *sys.argv[1:]]
from pipegen.cli import main
code = None
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stderr.write("MODULES " + json.dumps([code, sorted(sys.modules)]) + "\\n")
"""


def _modules(code: str, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> tuple[object, list[str]]:
    # cwd: this checkout's pipegen comes first on sys.path.
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    status, modules = json.loads(line.removeprefix("MODULES "))
    return status, modules


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text(CLI_CONFIG)
    (tmp_path / ".buildkite" / "steps" / "tests.yaml").write_text(CLI_STEPS)
    return tmp_path


@pytest.mark.parametrize("repo", ["small", "this repository"])
def test_select_from_a_file_list_imports_nothing_heavy(repo: str, small_repo: Path) -> None:
    root = small_repo if repo == "small" else REPO
    status, modules = _modules(CLI, "select", "--root", str(root), "--files-from", "-",
                               stdin="src/core/a.py\npipegen/cli.py\n")
    assert status in (0, None)
    assert "pipegen.selection.decide" in modules  # it did select
    assert _heavy(modules) == []


def test_select_loads_buildkite_s_schema_only_for_steps_that_use_its_fields(small_repo: Path) -> None:
    status, modules = _modules(CLI, "select", "--root", str(small_repo), "--files-from", "-", stdin="x\n")
    assert status in (0, None) and "fastjsonschema" not in modules and "jsonschema" not in modules
    steps = small_repo / ".buildkite" / "steps" / "extra.yaml"
    steps.write_text("steps:\n  - {label: x, key: extra-x, commands: [x], priority: 2, depends_on: [bootstrap]}\n")
    (small_repo / ".buildkite" / "pipegen.yaml").write_text(CLI_CONFIG + "\nexternal_steps: [bootstrap]\n")
    status, modules = _modules(CLI, "select", "--root", str(small_repo), "--files-from", "-", stdin="x\n")
    assert status in (0, None) and "fastjsonschema" in modules  # priority is checked against the schema
    assert "jsonschema" not in modules  # ... by the compiled schema: jsonschema only explains an error


# Validation needs no jsonschema: fastjsonschema's compiled schema does it.
RENDER_UNUSED = ("jsonschema", "git", "torch")


def test_render_from_a_file_list_imports_no_validator_library(small_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for run in ("fills the parse cache", "reads the parse cache"):
        status, modules = _modules(CLI, "render", "--root", str(small_repo), "--files-from", "-",
                                   stdin="src/core/a.py\n", env={"PIPEGEN_CACHE_DIR": str(cache)})
        assert status in (0, None), run
        assert "pipegen.buildkite.schema" in modules  # it did validate
        assert [m for m in modules if m.split(".")[0] in RENDER_UNUSED] == [], run
        assert list(cache.glob("yaml/*.json")) and not list(cache.glob("*.marshal")), run  # data, never code
    assert "yaml" not in modules  # the declarations' parse came from the cache too (yamlio.load_file)


IMPORT = """\
import json, sys
import pipegen
sys.stderr.write("MODULES " + json.dumps([0, sorted(sys.modules)]) + "\\n")
"""


def test_import_pipegen_imports_no_torch() -> None:
    status, modules = _modules(IMPORT)
    assert status == 0 and "pipegen" in modules
    assert not [m for m in modules if m == "torch" or m.startswith("torch.")]


def test_version_imports_only_the_command_line() -> None:
    # `pipegen --version` (and every command's start) pays for click and cli.py, not for a command's parts.
    status, modules = _modules(CLI, "--version")
    assert status == 0 and "pipegen.cli" in modules
    assert [m for m in ("pipegen.json_output", "pipegen.model", "pipegen.commands.terminal") if m in modules] == []
