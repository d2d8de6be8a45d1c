"""A pipeline as Buildkite reads it (importer/view.py) and the comparison of two readings: what Buildkite
treats as the same compares equal, what it does not is one difference per field."""

from __future__ import annotations

import yaml

from pipegen.importer.compare import compare
from pipegen.importer.nodes import read_pipeline
from pipegen.importer.view import read_view


def view(text: str):
    return read_view(read_pipeline(yaml.safe_load(text), "p.yml"))


def test_spellings_buildkite_reads_alike_compare_equal():
    written = view("env: {A: 1}\nsteps:\n  - {name: a, key: a, command: make, agents: [os=linux], branches: 'main dev',"
                   " soft_fail: false, env: {B: true}}\n")
    rendered = view("steps:\n  - {label: a, key: a, commands: [make], agents: {os: linux}, branches: [main, dev],"
                    " env: {A: '1', B: 'true'}}\n")
    assert compare(written, rendered) == []


def test_a_wait_is_the_depends_on_it_means_and_a_group_key_stands_for_its_steps():
    written = view("steps:\n  - {key: a, command: x}\n  - {key: b, command: x}\n  - wait: ~\n    continue_on_failure: true\n"
                   "  - group: G\n    key: g\n    steps: [{key: c, command: x}, {key: d, command: x, depends_on: c}]\n"
                   "  - {key: e, command: x, depends_on: g}\n")
    assert {k: r.deps for k, r in written.items()} == {
        "a": {}, "b": {}, "c": {"a": True, "b": True}, "d": {"c": False}, "e": {"d": False}}  # reduced: d implies c
    # what pipegen renders for it: explicit depends_on, the group without a key; the same as Buildkite reads it
    rendered = view("steps:\n  - {key: a, command: x}\n  - {key: b, command: x}\n  - group: G\n    steps:\n"
                    "      - {key: c, command: x, depends_on: [{step: a, allow_failure: true}, {step: b, allow_failure: true}]}\n"
                    "      - {key: d, command: x, depends_on: [c]}\n  - {key: e, command: x, depends_on: [c, d]}\n")
    assert compare(written, rendered) == []


def test_what_differs_is_named_by_step_and_field():
    written = view("steps:\n  - {key: a, command: make, timeout_in_minutes: 5}\n  - block: Go?\n    key: go\n")
    rendered = view("steps:\n  - {key: a, command: make, retry: {automatic: true}}\n")
    assert [(d.step, d.field, d.expected, d.got) for d in compare(written, rendered)] == [
        ("a", "retry", None, {"automatic": True}), ("a", "timeout_in_minutes", 5, None), ("go", "step", "block", None)]
