"""buildkite/keys.py: keys Buildkite accepts (its schema's pattern, 100 characters, never UUID-like), unique."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pipegen.buildkite.interpolation import InterpolationError, interpolate
from pipegen.buildkite.keys import KEY_MAX, UUID_KEY, declared_keys, key_map, unique_key, valid_key
from pipegen.model import Location, Step


def step(key: str, **fields) -> Step:
    return Step(location=Location("steps.yaml", 1), key=key, label=key, group="", **fields)


ACCEPTED = re.compile(r"^[A-Za-z0-9_:\-]+$")  # what a key without upload-time variables may hold


def test_a_valid_key_is_kept_and_an_invalid_one_made_valid():
    assert valid_key("unit-tests:py3_12") == "unit-tests:py3_12"
    assert valid_key("Unit Tests (GPU)") == "Unit-Tests-GPU"
    assert valid_key("!!!") == "step"
    assert valid_key("build_${TRIPLET?}") == "build_${TRIPLET?}"  # Buildkite fills it in at upload
    assert valid_key("$ odd") == "odd"  # not valid text around the variable: made valid


def test_a_key_is_kept_for_the_variables_buildkite_s_upload_reads():
    """keys.py read them with a regex of its own: `$_X` (text to Buildkite) and `${X:?x}` (the upload fails on
    it) were kept, a variable with a nested default made into another key."""
    assert valid_key("$_X-test") == "_X-test"
    assert valid_key("build-${X:?x}") == "build--X:-x"
    assert valid_key("build-${A:-${B}}") == "build-${A:-${B}}"
    assert valid_key("a-$Ñ") == "a-$Ñ"


class Set(dict[str, str]):
    """Every variable set, to valid key text."""

    def get(self, name: str, default: object = None) -> str:  # type: ignore[override]
        return "v"


@given(st.text(alphabet="$_{}:?-ab\\ Ñ0", max_size=14))
def test_a_key_is_kept_with_its_variables_when_the_upload_makes_it_key_text(key):
    try:
        uploaded = interpolate(key, Set())
    except InterpolationError:
        uploaded = None
    kept = "$" in key and valid_key(key) == key
    assert kept == (uploaded is not None and "$" in key and len(key) <= KEY_MAX and
                    re.fullmatch(r"[A-Za-z0-9_:\-]*", uploaded) is not None)


def test_a_uuid_like_key_is_changed():
    uuid = "0123abcd-0123-4567-89ab-0123456789ab"
    assert UUID_KEY.match(uuid) and valid_key(uuid) == uuid + "-k"


def test_long_keys_keep_a_hash_of_the_whole():
    first, second = valid_key("a" * 150), valid_key("a" * 149 + "b")
    assert len(first) <= KEY_MAX and len(second) <= KEY_MAX and first != second


@given(st.text(max_size=140))
def test_every_key_made_is_valid_and_the_same_each_time(key):
    made = valid_key(key)
    if "$" not in made:
        assert ACCEPTED.match(made) and len(made) <= KEY_MAX and not UUID_KEY.match(made)
    assert valid_key(key) == made and valid_key(made) == made


@given(st.lists(st.text(alphabet="ab -", min_size=1, max_size=4), max_size=12))
def test_key_map_gives_each_step_its_own_valid_key(keys):
    steps = [step(key) for key in dict.fromkeys(keys)]
    mapped = key_map(steps)
    assert len(set(mapped.values())) == len(mapped) == len(steps)
    assert all(ACCEPTED.match(k) for k in mapped.values())
    assert declared_keys(steps) == {r: d for d, r in mapped.items() if r != d}


def test_unique_key_counts_up_and_fits():
    used: set[str] = set()
    assert [unique_key("k", used) for _ in range(3)] == ["k", "k-2", "k-3"]
    long = "x" * KEY_MAX
    assert unique_key(long, {long}) == "x" * (KEY_MAX - 2) + "-2"
