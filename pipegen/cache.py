"""Where pipegen keeps what it compiles or scans (templates, Buildkite's schema, check's import scans):
an optimisation only."""

from __future__ import annotations

import os


def cache_dir() -> str | None:
    """The cache folder: $PIPEGEN_CACHE_DIR ('' = none), else pipegen under the XDG cache."""
    chosen = os.environ.get("PIPEGEN_CACHE_DIR")
    if chosen is not None:
        return chosen or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pipegen")
