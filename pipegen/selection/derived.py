"""Why a derived entry selects its step: the chain that reached it (graph/derived.py). Pure."""

from __future__ import annotations

import functools

from pipegen.graph.derived import chain
from pipegen.model import Step


@functools.cache
def derived_entries(step: Step) -> dict[str, tuple[str, str, str]]:
    """The step's derived entries, each with the link that reached it."""
    return {link[0]: link for link in step.derivation}


def derived_text(step: Step, path: str, entry: str) -> str:
    """`vllm/a.py <- imported by tests/t.py (derive root tests/)`; a file in a derived crate names the crate."""
    inside = "" if path == entry else f"{path} is in "
    return f"{inside}{chain(entry, derived_entries(step))}"
