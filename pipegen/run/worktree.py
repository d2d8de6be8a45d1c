"""Tracked files a run changed: the work tree's state before and after it (an I/O edge of `pipegen run`).

A step that rewrites a tracked file (a formatter, a regenerated fixture, a
test writing into the source tree) leaves work behind that the next `select`
counts as a change; the summary lists such files so they are not committed
by accident. Content is compared, not timestamps (`git diff` refreshes stat
information first), and a file already edited before the run counts when the
run changed it further.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from pipegen.errors import UsageError
from pipegen.git import Git

State = dict[str, str | None]  # tracked path that differs from the index -> a digest of its content (None: gone)


def tracked_state(root: str, environ: Mapping[str, str]) -> tuple[str, State] | None:
    """(the repository's top folder, its edited tracked files); None outside a git repository."""
    try:
        git = Git(root, environ)
        edited = git.paths("diff", "--name-only", "-z", "--no-renames")
    except (UsageError, OSError):  # GitFailed is a UsageError
        return None
    return git.top, {path: _digest(os.path.join(git.top, path)) for path in edited}


def changed_since(before: tuple[str, State] | None, root: str, environ: Mapping[str, str]) -> list[str]:
    """The tracked files whose content the run changed (edited, restored, or edited further), sorted."""
    after = tracked_state(root, environ) if before is not None else None
    if before is None or after is None:
        return []
    old, new = before[1], after[1]
    return sorted(path for path in {*old, *new} if path not in old or path not in new or old[path] != new[path])


def _digest(path: str) -> str | None:
    try:
        if os.path.islink(path):
            return "link:" + os.readlink(path)
        with open(path, "rb") as handle:
            return hashlib.sha1(handle.read()).hexdigest()
    except OSError:
        return None
