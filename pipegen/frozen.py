"""`@frozen`: pipegen's frozen dataclasses, made without compiling code when their module is imported.

`@dataclass` compiles every method it generates (an `exec` of its source) as the class is made: three
for a frozen class without repr and eq, 0.5 ms a class, 29 ms of `pipegen check`'s 85 ms of imports (50
classes, most never made into a value by that command). `@frozen` has `@dataclass` record the fields
only, and gives the class shared `__eq__`, `__hash__`, `__repr__` (they compare, hash and show the
fields in declaration order, as the generated ones do; another class compares as NotImplemented, so
equal fields of two classes are not equal) and a shared `__setattr__`/`__delattr__` that refuse as the
frozen ones do. Its `__init__`, the one that dataclasses would write (positional or keyword fields,
defaults, default factories), is compiled when the class makes its first value. One decorator does it
all, so a class cannot get one part without the others (identity equality, silently).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import MISSING
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # mypy's own stubs know typing_extensions; at run time it is not needed
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Any:
        return lambda decorator: decorator


Record = TypeVar("Record")


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[Record]) -> type[Record]:
    if "__doc__" not in cls.__dict__ or not cls.__doc__:  # dataclass would word one from inspect.signature
        cls.__doc__ = cls.__name__
    made = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)  # fields only: nothing compiled
    _check_fields(made)
    made.__init__ = _first_init(made)  # type: ignore[method-assign]
    made.__setattr__ = _setattr  # type: ignore[method-assign]
    made.__delattr__ = _delattr  # type: ignore[method-assign]
    made.__eq__ = _eq  # type: ignore[assignment,method-assign]
    made.__hash__ = _hash  # type: ignore[method-assign]
    made.__repr__ = _repr  # type: ignore[method-assign]
    return made


def _check_fields(cls: type) -> None:
    """What dataclass checks as it writes __init__, said when the class is made (its __init__ is written
    later); the parts of dataclass's __init__ that pipegen does not use are refused."""
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"@frozen {cls.__name__}: __post_init__ is not supported")
    defaulted = None
    for f in dataclasses.fields(cls):
        if f.kw_only is True or not f.init:
            raise TypeError(f"@frozen {cls.__name__}.{f.name}: kw_only and init=False are not supported")
        if not f.compare or not f.repr or f.hash is not None:  # the shared methods use every field
            raise TypeError(f"@frozen {cls.__name__}.{f.name}: compare, repr and hash are not supported")
        if f.default is not MISSING or f.default_factory is not MISSING:
            defaulted = f.name
        elif defaulted:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _first_init(cls: type) -> Any:
    """An __init__ that writes the class's own on its first call, puts it in its place and runs it."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made = _init_of(cls)
        cls.__init__ = made  # type: ignore[misc]
        made(self, *args, **kwargs)

    return __init__


def _init_of(cls: type) -> Any:
    """The __init__ dataclass writes for a frozen class: each field a parameter, in order, assigned
    through object.__setattr__; a default factory called when its parameter is not given."""
    scope: dict[str, Any] = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    params, body = ["__self"], []
    for f in dataclasses.fields(cls):
        value = f.name
        if f.default is not MISSING:
            scope[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            scope[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            value = f"_f_{f.name}() if {f.name} is _FACTORY else {f.name}"
        else:
            params.append(f.name)
        body.append(f"_set(__self, {f.name!r}, {value})")
    exec(f"def __init__({', '.join(params)}):\n    " + "\n    ".join(body or ["pass"]), scope)  # noqa: S102
    made = scope["__init__"]
    made.__qualname__ = f"{cls.__qualname__}.__init__"
    return made


_FACTORY: Any = object()  # a parameter left to its default factory


def _setattr(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _eq(self: object, other: object) -> object:  # bool, or NotImplemented
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    getter = _GETTERS.get(type(self))
    return hash(getter(self) if getter else _values(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(type(self)))
    return f"{type(self).__qualname__}({shown})"


_NAMES: dict[type, tuple[str, ...]] = {}  # a class's field names, in order
_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}  # a class's field values, in order


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _values(record: Any) -> tuple[Any, ...]:
    """The fields' values, in order (hashing a set or a dict of thousands of findings calls it for each)."""
    getter = _GETTERS.get(type(record))
    if getter is None:
        getter = _GETTERS[type(record)] = _getter(_names(type(record)))
    return getter(record)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of `names` as a tuple, read in C (attrgetter of one name gives the value alone)."""
    if len(names) > 1:
        return attrgetter(*names)
    one = attrgetter(*names) if names else None
    return (lambda record: (one(record),)) if one else lambda _record: ()
