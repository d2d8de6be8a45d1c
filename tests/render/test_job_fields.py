"""render/job_fields.py: each command-job field from its step, its template's `job:` and the build, in the one
precedence the module documents (later wins): checked field by field, and drawn at random for env and priority."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipegen.buildkite.upload_escape import Dollars
from pipegen.hardware.build_context import BuildContext
from pipegen.hardware.types import Family, Job, JobFields, Template
from pipegen.model import Location, Step
from pipegen.render import job_fields
from pipegen.render.command_step import command_step
from pipegen.render.yaml_writer import Safe

DOLLARS = Dollars(["*"])  # variables kept: the values below go out as written
NONE = JobFields()


def job(fields: JobFields = NONE, kind: str = "plain", gpus: int = 2, **step_fields) -> Job:
    step = Step(location=Location("steps.yaml", 1), key="s", label="S", group="", commands=("pytest",),
                **step_fields)
    family = Family("gpu", "nvidia", ((2, "q"),), template=Template("t", kind=kind, image="img", job=fields))
    return Job(step, family, gpus, "q")


def build(**fields) -> BuildContext:
    return BuildContext(values={}, **fields)


def test_env_step_then_template_then_the_builds_for_the_key():
    placed = job(JobFields(env=(("A", "template"), ("B", "{gpus} gpus"))), env=(("A", "step"), ("C", "step")))
    assert job_fields.env(placed.step, placed, ["x"], DOLLARS, None) == {"A": "template", "C": "step", "B": "2 gpus"}
    keyed = build(keyed={"s": ({"C": "build"}, None)})
    assert job_fields.env(placed.step, placed, ["x"], DOLLARS, keyed) == {"A": "template", "C": "build",
                                                                          "B": "2 gpus"}


def test_a_runner_takes_the_commands_in_its_variable_unless_the_step_runs_without_its_plugin():
    runner = JobFields(runner="run-it", commands_env="CMDS", env=(("T", "1"),))
    placed = job(runner)
    assert job_fields.commands(placed.step, placed, ["a", "b"]) == ["run-it"]
    assert job_fields.env(placed.step, placed, ["a", "b"], DOLLARS, None) == {"T": "1", "CMDS": "a && b"}
    bare = job(runner, no_plugin=True)
    assert job_fields.commands(bare.step, bare, ["a", "b"]) == ["a && b"]
    assert job_fields.env(bare.step, bare, ["a", "b"], DOLLARS, None) == {}
    assert command_step(placed.step, placed, "s", [], DOLLARS, None).plugin is None  # the runner is the job


def test_timeout_the_builds_then_the_steps_or_the_default_capped():
    capped = JobFields(default_timeout=30, max_timeout=60)
    assert job_fields.timeout(job(capped).step, job(capped), None) == 30
    assert job_fields.timeout(job(capped, timeout_in_minutes=90).step, job(capped, timeout_in_minutes=90), None) == 60
    keyed = build(keyed={"s": ({}, 120)})
    assert job_fields.timeout(job(capped).step, job(capped), keyed) == 120  # the build's, not capped
    assert job_fields.timeout(job(capped).step, job(capped), build(keyed={"s": ({}, 120)},
                                                                   omit=("timeout_in_minutes",))) is None
    variable = job(capped, timeout_in_minutes="${T}")
    assert job_fields.timeout(variable.step, variable, None) == Safe("${T}")


def test_retry_the_steps_then_a_lost_agent_then_the_templates_first():
    fields = JobFields(lost_agent_retry=2, retry={"automatic": [{"exit_status": 3, "limit": 1}]})
    placed = job(fields, retry={"automatic": {"exit_status": 1}})
    assert job_fields.retry(placed.step, placed) == {
        "automatic": [{"exit_status": 3, "limit": 1}, {"exit_status": 1}, {"exit_status": -1, "limit": 2}]}
    replaced = job(JobFields(retry={"manual": False}, retry_mode="replace"), retry={"automatic": True})
    assert job_fields.retry(replaced.step, replaced) == {"manual": False}


def test_the_steps_fields_win_over_the_templates_which_win_over_the_builds_and_omitted_is_gone():
    fields = JobFields(priority=5, artifact_paths=("logs/*",))
    placed = job(fields, buildkite=(("if", "true"), ("priority", 9)))
    assert job_fields.other_fields(placed.step, placed, DOLLARS, build(priority=1)) == {
        "if": "true", "priority": 9, "artifact_paths": ["logs/*"]}
    plain = job(JobFields())
    assert job_fields.other_fields(plain.step, plain, DOLLARS, build(priority=1)) == {"priority": 1}
    assert job_fields.other_fields(placed.step, placed, DOLLARS, build(omit=("priority", "artifact_paths"))) == {
        "if": "true"}


LEVEL = st.none() | st.integers(-5, 5)


@given(LEVEL, LEVEL, LEVEL)
def test_priority_is_the_first_one_set_of_step_template_build(own, template, build_priority):
    placed = job(JobFields(priority=template), buildkite=(("priority", own),) if own is not None else ())
    out = job_fields.other_fields(placed.step, placed, DOLLARS, build(priority=build_priority))
    expected = next((p for p in (own, template, build_priority) if p is not None), None)
    assert out.get("priority") == expected


NAMES = st.sampled_from(["A", "B", "C"])


@given(st.dictionaries(NAMES, st.text("xy", max_size=2)), st.dictionaries(NAMES, st.text("xy", max_size=2)),
       st.dictionaries(NAMES, st.text("xy", max_size=2)))
def test_each_variable_is_the_last_one_set_of_step_template_build(own, template, keyed):
    placed = job(JobFields(env=tuple(template.items())), env=tuple(own.items()))
    out = job_fields.env(placed.step, placed, [], DOLLARS, build(keyed={"s": (keyed, None)}))
    assert out == {**own, **template, **keyed}
