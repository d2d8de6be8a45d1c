"""A step's states, one vocabulary (pipegen/states.py): the CLI, the config and render read the same words."""

from __future__ import annotations

import pytest

from pipegen.cli import cli
from pipegen.states import ACTIONS, UNSELECTED, StepState


@pytest.mark.parametrize("mode", UNSELECTED)
def test_a_decision_becomes_one_state_in_the_pipeline(mode):
    states = {action: StepState.of(action, mode) for action in ACTIONS}
    assert states["run"] is StepState.RUN and states["skip"] is StepState.LEFT_OUT  # whatever --unselected says
    assert states["block"] is {"block": StepState.BLOCKED, "skip": StepState.SHOWN_SKIPPED,
                               "omit": StepState.OMITTED}[mode]
    assert states["block"].present is (mode != "omit")


def test_only_the_states_with_a_step_in_the_pipeline_are_present():
    assert {s for s in StepState if s.present} == {StepState.RUN, StepState.BLOCKED, StepState.SHOWN_SKIPPED}


def test_every_command_that_takes_unselected_offers_the_same_words():
    for command in cli.commands.values():
        for param in command.params:
            if param.name == "unselected":
                assert tuple(param.type.choices) == UNSELECTED  # type: ignore[attr-defined]
