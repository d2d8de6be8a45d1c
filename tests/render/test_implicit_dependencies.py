"""A step that runs never waits for the block step of a step that does not.

Buildkite gives every step without `depends_on` an implicit dependency on the last wait or block step
before it in its list (the pipeline's, or its group's), and a group placed after one waits for it too
(buildkite_order.py models this from Buildkite's documentation). pipegen's block step for an unselected
step must gate that step alone: the steps after it keep exactly the waits they were declared with.
"""

from __future__ import annotations

import textwrap

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_valid, needs_fixture, render
from tests.render.buildkite_order import Graph


def graph(text: str) -> Graph:
    return Graph(yaml.safe_load(textwrap.dedent(text)))


# --------------------------------------------------------------------------- the model, on the documentation's examples


def test_the_model_reads_the_documentations_examples():
    # depends_on.md: the steps after a wait wait for it, and it for every step before it
    g = graph("""
        steps:
          - {command: one.sh, key: one}
          - {command: two.sh, key: two}
          - {wait: ~, key: w}
          - {command: three.sh, key: three}
        """)
    assert g.waits_for("three") == {"w", "one", "two"} and g.waits_for("two") == set()
    # depends_on.md: an explicit empty dependency (~ or []) runs at once, regardless of the wait
    for empty in ("~", "[]"):
        g = graph(f"steps: [{{command: tests.sh, key: t}}, {{wait: ~}}, {{command: lint.sh, key: l, depends_on: {empty}}}]")
        assert g.waits_for("l") == set()
    # block_step.md: explicit dependencies take precedence over the implicit ones
    g = graph("""
        steps:
          - {command: build.sh, key: built}
          - {block: Release, key: blocked-deploy, depends_on: [built]}
          - {command: other.sh, key: other}
          - {command: release.sh, key: release, depends_on: [built, blocked-deploy]}
          - {command: lint.sh, key: lint, depends_on: [built]}
        """)
    assert g.waits_for("release") == {"built", "blocked-deploy"} and g.waits_for("lint") == {"built"}
    assert g.waits_for("other") == {"blocked-deploy", "built"}  # a block with its own depends_on still holds back
    # group_step.md: a wait in a group holds back that group's steps only; a group's depends_on holds for each
    g = graph("""
        steps:
          - {command: t.sh, key: tests}
          - group: Group01
            depends_on: tests
            steps: [{command: a.sh, key: a}, wait, {command: b.sh, key: b}]
          - group: Group02
            depends_on: tests
            key: toast
            steps: [{command: c.sh, key: c}, wait, {command: d.sh, key: d}]
          - {command: yay.sh, key: yay, depends_on: toast}
        """)
    assert "a" not in g.waits_for("d") and {"a", "tests"} <= g.waits_for("b")
    assert {"c", "d", "tests"} <= g.waits_for("yay") and "a" not in g.waits_for("yay")
    # input_step.md: an input step holds back nothing, and nothing holds it back
    g = graph("steps: [{command: a, key: a}, {input: Notes, key: n}, {command: b, key: b}]")
    assert g.waits_for("b") == set() and g.waits_for("n") == set()


def gates(g: Graph, user_blocks: set[str] = frozenset()) -> set[str]:
    """pipegen's block steps: every block the user did not declare."""
    return {n for n, k in g.kinds.items() if k == "block" and n not in user_blocks}


def running(g: Graph, gate_keys: set[str]) -> list[str]:
    """The command steps that run: neither skipped nor behind their own block step."""
    return [n for n in g.commands() if "skip" not in g.steps[n]
            and not set(_own(g.steps[n].get("depends_on"))) & gate_keys]


def _own(value):
    items = [] if value is None else [value] if isinstance(value, str) else value
    return [i["step"] if isinstance(i, dict) else i for i in items]


def stalls(g: Graph, user_barriers: set[str] = frozenset(), user_blocks: set[str] = frozenset()) -> dict[str, set]:
    """Each running command step -> the blocks of other steps it waits for (a user's own wait or block is
    reached, not passed: what it waits for is what the user wrote)."""
    blocks = gates(g, user_blocks)
    out = {}
    for name in running(g, blocks):
        found = g.waits_for(name, stop=user_barriers) & blocks
        if found:
            out[name] = found
    return out


# --------------------------------------------------------------------------- pipegen's own format


STEPS_A = """
steps:
  - {label: X, key: x, commands: [x], source_file_dependencies: [x/]}
  - {label: Y, key: y, commands: [y], source_file_dependencies: [src/]}
  - {label: Z, key: z, commands: [z], source_file_dependencies: [src/], depends_on: [y]}
"""
STEPS_B = """
group: G
steps:
  - {label: P, key: p, commands: [p], source_file_dependencies: [p/]}
  - {label: Q, key: q, commands: [q], source_file_dependencies: [src/]}
  - wait
  - {label: R, key: r, commands: [r], source_file_dependencies: [src/]}
  - {label: S, key: s, commands: [s], source_file_dependencies: [s/]}
  - {label: T, key: t, commands: [t], source_file_dependencies: [src/]}
"""


def own_repo(tmp_path, files):
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text("steps: [.buildkite/steps]\n")
    for name, text in files.items():
        (tmp_path / ".buildkite" / "steps" / name).write_text(text)
    return tmp_path


def test_a_running_step_after_a_block_of_another_step_does_not_wait_for_it(tmp_path):
    root = own_repo(tmp_path, {"a.yaml": STEPS_A, "b.yaml": STEPS_B})
    result = render(root, files="src/a.c\n")
    assert result.exit_code == 0, result.output
    g = Graph(assert_valid(result.stdout))
    assert g.waits_for("x") == {"block-x"}  # the unselected step waits for its own block
    assert stalls(g, user_barriers={n for n, k in g.kinds.items() if k == "wait"}) == {}
    assert g.waits_for("y") == set() and g.waits_for("z") == {"y"}
    # the group after the top-level block starts at once; inside it, R and T still wait for the declared wait
    assert g.waits_for("q") == set()
    wait = next(n for n, k in g.kinds.items() if k == "wait")
    assert wait in g.waits_for("r") and wait in g.waits_for("t") and "block-s" not in g.waits_for("t")
    # the declared wait keeps its meaning: it waits for every step before it, so P, unselected, runs (decide
    # pulls it in for R and T: a block there would stall them)
    assert {"p", "q"} <= g.waits_for(wait) and "block-p" not in g.kinds
    # where no step after the wait runs, it still waits for the blocks before it, and the annotation says so
    why = tmp_path / "why.md"
    assert render(root, "--annotation", str(why), files="x/a.c\n").exit_code == 0
    assert "> The wait step at .buildkite/steps/b.yaml:6:5 waits for every step before it, blocked ones included " \
           "(block-p, block-q): the steps after it start once those are unblocked and pass." in why.read_text()
    assert render(root, "--all", "--annotation", str(why)).exit_code == 0 and "wait step at" not in why.read_text()


def test_all_selected_renders_no_explicit_dependency_where_none_was_declared(tmp_path):
    root = own_repo(tmp_path, {"a.yaml": STEPS_A, "b.yaml": STEPS_B})
    data = assert_valid(render(root, "--all").stdout)
    assert data["steps"][0] == {"label": "X", "key": "x", "commands": ["x"]}
    assert "depends_on" not in data["steps"][3] and data["steps"][3]["group"] == "G"


def test_a_step_after_a_block_of_another_step_waits_for_the_declared_waits_it_follows(tmp_path):
    """Named by a key where the wait has none; a conditional wait may be left out of the build, so the wait
    before it is named too. An input step holds back nothing and is left alone."""
    root = own_repo(tmp_path, {"a.yaml": """
steps:
  - {label: A, key: a, commands: [a], source_file_dependencies: [src/]}
  - wait
  - {label: B, key: b, commands: [b], source_file_dependencies: [b/]}
  - {label: C, key: c, commands: [c], source_file_dependencies: [src/]}
  - {wait: ~, if: build.branch == "main"}
  - {label: D, key: d, commands: [d], source_file_dependencies: [d/]}
  - {input: Notes}
  - {label: E, key: e, commands: [e], source_file_dependencies: [src/]}
"""})
    steps = assert_valid(render(root, files="src/a.c\n").stdout)["steps"]
    assert steps[1] == {"wait": None, "key": "wait-a-2"} and steps[4]["key"] == "wait-a-5"
    # B runs (E follows the conditional wait, which waits for it), so C follows no block; E follows D's
    assert [s.get("depends_on") for s in steps if s.get("key") in ("b", "c", "e")] == [None, None,
                                                                                       ["wait-a-2", "wait-a-5"]]
    assert steps[7] == {"input": "Notes"}


def test_a_depends_on_whose_targets_are_all_absent_waits_for_no_wait_or_block_before_it(tmp_path):
    """Buildkite runs a step whose dependency is not in the build once its other dependencies are met, never
    falling back to the waits before it: render wrote no depends_on, and the step, the block and the group
    below waited for the wait and X (more ordering than declared). Here the target is a group with no steps."""
    root = own_repo(tmp_path, {"a.yaml": "group: {group: Empty, key: empty}\nsteps: []\n", "b.yaml": """
steps:
  - {label: X, key: x, commands: [x], source_file_dependencies: [src/]}
  - wait
  - {label: Y, key: y, commands: [y], source_file_dependencies: [src/], depends_on: [empty]}
  - {block: Go, key: go, depends_on: [empty]}
""", "c.yaml": """
group: {group: G, key: g, depends_on: [empty]}
steps:
  - {label: Z, key: z, commands: [z], source_file_dependencies: [src/]}
"""})
    g = Graph(assert_valid(render(root, files="src/a.c\n").stdout))
    assert g.waits_for("y") == g.waits_for("go") == g.waits_for("z") == set()
    assert g.steps["y"]["depends_on"] == g.steps["go"]["depends_on"] == g.steps["g"]["depends_on"] == []
    assert "depends_on" not in g.steps["x"]


def test_a_declared_empty_depends_on_is_kept_it_waits_for_no_wait_or_block_before_it(tmp_path):
    """Buildkite: `depends_on: ~` or `[]` makes a step "run immediately regardless of implicit dependencies"."""
    root = own_repo(tmp_path, {"a.yaml": """
group: G
steps:
  - {label: A, key: a, commands: [a], source_file_dependencies: [src/]}
  - wait
  - {label: B, key: b, commands: [b], source_file_dependencies: [src/], depends_on: []}
  - {label: C, key: c, commands: [c], source_file_dependencies: [src/], depends_on: ~}
  - {label: D, key: d, commands: [d], source_file_dependencies: [src/]}
  - {block: Go, key: go, depends_on: []}
"""})
    data = assert_valid(render(root, "--all").stdout)
    g = Graph(data)
    wait = next(n for n, k in g.kinds.items() if k == "wait")
    assert g.waits_for("b") == g.waits_for("c") == set() and g.waits_for("d") == {"a", wait}
    assert g.steps["b"]["depends_on"] == g.steps["c"]["depends_on"] == g.steps["go"]["depends_on"] == []
    assert "depends_on" not in g.steps["d"]


# --------------------------------------------------------------------------- any declarations


KINDS = st.sampled_from(["run", "run", "block", "wait", "user-block"])


@st.composite
def declarations(draw):
    """Steps files: each a group or not, with command steps (selected or not, with or without depends_on on
    earlier steps), waits and block steps of their own."""
    files, keys, index = {}, [], 0
    for number in range(draw(st.integers(1, 3))):
        lines = [f"group: G{number}\n" if draw(st.booleans()) else "", "steps:\n"]
        for _ in range(draw(st.integers(1, 5))):
            index += 1
            what = draw(KINDS)
            if what == "wait":
                lines.append(f"  - {{wait: ~, key: w{index}}}\n" if draw(st.booleans()) else "  - wait\n")
                continue
            if what == "user-block":
                lines.append(f"  - {{block: Approve, key: approve{index}}}\n")
                continue
            key = f"s{index}"
            depends = ""
            choice = draw(st.sampled_from(["none", "none", "earlier", "empty"]))
            if choice == "earlier" and keys:
                depends = f", depends_on: [{draw(st.sampled_from(keys))}]"
            elif choice == "empty":
                depends = ", depends_on: []"
            folder = "src/" if what == "run" else "other/"
            lines.append(f"  - {{label: S{index}, key: {key}, commands: [t], source_file_dependencies: [{folder}]"
                         f"{depends}}}\n")
            keys.append(key)
        files[f"f{number}.yaml"] = "".join(lines)
    return files


def user_structure(g: Graph) -> tuple[list[str], set[str]]:
    """The declared waits and blocks in page order (pipegen may give a wait a key to name it), and the blocks."""
    barriers = [n for n, k in g.kinds.items() if k == "wait" or k == "block" and n.startswith("approve")]
    return barriers, {n for n in barriers if g.kinds[n] == "block"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(files=declarations(), mode=st.sampled_from(["block", "skip", "omit"]))
def test_selecting_changes_which_steps_run_never_when_a_running_step_starts(tmp_path_factory, files, mode):
    """Each running step waits for exactly what it waits for when everything runs (a user's wait or block
    is reached, not passed), so never for the block step of another step; with `unselected: block`, not even
    through a user's wait or block (decide runs every step it waits for: a block there would stall it)."""
    root = own_repo(tmp_path_factory.mktemp("repo"), files)
    selected = render(root, "--unselected", mode, files="src/a.c\n")
    everything = render(root, "--all")
    assert selected.exit_code == 0 and everything.exit_code == 0, selected.output + everything.output
    ours, all_run = Graph(assert_valid(selected.stdout)), Graph(assert_valid(everything.stdout))
    barriers, blocks = user_structure(ours)
    theirs, _ = user_structure(all_run)
    same = dict(zip(theirs, barriers, strict=True))  # the same declared step in both pipelines
    assert stalls(ours, set(barriers), blocks) == {}
    for name in running(ours, gates(ours, blocks)):
        expected = {same.get(n, n) for n in all_run.waits_for(name, stop=theirs)}
        assert ours.waits_for(name, stop=barriers) == expected & set(ours.kinds), (name, files)
        if mode == "block":
            assert ours.waits_for(name) & gates(ours, blocks) == set(), (name, files)


# --------------------------------------------------------------------------- vLLM's preset


@needs_fixture
def test_no_vllm_build_holds_a_running_step_behind_another_steps_block():
    from tests.render.test_vllm_golden import SCENARIOS, golden, pipegen_pipeline

    for name in SCENARIOS:
        assert stalls(Graph(pipegen_pipeline(name))) == {}, name
    # the model is not blind: vLLM's own generator leaves one there (intel-hpu-test has no depends_on and
    # follows GH200's block in the Hardware group)
    assert stalls(Graph(golden("branch-run-all"))) == {"intel-hpu-test": {"block-gh200-test"}}


def test_a_group_keeps_its_declared_empty_depends_on_after_a_block_of_another_step(tmp_path):
    """A group's `depends_on: []` is one rule with a step's: written as `[]`, so a block render adds before
    it (and the declared wait before that) does not give it a dependency it opted out of."""
    root = own_repo(tmp_path, {"a.yaml": """
steps:
  - {label: A, key: a, commands: [a], source_file_dependencies: [src/]}
  - {wait: ~, key: w}
  - {label: X, key: x, commands: [x], source_file_dependencies: [x/]}
""", "b.yaml": """
group: {group: G, key: g, if: build.branch != "x", depends_on: []}
steps:
  - {label: Y, key: y, commands: [y], source_file_dependencies: [src/]}
"""})
    data = assert_valid(render(root, files="src/a.c\n").stdout)
    g = Graph(data)
    group = next(s for s in data["steps"] if s.get("group") == "G")
    assert group["depends_on"] == [] and g.waits_for("y") == set()


def test_many_blocks_and_waits_take_one_pass_and_a_short_note():
    """block_scope.py reads each item once (it copied the rest of the list at each wait: 20 s for 20,000
    conditional waits), and its notes stay short: ten keys and ten waits, then how many more."""
    import time

    from pipegen.model import Location, Step
    from pipegen.render.block_scope import hold_own_steps_only
    from pipegen.render.buildkite_steps import BlockStep, DeclaredStep

    where = Location("f.yaml", 1, 1)
    items = [BlockStep(f"block-b{i}", "Run", None, Step(location=where, key=f"b{i}", label="B", group=""))
             for i in range(400)]
    items += [DeclaredStep(f"w{i}", {"wait": None, "if": "build.branch == 'main'"}, None, None,
                           Step(location=where, key=f"w{i}", label="", group="", kind="wait")) for i in range(20000)]
    start = time.perf_counter()
    notes = hold_own_steps_only(items)
    assert time.perf_counter() - start < 5
    assert len(notes) == 11 and max(map(len, notes)) < 500
    assert "(block-b0, block-b1, " in notes[0] and "block-b9 and 390 more)" in notes[0]
    assert notes[-1] == "19989 more declared wait or block steps wait for blocked steps before them too."
