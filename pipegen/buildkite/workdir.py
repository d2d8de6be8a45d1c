"""A step's working directory in the agent's container, mapped back to a folder of the repository.

vLLM's steps `cd` into `/vllm-workspace/tests`, a path inside the docker image; `docker_workdir`
maps such container prefixes to repository folders, so that `check` can find the tests a step
runs and `pipegen run` can run them in the checkout.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence


def map_workdir(working_dir: str | None, mapping: Sequence[tuple[str, str]]) -> str | None:
    """The repo-relative dir for a step's working dir; None if it cannot be mapped."""
    if not working_dir:
        return ""
    if not working_dir.startswith("/"):
        return joined("", working_dir)
    best = max((m for m in mapping if _under(working_dir, m[0])), key=lambda m: len(m[0]), default=None)
    if best is None:
        return None
    rest = working_dir[len(best[0].rstrip("/")):].lstrip("/")
    return joined(best[1], rest)


def _under(path: str, prefix: str) -> bool:
    base = prefix.rstrip("/")
    return path == base or path.startswith(base + "/")


def joined(base: str, path: str) -> str | None:
    """`path` joined to repo-relative `base`, normalised; None if it leaves the repository."""
    joined = posixpath.normpath(posixpath.join(base, path)) if (base or path) else "."
    if joined == ".":
        return ""
    return None if joined == ".." or joined.startswith("../") else joined
