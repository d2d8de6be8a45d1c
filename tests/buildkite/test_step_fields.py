"""buildkite/step_fields.py: the command-step fields Buildkite's schema knows, and what it refuses in each."""

from __future__ import annotations

from pipegen.buildkite.step_fields import field_names, problems


def test_the_accepted_fields_are_the_schemas():
    # Not a list written here: the schema's command step, as pipegen vendors it.
    assert {"if", "branches", "matrix", "artifact_paths", "notify", "priority", "cancel_on_build_failing",
            "allow_dependency_failure", "concurrency_method", "plugins", "agents", "skip"} <= field_names()


def test_valid_fields_have_no_problem_and_a_bad_one_is_named_with_what_it_expects():
    assert problems({}) == [] and problems({"priority": 3, "if": "build.branch == 'main'"}) == []
    [problem] = problems({"priority": "high", "branches": "main"})
    assert problem.field == "priority" and problem.expects and problem.message
    nested = problems({"matrix": {"setup": {"os": [{"not": "a value"}]}}})
    assert nested and nested[0].field == "matrix" and nested[0].path[:2] == ("setup", "os")
