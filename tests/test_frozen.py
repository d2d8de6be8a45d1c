"""pipegen.frozen.frozen: the shared __eq__, __hash__, __repr__ and __setattr__, and the __init__ written at the
first value, behave as the ones @dataclass generates."""

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


@frozen
class One:
    name: str


@frozen
class Empty:
    pass


def test_one_field_and_none_compare_and_hash_as_tuples_of_their_fields():
    assert One("a") == One("a") != One("b") and hash(One("a")) == hash(("a",)) and repr(One("a")) == "One(name='a')"
    assert Empty() == Empty() and hash(Empty()) == hash(()) and repr(Empty()) == "Empty()"
    assert hash(Shared("x", 1)) == hash(("x", 1, ()))


def test_another_class_with_equal_fields_is_not_equal():
    assert Shared("x") != SameFields("x")
    assert len({Shared("x"), Shared("x"), SameFields("x")}) == 2


def test_still_frozen_and_replaceable():
    record = Shared("x", 1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'count'"):
        record.count = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'name'"):
        del record.name  # type: ignore[misc]
    assert dataclasses.replace(record, count=2) == Shared("x", 2)


@frozen
class Factory:
    name: str
    items: list[str] = field(default_factory=list)


def test_the_init_is_the_generated_one():
    """Positional and keyword values, defaults, a fresh value from each default factory, and the same
    TypeError for a missing or unknown field; an order dataclass refuses is refused when the class is made."""
    assert Factory("a").items == [] and Factory("a").items is not Factory("a").items
    assert Factory("a", ["b"]) == Factory(name="a", items=["b"])
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        Factory()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        Factory("a", other=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        frozen(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))


@pytest.mark.parametrize("option", [{"compare": False}, {"repr": False}, {"hash": False}, {"hash": True}])
def test_a_field_the_shared_methods_would_treat_otherwise_is_refused(option: dict[str, bool]) -> None:
    """The shared __eq__, __hash__ and __repr__ use every field: one dataclass would leave out is refused."""
    with pytest.raises(TypeError, match="compare, repr and hash are not supported"):
        frozen(type("Partial", (), {"__annotations__": {"a": "int"}, "a": field(default=1, **option)}))


def test_every_init_has_the_generated_signature():
    """Each @frozen class of pipegen takes the parameters, in the order and with the defaults, that
    @dataclass(frozen=True) would give it."""
    for cls in frozen_classes():
        cls.__init__(object.__new__(cls), **{f.name: None for f in dataclasses.fields(cls)})  # writes it
        twin = dataclasses.make_dataclass(cls.__name__, [
            (f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
            for f in dataclasses.fields(cls)], frozen=True)
        assert shown(cls) == shown(twin), cls


def shown(cls: type) -> list[tuple[str, object, str]]:
    """The parameters of a class's __init__ after self, a default factory's marker shown as one."""
    import inspect

    from pipegen.frozen import _FACTORY

    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [(p.name, p.kind, "<factory>" if p.default is _FACTORY else repr(p.default)) for p in params]


def frozen_classes() -> list[type]:
    """Every dataclass of pipegen that is not a plain mutable one."""
    import importlib
    import pkgutil

    import pipegen

    found = {}
    for module in pkgutil.walk_packages(pipegen.__path__, "pipegen."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and (
                    value.__dataclass_params__.frozen or value.__setattr__ is not object.__setattr__):
                found[value] = True
    return list(found)


def test_every_frozen_class_shares_the_methods():
    """No class in pipegen is a half-made frozen dataclass: eq=False without the shared __eq__ is identity."""
    checked = 0
    for cls in frozen_classes():
        for name in ("__eq__", "__hash__", "__repr__", "__setattr__", "__delattr__"):
            assert getattr(cls, name) is getattr(Shared, name), (cls, name)
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("record", [Shared("x", 2, ("t",)), Factory("a", ["b"]), One("a"), Empty()])
def test_pickle_copy_and_replace_give_an_equal_frozen_record(record: object) -> None:
    """A value made by the written __init__ round-trips through pickle, copy and deepcopy, as a dataclass's does
    (state restored without __setattr__), and stays frozen; replace() goes through __init__ again."""
    import copy
    import pickle

    for again in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record),
                  dataclasses.replace(record)):
        assert again == record and type(again) is type(record) and repr(again) == repr(record)
        if not isinstance(record, Factory):  # a list field: unhashable, as a dataclass's would be
            assert hash(again) == hash(record)
        with pytest.raises(dataclasses.FrozenInstanceError):
            again.name = "changed"  # type: ignore[attr-defined]
    assert copy.deepcopy(Factory("a", ["b"])).items is not Factory("a", ["b"]).items


def test_replace_keeps_a_factory_value_or_makes_a_fresh_one() -> None:
    record = Factory("a", ["b"])
    assert dataclasses.replace(record, name="c") == Factory("c", ["b"])
    assert dataclasses.replace(record, name="c").items is record.items  # as dataclasses passes each field on
    assert dataclasses.replace(record, items=[]).items == [] and Factory("a").items is not Factory("a").items
