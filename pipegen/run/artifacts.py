"""A step's `artifact_paths`, copied into the log folder after it ran (the I/O edge of `pipegen run`).

As Buildkite's agent does, the globs are relative to the checkout (the
repository), separated by `;` in one string or given as a list, `**`
crossing folders; they are collected whatever the step's result.
"""

from __future__ import annotations

import glob
import os
import shutil
from typing import Any


def globs(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value] if value else []
    return [g.strip() for item in items for g in str(item).split(";") if g.strip()]


def collect(value: Any, root: str, folder: str) -> tuple[str, ...]:
    """Copy the files matching the globs under `root` into `folder`, keeping their paths; the copies."""
    copied: list[str] = []
    for pattern in globs(value):
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            if not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, root)
            if rel.startswith(".."):
                continue  # outside the repository: the agent would not upload it either
            target = os.path.join(folder, rel)
            try:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(path, target)
            except OSError:
                continue
            if target not in copied:
                copied.append(target)
    return tuple(copied)
