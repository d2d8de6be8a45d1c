"""`Frozen`: the base of pipegen's frozen dataclasses, with one shared `__eq__`, `__hash__` and `__repr__`.

Python compiles every method `@dataclass` generates (an `exec` of its source) when the module
defining the class is imported: about 1 ms per frozen class, six methods each. `pipegen render`
imports 33 such classes, and their creation was an eighth of its time. Declared as
`@dataclass(frozen=True, repr=False, eq=False)` on a `Frozen`, a class gets `__init__` and the
frozen `__setattr__`/`__delattr__` generated, and these three shared: they compare, hash and show
the fields in declaration order, as the generated ones do (another class compares as
NotImplemented, so equal fields of two classes are not equal).
"""

from __future__ import annotations

import dataclasses
from typing import Any


class Frozen:
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _values(self) == _values(other)

    def __hash__(self) -> int:
        return hash(_values(self))

    def __repr__(self) -> str:
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
