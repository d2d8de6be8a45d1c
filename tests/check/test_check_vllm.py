"""`pipegen check` on vLLM's real configuration and tracked files (shared fixtures).

Each finding asserted here was verified by hand against the fixture's files.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import FIXTURE, needs_fixture

pytestmark = needs_fixture


def check(*args: str) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["check", "--root", str(FIXTURE), "--tracked-files",
                                      str(FIXTURE / "tracked-files.txt"), "--format", "json", *args],
                                env={"PIPEGEN_CONFIG": None})
    return result.exit_code, json.loads(result.output)["findings"]


def find(findings: list[dict], code: str, file: str, line: int) -> dict:
    hits = [f for f in findings if (f["code"], f["file"], f["line"]) == (code, file, line)]
    assert len(hits) == 1, [f for f in findings if f["code"] == code][:5]
    return hits[0]


def test_vllm_current_layout():
    exit_code, findings = check()
    assert exit_code == 1
    # tests/test_config stopped matching when vLLM moved to path-boundary matching.
    raw = find(findings, "raw-prefix-only", ".buildkite/test_areas/engine.yaml", 23)
    assert raw["fix"] == "write 'tests/test_config.py'"
    # vllm/executor/ no longer exists; its code moved to vllm/v1/executor/.
    stale = find(findings, "stale-entry", ".buildkite/test_areas/distributed.yaml", 27)
    assert "'vllm/executor/'" in stale["message"] and "'vllm/v1/executor/'" in stale["fix"]
    # The B200 kernels step runs a test that none of its entries covers.
    assert any(f["code"] == "test-not-selecting" and f["step"] == "kernels-b200"
               and "tests/kernels/attention/test_flashinfer.py" in f["message"] for f in findings)
    assert find(findings, "ignored-field", ".buildkite/test_areas/benchmarks.yaml", 18)["fix"] == "use 'num_devices'"
    assert any(f["code"] == "mirror-drift" and f["step"] == "amd-engine-1-gpu" for f in findings)
    # Every test path vLLM's commands name exists; every step has a queue; the worst case fits one upload.
    assert not {"test-missing", "no-queue", "upload-limit", "invalid-key"} & {f["code"] for f in findings}


def test_vllm_legacy_amd_file():
    exit_code, findings = check("--config", ".buildkite/test-amd.yaml")
    assert exit_code == 1
    assert "'csrc/libtorch_stable/mamba/'" in find(findings, "stale-entry", ".buildkite/test-amd.yaml", 429)["fix"]
    assert not {"test-missing", "no-queue", "mirror-drift"} & {f["code"] for f in findings}
