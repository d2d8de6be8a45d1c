"""buildkite/schema.py and schema_errors.py (Buildkite's published pipeline schema, validated and explained) and implicit.py
(the waits and blocks a step follows without a depends_on of its own)."""

from __future__ import annotations

import pytest

from pipegen.buildkite.implicit import implicit_waits
from pipegen.buildkite.schema_errors import validate
from pipegen.errors import OutputError
from pipegen.model import Declarations, Location, Settings, Step


def test_a_valid_pipeline_passes():
    validate({"steps": [{"command": "x", "key": "a"}, "wait", {"group": "g", "steps": [{"block": "go"}]}]})


@pytest.mark.parametrize("data, key, says", [
    ({"steps": [{"command": "x", "key": "a", "colour": "red"}]}, "a", "colour"),
    ({"steps": [{"command": "x"}, {"block": "go", "key": "b", "fields": 3}]}, "b", "fields"),
    ({"steps": [{"group": "g", "key": "g", "steps": [{"command": "x", "key": "c", "priority": "high"}]}]}, "c",
     "priority"),
])
def test_a_step_the_schema_refuses_is_named_with_its_field(data, key, says):
    with pytest.raises(OutputError) as caught:
        validate(data)
    assert caught.value.step_key == key and says in caught.value.message


def step(key: str, kind: str = "command", group: str = "", depends_on: tuple[str, ...] = (), **buildkite) -> Step:
    """`buildkite`: the step's other fields as declared (`declared_depends_on=[]`: a written `depends_on: []`)."""
    fields = {name.removeprefix("declared_"): value for name, value in buildkite.items()}
    return Step(location=Location("steps.yaml", 1), key=key, label=key, group=group, kind=kind,
                depends_on=depends_on, buildkite=tuple(fields.items()))


def waits(*steps: Step) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    decl = Declarations(steps=steps, settings=Settings(), layout="pipegen")
    return {key: [(b.step.key, b.waits_for) for b in barriers] for key, barriers in implicit_waits(decl).items()}


def test_a_wait_holds_back_what_follows_it_without_depends_on():
    found = waits(step("a"), step("w", "wait"), step("b"), step("c", depends_on=("a",)), step("d", depends_on=()),
                  step("i", "input"), step("e"))
    assert found == {"b": [("w", ("a",))], "d": [("w", ("a",))], "e": [("w", ("a",))]}  # c and the input: none


def test_a_declared_empty_depends_on_opts_out():
    assert waits(step("a"), step("w", "wait"), step("b", declared_depends_on=[])) == {}


def test_a_group_after_a_wait_waits_for_it_and_a_wait_inside_holds_its_group_only():
    found = waits(step("a"), step("w", "wait"), step("g1", group="G"), step("gw", "wait", group="G"),
                  step("g2", group="G"), step("b"))
    # the group's steps all wait for the wait before the group, its own wait among them
    assert found == {"g1": [("w", ("a",))], "gw": [("w", ("a",))], "g2": [("w", ("a",)), ("gw", ("g1",))],
                     "b": [("w", ("a",))]}


def test_a_conditional_wait_may_be_left_out_so_the_one_before_it_counts_too():
    found = waits(step("a"), step("w1", "wait"), step("b"), step("w2", "block", **{"if": "build.branch == 'x'"}),
                  step("c"))
    assert found["c"] == [("w1", ("a",)), ("w2", ("a", "w1", "b"))]  # a wait waits for the wait before it too
