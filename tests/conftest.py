"""Tests see the environment of a developer's laptop, whatever machine runs them.

CI machines set `CI` (and Buildkite agents `BUILDKITE_*`), which switches pipegen to
committed-only diffs and CI base refs; a test that wants that sets it itself.
"""

from __future__ import annotations

import os
import re

import pytest

_READ_BY_PIPEGEN = re.compile(r"CI|BUILDKITE(_.*)?|PIPEGEN_.*|VLLM_CI_.*|RUN_ALL|NIGHTLY|NOAUTO|DOCS_ONLY_DISABLE"
                              r"|AMD_MIRROR_HW|TORCH_NIGHTLY")


@pytest.fixture(autouse=True)
def _no_ci_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if _READ_BY_PIPEGEN.fullmatch(name)]:
        monkeypatch.delenv(name)
