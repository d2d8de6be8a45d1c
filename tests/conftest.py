"""Tests see the environment of a developer's laptop, whatever machine runs them.

CI machines set `CI` (and Buildkite agents `BUILDKITE_*`), which switches pipegen to
committed-only diffs and CI base refs; a test that wants that sets it itself.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import settings

_READ_BY_PIPEGEN = re.compile(r"CI|BUILDKITE(_.*)?|PIPEGEN_.*|VLLM_CI_.*|RUN_ALL|NIGHTLY|NOAUTO|DOCS_ONLY_DISABLE"
                              r"|AMD_MIRROR_HW|TORCH_NIGHTLY|SKIP_TIMEOUT|PRIORITY|CONTINUE_ON_FAILURE|ROCM_BASE_REFRESH_.*"
                              r"|CI_INFRA_OTEL_.*")


@pytest.fixture(autouse=True)
def _no_ci_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if _READ_BY_PIPEGEN.fullmatch(name)]:
        monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _own_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compiled schemas, templates and import scans go to one folder per test session, not ~/.cache
    (a test that checks caching sets PIPEGEN_CACHE_DIR itself)."""
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "pipegen-cache"))


# CI runs the property tests on a fixed seed: a new counter-example is found on a laptop, not as a red CI.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
    settings.load_profile("ci")
