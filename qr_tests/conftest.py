"""Hardware markers and seeds for the bundled suites.

`@pytest.mark.needs_gpu(vendor="any"|"nvidia"|"amd", count=N)` says what a test
needs; tests without it run on CPU. A malformed marker stops the session at
collection (usage error); a test whose needs the machine lacks is skipped with the
reason. CPU steps run `pytest qr_tests -m "not needs_gpu"`.

Random inputs use a fresh base seed per session (QR_SEED=<int> replays one); each
case derives its own seed from it, and failures print both.
"""

from __future__ import annotations

import hashlib
import os
import secrets

import pytest

VENDORS = ("any", "nvidia", "amd")
BASE_SEED = int(os.environ.get("QR_SEED") or secrets.randbits(32))
_inventory = None


def pytest_configure(config):
    # pytest-xdist's workers inherit the environment: all of them then draw the same cases (the
    # parametrised seeds are part of the collection, which must be equal on every worker).
    os.environ.setdefault("QR_SEED", str(BASE_SEED))
    config.addinivalue_line(
        "markers",
        "needs_gpu(vendor='any', count=1): needs `count` GPUs of `vendor` "
        "('any', 'nvidia' or 'amd'); skipped on machines without them")


def pytest_report_header(config):
    return f"qr_tests base seed: QR_SEED={BASE_SEED}"


def needs_gpu_args(marker) -> tuple[str, int]:
    """(vendor, count) of a needs_gpu marker; a malformed marker is a usage error."""
    if marker.args:
        raise pytest.UsageError("needs_gpu takes keywords only: needs_gpu(vendor=..., count=...)")
    unknown = set(marker.kwargs) - {"vendor", "count"}
    vendor = marker.kwargs.get("vendor", "any")
    count = marker.kwargs.get("count", 1)
    if unknown or vendor not in VENDORS or not isinstance(count, int) or count < 1:
        raise pytest.UsageError(f"bad needs_gpu marker {marker.kwargs}: vendor in {VENDORS}, "
                                "count an int >= 1")
    return vendor, count


def lacking(vendor: str, count: int, have_vendor: str, have_count: int) -> str:
    """Why a machine with (have_vendor, have_count) cannot run the test, or ''."""
    if (vendor != "any" and have_vendor != vendor) or have_count < count:
        kind = "GPU(s) of any vendor" if vendor == "any" else f"{vendor} GPU(s)"
        return f"needs {count} {kind}; this machine has {have_count} ({have_vendor})"
    return ""


def pytest_itemcollected(item):
    # at collection, so that a malformed marker fails even when -m deselects its test
    for marker in item.iter_markers("needs_gpu"):
        try:
            needs_gpu_args(marker)
        except pytest.UsageError as e:
            raise pytest.UsageError(f"{item.nodeid}: {e}") from None


def pytest_runtest_setup(item):
    global _inventory
    for marker in item.iter_markers("needs_gpu"):
        vendor, count = needs_gpu_args(marker)
        if _inventory is None:
            from qr_tests.quick_reduce.harness import gpu_inventory  # noqa: PLC0415
            _inventory = gpu_inventory()
        reason = lacking(vendor, count, *_inventory)
        if reason:
            pytest.skip(reason)


def seed_for(*parts) -> int:
    """A case's seed: fresh each session, stable within it, distinct per case."""
    text = ":".join(str(p) for p in (BASE_SEED, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


@pytest.fixture
def case_seed(request) -> int:
    return seed_for(request.node.nodeid)
