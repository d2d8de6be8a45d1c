"""pipegen.frozen.Frozen: the shared __eq__, __hash__ and __repr__ behave as the ones @dataclass generates."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipegen.frozen import Frozen


@dataclass(frozen=True, repr=False, eq=False)
class Shared(Frozen):
    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Generated:
    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default=())


@dataclass(frozen=True, repr=False, eq=False)
class SameFields(Frozen):
    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default=())


values = st.tuples(st.text(max_size=5), st.integers(-3, 3), st.lists(st.text(max_size=2), max_size=2).map(tuple))


@given(values, values)
def test_equality_hash_and_repr_are_the_generated_ones(a, b):
    assert (Shared(*a) == Shared(*b)) == (Generated(*a) == Generated(*b))
    assert (Shared(*a) != Shared(*b)) == (Generated(*a) != Generated(*b))
    if Shared(*a) == Shared(*b):
        assert hash(Shared(*a)) == hash(Shared(*b))
    assert repr(Shared(*a)) == repr(Generated(*a)).replace("Generated(", "Shared(", 1)


def test_another_class_with_equal_fields_is_not_equal():
    assert Shared("x") != SameFields("x")
    assert len({Shared("x"), Shared("x"), SameFields("x")}) == 2


def test_still_frozen_and_replaceable():
    record = Shared("x", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.count = 2  # type: ignore[misc]
    assert dataclasses.replace(record, count=2) == Shared("x", 2)
