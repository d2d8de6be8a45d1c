"""Buildkite's branch filter (`branches:` on a step): which branches a step is part of the build on.

Patterns are separated by spaces (or given as a list); `*` matches any
characters, `/` included; `!pattern` excludes. A branch is in when no
exclusion matches it and, if there are inclusions, one of them does.
"""

from __future__ import annotations

import re
from typing import Any


def patterns(value: Any) -> list[str]:
    items = value.split() if isinstance(value, str) else [p for item in value or () for p in str(item).split()]
    return [p for p in items if p]


def _match(pattern: str, branch: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), branch) is not None


def includes(value: Any, branch: str) -> bool:
    """Whether a step with `branches: value` is part of a build of `branch`."""
    items = patterns(value)
    if any(_match(p[1:], branch) for p in items if p.startswith("!")):
        return False
    wanted = [p for p in items if not p.startswith("!")]
    return not wanted or any(_match(p, branch) for p in wanted)
