"""`@frozen`: pipegen's frozen dataclasses, made in one step, with one shared `__eq__`, `__hash__` and `__repr__`.

Python compiles every method `@dataclass` generates (an `exec` of its source) when the module
defining the class is imported: about 1 ms per frozen class, six methods each. `pipegen render`
imports 33 such classes, and their creation was an eighth of its time. `@frozen` has `@dataclass`
generate only `__init__` and the frozen `__setattr__`/`__delattr__`, and gives the class these three,
shared: they compare, hash and show the fields in declaration order, as the generated ones do
(another class compares as NotImplemented, so equal fields of two classes are not equal). One
decorator does both, so a class cannot get the one without the other (identity equality, silently).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # mypy's own stubs know typing_extensions; at run time it is not needed
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Any:
        return lambda decorator: decorator


Record = TypeVar("Record")


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[Record]) -> type[Record]:
    made = dataclasses.dataclass(frozen=True, repr=False, eq=False)(cls)
    made.__eq__ = _eq  # type: ignore[assignment,method-assign]
    made.__hash__ = _hash  # type: ignore[method-assign]
    made.__repr__ = _repr  # type: ignore[method-assign]
    return made


def _eq(self: object, other: object) -> object:  # bool, or NotImplemented
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(type(self)))
    return f"{type(self).__qualname__}({shown})"


_NAMES: dict[type, tuple[str, ...]] = {}  # a class's field names, in order


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _values(record: Any) -> tuple[Any, ...]:
    return tuple(getattr(record, name) for name in _names(type(record)))
