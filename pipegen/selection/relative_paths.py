"""Changed paths as users give them, made repository-relative. Pure.

`git diff --name-only` prints `src/x.py`; a hand-written or generated list
may say `./src/x.py`, `src//x.py` or `/abs/repo/src/x.py`. Matching compares
strings, so each form must become the one git prints, or it selects nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from pipegen.errors import UsageError


def repo_relative(paths: Iterable[str], root: str, option: str = "--files-from", unique: bool = True) -> list[str]:
    """Each path relative to the absolute `root`, normalised, in order (once, if `unique`); a path outside is a
    UsageError."""
    out: list[str] = []
    for path in paths:
        rel = posixpath.normpath(posixpath.relpath(path, root) if posixpath.isabs(path) else path)
        if rel == "." or rel == ".." or rel.startswith("../"):
            raise UsageError(f"{option}: {path!r} is not a file inside the repository {root}",
                             fix="list paths relative to the repository root, as 'git diff --name-only' prints them")
        out.append(rel)
    return list(dict.fromkeys(out)) if unique else out
