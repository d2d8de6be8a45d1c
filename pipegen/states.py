"""A step's states, one vocabulary: its decision (`Action`), what a step the change does not select becomes
(`Unselected`: the config's `unselected:`, --unselected), and the two together, its state in the rendered
pipeline (`StepState`).
"""

from __future__ import annotations

import enum
from typing import Literal

Action = Literal["run", "block", "skip"]  # a step's decision (selection/decide.py)
ACTIONS: tuple[Action, ...] = ("run", "block", "skip")
Unselected = Literal["block", "skip", "omit"]
UNSELECTED: tuple[Unselected, ...] = ("block", "skip", "omit")


class StepState(enum.Enum):
    """A step in the rendered pipeline; the value is the word the annotation counts it by."""

    RUN = "run"  # its job runs
    BLOCKED = "blocked"  # behind a block step to click (unselected: block)
    SHOWN_SKIPPED = "skip-step"  # in the pipeline with Buildkite's skip, its reason shown (unselected: skip)
    OMITTED = "omitted"  # not in the pipeline (unselected: omit, or folded to stay within the job limit)
    LEFT_OUT = "left out"  # decided skip (docs-only, an exclusion): not in the pipeline whatever --unselected says

    @classmethod
    def of(cls, action: Action, unselected: Unselected) -> StepState:
        """A decision as the pipeline holds it: run as decided, left out when skipped, a blocked decision as
        `unselected` says."""
        if action == "run":
            return cls.RUN
        if action == "skip":
            return cls.LEFT_OUT
        return _UNSELECTED_STATE[unselected]

    @property
    def present(self) -> bool:
        """Whether the step is in the pipeline (a job, or a step shown as skipped)."""
        return self in _PRESENT


_UNSELECTED_STATE = {"block": StepState.BLOCKED, "skip": StepState.SHOWN_SKIPPED, "omit": StepState.OMITTED}
_PRESENT = frozenset({StepState.RUN, StepState.BLOCKED, StepState.SHOWN_SKIPPED})
