"""Dependency entries: path-boundary prefixes, globs, exclusions; the index agrees with the naive rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.model import Location, Step
from pipegen.selection.matching import StepIndex, entry_matches, explain, first_match


@pytest.mark.parametrize(
    "entry, path, expected",
    [
        ("vllm/distributed", "vllm/distributed/x.py", True),
        ("vllm/distributed/", "vllm/distributed", True),
        ("vllm/distributed", "vllm/distributed_utils.py", False),  # boundary, not a raw prefix
        ("tests/test_config", "tests/test_config.py", False),
        ("setup.py", "setup.py", True),
        ("", "anything", False),
        ("/", "anything", False),
        ("tests/**/test_*.py", "tests/a/b/test_x.py", True),
        ("tests/**/test_*.py", "tests/test_x.py", True),
        ("tests/*.py", "tests/a/x.py", False),  # a single * does not cross folders
        ("*.md", "docs/deep/README.md", True),
        ("docs/[ab].txt", "docs/a.txt", True),
    ],
)
def test_entry_semantics(entry, path, expected):
    assert entry_matches(entry, path) is expected


def test_raw_and_regex_kinds():
    assert entry_matches("tests/foo", "tests/foo_bar.py", "raw")
    assert entry_matches("docker/Dockerfile.", "docker/Dockerfile_x", "regex")  # '.' is any character
    assert not entry_matches("csrc/", "src/csrc/x", "regex")  # anchored at the start


def test_exclusion_beats_include():
    entries = ["vllm/", "!vllm/distributed/kv_transfer/"]
    assert first_match(entries, ["vllm/distributed/kv_transfer/a.py"]) is None
    assert first_match(entries, ["vllm/distributed/kv_transfer/a.py", "vllm/x.py"]) == ("vllm/x.py", "vllm/")
    assert explain(entries, "vllm/distributed/kv_transfer/a.py") == ("vllm/", "vllm/distributed/kv_transfer/")


SEGMENTS = st.sampled_from(["a", "b", "c", "ab", "test_x.py", "b.py"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join)
ENTRIES = PATHS | PATHS.map(lambda p: p + "/") | st.sampled_from(["a/**/b.py", "*.py", "a/*", "[ab]/c", ""])
DEPS = st.lists(ENTRIES | ENTRIES.map(lambda e: "!" + e), max_size=5)


@settings(max_examples=300, deadline=None)
@given(deps=st.lists(DEPS, min_size=1, max_size=6), files=st.lists(PATHS, max_size=8, unique=True),
       kind=st.sampled_from(["entry", "raw"]))
def test_index_agrees_with_the_naive_rule(deps, files, kind):
    steps = [Step(key=f"s{i}", label="s", group="", location=Location("x"), dependencies=tuple(d),
                  dependency_kind=kind) for i, d in enumerate(deps)]
    if kind == "raw":
        steps = [s for s in steps if all(e.lstrip("!") for e in s.dependencies)]
    got = StepIndex(steps).matches(files)
    for step, match in zip(steps, got, strict=True):
        expected = first_match(step.dependencies, files, kind)
        # The earliest file in change order and its first matching entry, like vLLM's loop.
        assert match == expected, (step.dependencies, files)


def test_a_docs_only_exclusion_keeps_its_file_out_of_docs_only():
    """`docs_only: [docs/, '!docs/conf.py']`: a change to the docs build's config is no docs-only change (the
    exclusion was read as a path that matches nothing, and the change skipped every step)."""
    from pipegen.model import ChangeSet, Declarations, Options, Settings
    from pipegen.selection.decide import decide

    step = Step(key="docs", label="Docs", group="", location=Location("s.yaml"), dependencies=("docs/conf.py",))
    decl = Declarations((step,), Settings(docs_only=("docs/", "!docs/conf.py")), "pipegen")
    conf = decide(decl, ChangeSet(("docs/conf.py", "docs/index.md")), Options())
    assert not conf.skip_all and conf.decisions[0].action == "run"
    assert decide(decl, ChangeSet(("docs/index.md",)), Options()).skip_all
