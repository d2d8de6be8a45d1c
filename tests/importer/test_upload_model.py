"""The model of what Buildkite makes of uploaded files (importer/upload_model/): what Buildkite treats as the
same compares equal, what it does not is named by step and field."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pipegen.importer.upload_model as model
from pipegen.importer.upload_model.agent_yaml import parse
from pipegen.importer.upload_model.build import build
from pipegen.importer.upload_model.interpolation import InterpolationError, Term, interpolate, value
from pipegen.importer.upload_model.verdict import compare, describe


def differences(original: dict[str, str] | str, rendered: str) -> list[tuple[str, str]]:
    uploads = list(original.items()) if isinstance(original, dict) else [("p.yml", original)]
    return [(f.step, f.field) for f in compare(build(uploads), build([("rendered", rendered)]))]


@pytest.mark.parametrize(("text", "defined", "expected"), [
    ("a $$B \\$C", {}, "a $B $C"),
    ("${A:-x}", {"A": ()}, "x"),
    ("${A-x}", {"A": ()}, ""),
    ("${A:-x}", {"A": ("y",)}, "y"),
    ("${A:2}", {"A": ("abcdef",)}, "cdef"),
    ("${A:1:2}", {"A": ("abcdef",)}, "bc"),
    ("$A$B", {"A": ("1",)}, ("1", Term("var", "B"))),
    ("${Q:-${R:-z}}", {}, (Term("default", "Q", True, (Term("default", "R", True, ("z",)),)),)),
    ("$ 5 and $9", {}, "$ 5 and $9"),
])
def test_interpolation(text, defined, expected):
    assert value(interpolate(text, defined)) == expected


def test_an_unterminated_brace_is_refused():
    with pytest.raises(InterpolationError):
        interpolate("${A", {})


def test_yaml_as_the_agent_reads_it():
    assert parse("a: yes\nb: on\nc: 0o17\nd: 1_000\ne: 2024-01-01\nf: True\n", "x") == {
        "a": "yes", "b": "on", "c": 15, "d": "1_000", "e": "2024-01-01", "f": True}
    assert build([("x", "steps:\n  - command: a\n    command: b\n")]).refused  # a key twice: refused
    assert parse("a: &x {k: 1, j: 2}\nb: {<<: *x, k: 3}\nc: {<<: [{m: 1}, {m: 2, n: 2}]}\n", "x") == {
        "a": {"k": 1, "j": 2}, "b": {"k": 3, "j": 2}, "c": {"m": 1, "n": 2}}
    assert build([("x", "steps:\n  - command: !!python/object:os.system echo\n")]).refused  # no such tag


def test_a_files_env_interpolates_its_references_in_order():
    # buildkite/agent: a queue from the file's env, defined from the uploader's environment with a default
    original = ("env:\n  Q: ${Q:-linux}\n  ARM: ${BUILDERS:-elastic}\nsteps:\n"
                "  - {key: a, command: 'echo $ARM', agents: {queue: $Q}}\n")
    carried = ("steps:\n  - {key: a, command: 'echo ${BUILDERS:-elastic}', agents: {queue: '${Q:-linux}'},"
               " env: {Q: '${Q:-linux}', ARM: '${BUILDERS:-elastic}'}}\n")
    assert differences(original, carried) == []
    moved_only = ("steps:\n  - {key: a, command: 'echo $ARM', agents: {queue: $Q},"
                  " env: {Q: '${Q:-linux}', ARM: '${BUILDERS:-elastic}'}}\n")
    assert differences(original, moved_only) == [("a", "agents"), ("a", "commands")]


def test_spellings_buildkite_reads_alike_compare_equal():
    written = ("env: {A: 1}\nsteps:\n  - {name: a, key: a, command: make, agents: [os=linux], branches: 'main dev',"
               " soft_fail: false, env: {B: true}}\n")
    rendered = ("steps:\n  - {label: a, key: a, commands: [make], agents: {os: linux}, branches: [main, dev],"
                " env: {A: '1', B: 'true'}}\n")
    assert differences(written, rendered) == []


def test_a_wait_is_the_depends_on_it_means_and_a_group_key_stands_for_its_steps():
    written = ("steps:\n  - {key: a, command: x}\n  - {key: b, command: x}\n  - wait: ~\n    continue_on_failure: true\n"
               "  - group: G\n    key: g\n    steps: [{key: c, command: x}, {key: d, command: x, depends_on: c}]\n"
               "  - {key: e, command: x, depends_on: g}\n")
    deps = {job.key: job.deps for job in build([("p", written)]).jobs.values()}
    assert deps == {"a": {}, "b": {}, "g": {"p#1": True, "p#2": True}, "c": {"p#1": True, "p#2": True},
                    "d": {"p#4.1": False}, "e": {"p#4.2": False}}  # reduced: d implies c
    rendered = ("steps:\n  - {key: a, command: x}\n  - {key: b, command: x}\n  - group: G\n    steps:\n"
                "      - {key: c, command: x, depends_on: [{step: a, allow_failure: true}, {step: b, allow_failure: true}]}"
                "\n      - {key: d, command: x, depends_on: [c]}\n  - {key: e, command: x, depends_on: [c, d]}\n")
    assert differences(written, rendered) == []


def test_depends_on_replaces_the_waits_and_a_block_is_a_wait():
    # docs (depends-on): a step with depends_on runs "without waiting for block or wait steps"
    written = "steps:\n  - {key: a, command: x}\n  - wait\n  - {key: b, command: x, depends_on: []}\n  - block: go\n" \
              "  - {key: c, command: x}\n  - input: who\n"
    deps = {job.key or job.kind: set(job.deps) for job in build([("p", written)]).jobs.values()}
    assert deps == {"a": set(), "b": set(), "block": {"p#1", "p#3"}, "c": {"p#4"}, "input": {"p#4"}}


def test_a_wait_acts_within_its_own_upload():
    files = {"one.yml": "steps:\n  - {key: a, command: x}\n", "two.yml": "steps:\n  - wait\n  - {key: b, command: x}\n"}
    assert differences(files, "steps:\n  - {key: a, command: x}\n  - {key: b, command: x}\n") == []
    assert differences(files, "steps:\n  - {key: a, command: x}\n  - wait\n  - {key: b, command: x}\n") == [
        ("b", "depends_on")]


def test_what_differs_is_named_by_step_and_field():
    found = compare(build([("p", "steps:\n  - {key: a, command: make, timeout_in_minutes: 5}\n  - block: Go?\n"
                                  "    key: go\n")]),
                    build([("r", "steps:\n  - {key: a, command: make, retry: {automatic: true}}\n")]))
    assert [(f.step, f.field, f.expected, f.got) for f in found] == [
        ("a", "retry", None, {"automatic": True}), ("a", "timeout_in_minutes", 5, None), ("go", "step", "block", None)]
    assert "  timeout_in_minutes: differs on 1 step (a); 'a' had '5', renders nothing" in describe(found)


def test_the_builds_notify_is_every_uploads():
    files = {"one.yml": "notify: [{slack: '#a'}]\nsteps:\n  - {key: a, command: x}\n",
             "two.yml": "notify: [{email: b@c}]\nsteps:\n  - {key: b, command: x}\n"}
    both = "notify: [{email: b@c}, {slack: '#a'}]\nsteps:\n  - {key: a, command: x}\n  - {key: b, command: x}\n"
    assert differences(files, both) == []
    assert differences(files, both.replace("{email: b@c}, ", "")) == [("the build", "notify")]


def test_a_depends_on_cycle_is_refused_not_accepted():
    """Buildkite cannot start a step that waits for itself: the model says so (it reduced the cycle's
    dependencies by a closure cut short, and compared such a build as any other)."""
    cyclic = "steps:\n  - {key: a, command: x, depends_on: b}\n  - {key: b, command: y, depends_on: [a]}\n" \
             "  - {key: c, command: z, depends_on: a}\n"
    assert build([("p.yml", cyclic)]).refused == [
        "the depends_on of a, b form a cycle (a -> b -> a): no step of it can start"]
    assert build([("p.yml", "steps:\n  - {key: a, command: x, depends_on: a}\n")]).refused == [
        "the depends_on of a form a cycle (a -> a): no step of it can start"]
    assert differences(cyclic, cyclic) == [("the build", "refused")] * 2
    fine = "steps:\n  - {key: a, command: x}\n  - {key: b, command: y, depends_on: a}\n  - wait\n  - {command: z}\n"
    assert build([("p.yml", fine)]).refused == []


def test_each_followed_upload_is_read_a_bounded_number_of_times():
    """Twins under exclusive ifs are found without reading every earlier upload again for each step (300
    uploads read 45,000 times)."""
    reads = []

    def read(path):
        reads.append(path)
        return f"steps:\n  - {{key: k-{path}, command: x}}\n"

    steps = "".join(f"  - {{command: buildkite-agent pipeline upload f{i}.yml}}\n" for i in range(300))
    twins = ("  - {command: buildkite-agent pipeline upload t.yml, if: build.branch == 'main'}\n"
             "  - {command: buildkite-agent pipeline upload t.yml, if: build.branch != 'main'}\n")
    built = build([("p.yml", "steps:\n" + steps + twins)], read)
    assert built.refused == [] and "k-t.yml" in built.keys  # the twins: one upload, its key once
    assert len(reads) <= 3 * 302


def test_the_model_imports_nothing_of_pipegen_outside_its_folder() -> None:
    """Its docstring's promise (the proof and the converter cannot share a blind spot): each pipegen module the
    model imports, at any depth of a function too, is its own or pipegen.frozen (a decorator, no reading)."""
    folder = Path(model.__file__).parent
    own = ("pipegen.importer.upload_model", "pipegen.frozen")
    found: set[str] = set()
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: a relative import"
                found.add(node.module or "")
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    assert "pipegen.importer.upload_model.interpolation" in found  # the walk sees the model's own imports
    pipegen_imports = {name for name in found if name.split(".")[0] == "pipegen"}
    assert sorted(n for n in pipegen_imports if not n.startswith(own)) == []
