"""buildkite/matrix.py: the jobs a `matrix:` step expands into, as Buildkite's docs describe them."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from pipegen.buildkite.matrix import Combination, combinations, size


def test_one_dimension_is_written_matrix():
    combos = combinations(["a", True])
    assert [c.name for c in combos] == ["a", "true"]  # a YAML boolean as Buildkite writes it
    assert combos[0].substitute("run {{matrix}} {{ matrix }} {{matrix.os}}") == "run a a {{matrix.os}}"
    assert combinations({"setup": ["x"]}) == [Combination((("", "x"),))]


def test_dimensions_are_every_combination_and_adjustments_change_them():
    matrix = {"setup": {"os": ["linux", "mac"], "arch": ["x86", "arm"]},
              "adjustments": [{"with": {"os": "mac", "arch": "x86"}, "skip": True},
                              {"with": {"os": "win", "arch": "x86"}},
                              {"with": {"os": "linux", "arch": "arm"}, "soft_fail": True}]}
    combos = combinations(matrix)
    assert [c.name for c in combos] == ["os=linux,arch=x86", "os=linux,arch=arm", "os=mac,arch=arm",
                                        "os=win,arch=x86"]
    assert [c.soft_fail for c in combos] == [None, True, None, None]
    assert combos[3].substitute("{{matrix.os}}-{{matrix.arch}}") == "win-x86"
    assert size(matrix) == 4 and size(None) == 1


def test_an_adjustment_of_another_length_is_still_one_job():
    assert size({"setup": ["a", "b"], "adjustments": [{"with": ["x", "y"]}]}) == 3


@given(st.dictionaries(st.sampled_from(["os", "py", "gpu"]),
                       st.lists(st.text(alphabet="abc", min_size=1, max_size=2), min_size=1, max_size=3, unique=True),
                       min_size=1))
def test_the_setup_alone_gives_the_product_of_its_dimensions(setup):
    combos = combinations({"setup": setup})
    assert [tuple(v for _, v in c.values) for c in combos] == list(itertools.product(*setup.values()))
    assert size({"setup": setup}) == len(set(combos))
