"""Golden files of the shipped templates: the exact bytes `pipegen render` prints.

Regenerate after an intended change of the templates with

    PIPEGEN_REGEN_GOLDEN=1 python -m pytest tests/render/test_render_golden.py

and review the diff of tests/render/golden/ like any other change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import RENDER_STEPS, ROOT, assert_fast_dialect, assert_valid, render, render_repo

GOLDEN = Path(__file__).resolve().parent / "golden"
REGENERATE = os.environ.get("PIPEGEN_REGEN_GOLDEN") == "1"


def compare(name: str, text: str) -> None:
    if name.endswith(".yaml"):
        assert_fast_dialect(text)
    path = GOLDEN / name
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"golden file {path} is missing; run with PIPEGEN_REGEN_GOLDEN=1 to create it")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        import difflib

        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), f"golden/{name}",
                                            "rendered", n=2))
        pytest.fail(f"rendered output differs from golden/{name} "
                    f"(PIPEGEN_REGEN_GOLDEN=1 regenerates it):\n{diff[:6000]}")


@pytest.mark.parametrize("mode", ["block", "skip", "omit"])
def test_synthetic_pipeline(tmp_path, mode):
    repo = render_repo(tmp_path, RENDER_STEPS + """
  - label: "Multi-node $SHARD"
    key: multi
    device: h100
    num_devices: 8
    num_nodes: 2
    commands: ["node 0", "node 1"]
    source_file_dependencies: [multi/]
""")
    note = tmp_path / "note.md"
    result = render(repo, "--unselected", mode, "--annotation", str(note), files="qr/changed.py\n")
    assert result.exit_code == 0, result.stderr
    assert_valid(result.stdout)
    compare(f"synthetic-{mode}.yaml", result.stdout)
    compare(f"synthetic-{mode}.md", note.read_text(encoding="utf-8"))


def test_this_repository(tmp_path):
    result = render(ROOT, "--all")
    assert result.exit_code == 0, result.stderr
    compare("pipegen-all.yaml", result.stdout)
