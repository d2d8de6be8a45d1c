"""Buildkite's upload-time interpolation: which `$` the agent expands when the pipeline is uploaded.

A `$` in user text (labels, commands, env, working_dir, group names) is
doubled so that it reaches the job's shell as written, except variables the
config lists under `interpolate:`; vLLM's files are written in Buildkite's
syntax already (they spell `$$VAR`), so the vLLM preset's `interpolate: ["*"]`
leaves every `$` as it is.
"""

from __future__ import annotations

import re
from typing import Iterable

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))?")


class Dollars:
    """Upload-time interpolation: `$` doubled except for the variables to keep ("*": all of them)."""

    def __init__(self, keep: Iterable[str] = ()):
        self.keep = frozenset(keep)
        self.all = "*" in self.keep

    def __call__(self, text: str) -> str:
        if self.all or "$" not in text:
            return text
        if not self.keep:
            return text.replace("$", "$$")
        return _VARIABLE.sub(self._one, text)

    def _one(self, match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return match.group() if name in self.keep else "$" + match.group()


def uploaded(text: str) -> str:
    """Rendered text as the agent gets it after `pipeline upload`: `$$` is Buildkite's escape for `$`.

    (A `$VAR` left for upload-time interpolation is left to the shell here.)
    """
    return text.replace("$$", "$")
