"""pipegen.frozen.frozen: the shared __eq__, __hash__ and __repr__ behave as the ones @dataclass generates."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipegen.frozen import frozen


@frozen
class Shared:
    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Generated:
    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default=())


@frozen
class SameFields:
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


def test_every_frozen_class_shares_the_methods():
    """No class in pipegen is a half-made frozen dataclass: eq=False without the shared __eq__ is identity."""
    import importlib
    import pkgutil

    import pipegen

    checked = 0
    for module in pkgutil.walk_packages(pipegen.__path__, "pipegen."):
        for value in vars(importlib.import_module(module.name)).values():
            params = getattr(value, "__dataclass_params__", None)
            if isinstance(value, type) and params is not None and params.frozen:
                assert value.__eq__ is Shared.__eq__ and value.__hash__ is Shared.__hash__, value
                checked += 1
    assert checked > 50
