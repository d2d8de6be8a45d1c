"""`pipegen render` on real configurations: this repository's, vLLM's, and the installed wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURE, ROOT, assert_fast_dialect, assert_valid, by_key, needs_fixture, render

# --------------------------------------------------------------------------- this repository


def test_this_repository_renders_on_its_hardware():
    result = render(ROOT, "--all")
    assert result.exit_code == 0, result.stderr
    steps = by_key(assert_valid(result.stdout))
    assert steps["quick-reduce-mi355-x2"]["agents"] == {"queue": "amd-mi355-2"}
    assert steps["quick-reduce-mi355-x8"]["agents"] == {"queue": "amd-mi355-8"}
    assert steps["quick-reduce-cpu"]["agents"] == {"queue": "cpu"}
    assert steps["pipegen-tests"]["agents"] == {"queue": "cpu"}
    assert steps["torchrun-4-mi300"]["agents"] == {"queue": "amd-mi300-4"}
    assert steps["torchrun-2-h100"]["agents"] == {"queue": "nvidia-h100-2"}


QUICK_REDUCE = {"quick-reduce-cpu", "quick-reduce-h100", "quick-reduce-mi300-x2", "quick-reduce-mi300-x8",
                "quick-reduce-mi355-x2", "quick-reduce-mi355-x8"}
TORCHRUN = {"torchrun-4-cpu", "torchrun-4-h100", "torchrun-4-mi300", "torchrun-2-cpu", "torchrun-2-h100"}


@pytest.mark.parametrize("files, expect", [
    ("pipegen/render.py\n", {"pipegen-tests"}),
    ("qr_tests/quick_reduce/reference.py\n", QUICK_REDUCE | TORCHRUN),  # the torchrun examples use it
    ("qr_tests/conftest.py\n", QUICK_REDUCE | TORCHRUN),
    ("qr_tests/torchrun/dist.py\n", TORCHRUN),
    ("qr_tests/README.md\n", set()),  # docs only
    ("README.md\n", {"pipegen-tests"}),  # but README and the docs site: their examples are tests
    ("docs/how-to/run-locally.md\n", {"pipegen-tests"}),
    ("mkdocs.yml\n", {"pipegen-tests"}),
    ("somewhere/else.txt\n", set()),
])
def test_this_repository_selects_by_source(files, expect):
    steps = by_key(assert_valid(render(ROOT, files=files).stdout))
    running = {k for k, s in steps.items() if "block" not in s and not any(
        d.startswith("block-") for d in s.get("depends_on", []))}
    assert running == expect


# --------------------------------------------------------------------------- vLLM


@needs_fixture
@pytest.mark.parametrize("args, files", [
    (["--all"], ""),
    ([], "nothing/matches/this\n"),
    ([], "vllm/distributed/parallel_state.py\ntests/kernels/test_foo.py\ndocker/Dockerfile.rocm_base\n"),
    ([], "docs/index.md\nREADME.md\n"),
    (["--config", ".buildkite/test-amd.yaml"], "tests/kernels/test_foo.py\n"),
    (["--config", "legacy-test-pipeline.yaml", "--all"], ""),
    (["--unselected", "skip"], "vllm/model_executor/x.py\n"),
])
def test_vllm_configuration_validates(args, files):
    result = render(FIXTURE, *args, files=files)
    assert result.exit_code == 0, result.stderr
    data = assert_valid(result.stdout)
    assert_fast_dialect(result.stdout)
    from pipegen.buildkite.limits import count_jobs

    assert count_jobs(data["steps"]) <= 500


@needs_fixture
def test_vllm_queues_and_mirrors():
    steps = by_key(assert_valid(render(FIXTURE, files="vllm/distributed/parallel_state.py\n").stdout))
    assert all(s.get("agents", {}).get("queue") for s in steps.values() if "command" in s or "commands" in s)
    amd = [s for k, s in steps.items() if k.startswith("amd-") and "commands" in s]
    assert amd and all(s["agents"]["queue"].startswith("amd_mi") for s in amd)
    # vLLM's ROCm runner finds the commands (cd, setup, banners) in VLLM_TEST_COMMANDS
    assert all(s["commands"] == ["bash .buildkite/scripts/hardware_ci/run-amd-test.sh"] for s in amd)
    assert all(s["env"]["VLLM_TEST_COMMANDS"].startswith("cd /vllm-workspace/tests && ") for s in amd)
    # vLLM's files are written in Buildkite's syntax: `$$` stays as it is
    assert any("$$BUILDKITE_PARALLEL_JOB" in c for s in steps.values() for c in s.get("commands", []))
    assert not any("$$$" in c for s in steps.values() for c in s.get("commands", []))  # doubled: "$$$$"


@needs_fixture
def test_vllm_annotation_counts_jobs_against_the_upload_limit(tmp_path):
    note = tmp_path / "note.md"
    result = render(FIXTURE, "--annotation", str(note), files=".buildkite/test_areas/lora.yaml\n")
    assert result.exit_code == 0
    assert "of 500 jobs" in note.read_text()


def test_the_wheel_ships_templates_and_the_vllm_inventory(tmp_path):
    """A non-editable `pip install .` finds the templates (package pipegen.templates) and data."""
    import zipfile

    pytest.importorskip("setuptools")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT),
                           "-w", str(tmp_path)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr.strip()[-300:]}")
    names = zipfile.ZipFile(next(tmp_path.glob("pipegen-*.whl"))).namelist()
    shipped = {n for n in names if n.startswith(("pipegen/templates/", "pipegen/dialects/"))}
    expected = {f"pipegen/templates/{p.name}" for p in (ROOT / "templates").glob("*.j2")}
    assert expected and expected <= shipped
    assert "pipegen/dialects/vllm/hardware.yaml" in shipped
    # Installed from the wheel (not editable), pipegen finds them there.
    site = tmp_path / "site"
    zipfile.ZipFile(next(tmp_path.glob("pipegen-*.whl"))).extractall(site)
    probe = ("import pipegen, pipegen.render.templates as r, pipegen.hardware.inventory as i; print(pipegen.__file__); "
             "print(r.builtin_templates()); print(i.preset_inventory(\"vllm\").source)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    package, templates, source = proc.stdout.splitlines()
    assert package.startswith(str(site)) and Path(templates) == site / "pipegen" / "templates"
    assert source == "preset:vllm"


def test_the_bootstrap_pipeline_is_valid_and_renders_with_pipegen():
    data = assert_valid((ROOT / ".buildkite" / "pipeline.yaml").read_text())
    commands = " ".join(data["steps"][0]["commands"])
    assert "pipegen render --annotate >" in commands and "buildkite-agent pipeline upload" in commands


def test_readme_main_job_command_at_the_repository_root():
    """`pipegen render` with no options, as this repository's bootstrap step runs it (CI: committed work only)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    proc = subprocess.run([sys.executable, "-m", "pipegen", "render"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "CI": "true", "PIPEGEN_CACHE_DIR": ""})
    assert proc.returncode == 0, proc.stderr
    steps = by_key(assert_valid(proc.stdout))
    # What the newest commit touched decides; a docs-only commit renders no steps at all.
    selection = subprocess.run([sys.executable, "-m", "pipegen", "select", "--format", "json"], cwd=ROOT,
                               capture_output=True, text=True, env={**os.environ, "CI": "true"})
    if json.loads(selection.stdout)["skip_all"]:
        assert steps == {}
    else:
        assert {"pipegen-tests", "quick-reduce-mi355-x2", "torchrun-4-cpu"} <= {
            k.removeprefix("block-") for k in steps}
