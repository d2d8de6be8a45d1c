"""buildkite/branches.py, limits.py and workdir.py: a step's branch filter, the jobs an upload holds, and
a container's working directory mapped back to the repository."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipegen.buildkite.branches import includes, patterns
from pipegen.buildkite.limits import command_jobs, count_jobs
from pipegen.buildkite.workdir import joined, map_workdir

BRANCHES = st.text(alphabet="ab/-*", min_size=1, max_size=8).filter(lambda b: "*" not in b)


@pytest.mark.parametrize("value, branch, expected", [
    ("main", "main", True), ("main", "mainline", False), ("main release/*", "release/1.2", True),
    ("release/*", "release/a/b", True),  # `*` matches `/` too
    ("!main", "main", False), ("!main", "dev", True), ("* !wip/*", "wip/x", False),
    (["main", "dev stable"], "stable", True), ("", "any", True), (None, "any", True),
    ("feat.*", "featX", False),  # a dot is a dot, not a regular expression
])
def test_a_branch_filter_as_buildkite_reads_it(value, branch, expected):
    assert includes(value, branch) is expected


@given(BRANCHES, st.lists(BRANCHES, max_size=3))
def test_an_exclusion_wins_and_a_star_takes_every_branch(branch, others):
    assert includes(" ".join(["*", *others]), branch)
    assert not includes(["*", f"!{branch}", *others], branch)
    assert patterns(" ".join(others)) == [p for o in others for p in o.split()]


def test_jobs_as_buildkite_counts_them():
    matrix = {"setup": {"os": ["linux", "mac"], "py": ["3.11", "3.12", "3.13"]}}
    assert command_jobs(None) == command_jobs(1) == command_jobs(0) == 1
    assert command_jobs(4) == 4 and command_jobs(2, matrix) == 12 and command_jobs(None, ["a", "b"]) == 2
    steps = [{"command": "x"}, "wait", {"block": "go"},
             {"group": "g", "steps": [{"command": "y", "parallelism": 3}, {"command": "z", "matrix": ["a", "b"]}]}]
    assert count_jobs(steps) == 1 + 1 + 1 + (1 + 3 + 2)
    assert count_jobs(None) == 0


@pytest.mark.parametrize("working_dir, mapping, expected", [
    ("/vllm-workspace/tests", (("/vllm-workspace", ""),), "tests"),
    ("/vllm-workspace/", (("/vllm-workspace", ""),), ""),
    (None, (("/vllm-workspace", ""),), ""),
    ("tests/unit", (), "tests/unit"),
    ("/elsewhere", (("/vllm-workspace", ""),), None),
    ("/vllm-workspace-2/x", (("/vllm-workspace", ""),), None),  # a prefix of the name is not a folder above it
    ("/w/tests/x", (("/w", ""), ("/w/tests", "src/tests")), "src/tests/x"),  # the longest prefix
    ("/w/../../x", (("/w", ""),), None),  # leaves the repository
])
def test_map_workdir(working_dir, mapping, expected):
    assert map_workdir(working_dir, mapping) == expected


def test_joined_stays_inside_the_repository():
    assert joined("a", "b/../c") == "a/c" and joined("", "") == "" and joined("a", "..") == ""
    assert joined("", "..") is None and joined("a", "../../b") is None
