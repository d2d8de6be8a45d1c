"""Field schemas for steps files, with one clear error per problem.

A field spec is a checker that takes (value, where) and returns the
normalised value or raises DeclarationError naming the file, line and fix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pipegen.buildkite.upload_escape import upload_variable
from pipegen.declarations.patterns import glob_problem, normal_entry, regex_problem
from pipegen.declarations.yamlio import LocDict, LocList
from pipegen.errors import DeclarationError, suggest
from pipegen.model import DeclarationWarning, Location, Step

Checker = Callable[[Any, Location], Any]


def _fail(where: Location, message: str, fix: str = "") -> DeclarationError:
    return DeclarationError(message, where, fix)


def string(value: Any, where: Location) -> str:
    if isinstance(value, str):
        if "\0" in value:  # no command line, variable or name can hold one: refused here, not when a step runs
            raise _fail(where, f"a NUL character in {value!r}", "remove the \\0")
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _fail(where, f"expected a string, got {_kind(value)}", "write the value as a string")


def optional_string(value: Any, where: Location) -> str | None:
    return None if value is None else string(value, where)


def boolean(value: Any, where: Location) -> bool:
    if isinstance(value, bool):
        return value
    raise _fail(where, f"expected true or false, got {_kind(value)} {value!r}", "write true or false")


def positive_int(value: Any, where: Location) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise _fail(where, f"expected a whole number >= 1, got {value!r}", "write a positive integer")


def minutes(value: Any, where: Location) -> int | str:
    """A positive whole number, or one upload-time variable for Buildkite to fill in (`${TIMEOUT?}`,
    `${TIMEOUT:-30}`: a default must itself be a positive whole number)."""
    if isinstance(value, str):
        match = upload_variable(value.strip())
        plain = not any(c.isspace() or c in "#'\"" for c in value.strip())  # written unquoted, as an int after upload
        arg = (match["arg"] or "") if match else ""
        if match and plain and (match["op"] not in (":-", "-") or arg.isdigit() and int(arg) >= 1):
            return value.strip()
        raise _fail(where, f"expected a whole number >= 1 or one upload-time variable, got {value!r}",
                    "write e.g. 30, '${TIMEOUT?}' or '${TIMEOUT:-30}' (a default must be a whole number >= 1)")
    return positive_int(value, where)


def string_list(value: Any, where: Location) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        out = []
        for index, item in enumerate(value):
            if type(item) is str and "\0" not in item:  # what string() returns as it is: no location made
                out.append(item)
                continue
            item_where = value.loc(index) if isinstance(value, LocList) else where
            if item is None:
                raise _fail(item_where, "empty list item", "remove the empty '-' line")
            out.append(string(item, item_where))
        return tuple(out)
    raise _fail(where, f"expected a list of strings, got {_kind(value)}", "write a YAML list ('- item' lines)")


def _patterns(problem: Callable[[str], str | None], fix: str) -> Checker:
    def check(value: Any, where: Location) -> tuple[str, ...]:
        items = string_list(value, where)
        for index, item in enumerate(items):
            found = problem(item)
            if found:
                raise _fail(value.loc(index) if isinstance(value, LocList) else where, found, fix)
        return items

    return check


# Dependency entries: paths (always valid), or gitignore-style globs that must compile.
_entry_list = _patterns(glob_problem,
                        "close the '[' (a literal '[' is '[[]'), write a range low to high ([a-z]), a leading '#' "
                        "as '\\#', or write the path without glob characters")
# vLLM's run-all patterns: Python regexes (re.match).
regex_list = _patterns(regex_problem, "fix the regular expression (a literal '(' is '\\(')")


def entry_list(value: Any, where: Location) -> tuple[str, ...]:
    """Dependency entries, checked, as repository-relative paths (`./src/` is `src/`); a list inside the list
    (`[*core, src/x/]`, an alias of an anchored list) counts as its items."""
    return tuple(normal_entry(entry) for entry in _entry_list(flatten(value), where))


def flatten(value: Any) -> Any:
    """A list with lists among its items as one list; each item they bring is located where the inner list
    is used (an alias: at the `*name`, not at its anchor)."""
    if not isinstance(value, LocList) or not any(isinstance(item, list) for item in value):
        return value
    out = LocList()
    out.file, out.mark, out.item_marks = value.file, value.mark, []
    for index, item in enumerate(value):
        inner = flatten(item) if isinstance(item, list) else [item]
        out.extend(inner)
        out.item_marks += [value.item_marks[index]] * len(inner)
    return out


DERIVE_KINDS = ("python", "cargo")


def derive_map(value: Any, where: Location) -> tuple[tuple[str, str], ...]:
    """`derive: {python: [roots], cargo: [crate folders], use: select|check}` as (kind, root) pairs; ("use",
    "check") when the derived entries only check the hand-written list (graph/expand.py)."""
    if not isinstance(value, LocDict):
        raise _fail(where, f"expected a mapping, got {_kind(value)}",
                    "write e.g. 'derive: {python: [tests/unit/], cargo: [src/server]}'")
    out: list[tuple[str, str]] = []
    for name, item in value.items():
        item_where = value.loc(name)
        if name == "use":
            if choice("select", "check")(item, item_where) == "check":
                out.append(("use", "check"))
        elif name in DERIVE_KINDS:
            out += [(name, normal_entry(root)) for root in string_list(item, item_where)]
        else:
            raise _fail(item_where, f"unknown derive kind '{name}'", suggest(name, {**dict.fromkeys(DERIVE_KINDS),
                                                                                      "use": None}))
    if not any(kind in DERIVE_KINDS for kind, _ in out):
        raise _fail(where, "derive names no roots", "list roots under 'python:' or 'cargo:'")
    return tuple(out)


def nested_command_list(value: Any, where: Location) -> tuple[str, ...]:
    """Legacy multi-node steps list one command list per node: flatten them."""
    if isinstance(value, list):
        out: list[str] = []
        for index, item in enumerate(value):
            item_where = value.loc(index) if isinstance(value, LocList) else where
            out += nested_command_list(item, item_where) if isinstance(item, list) else [string(item, item_where)]
        return tuple(out)
    return string_list(value, where)


def env_map(value: Any, where: Location) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise _fail(where, f"expected a mapping of NAME: value, got {_kind(value)}")
    out = []
    for name, item in value.items():
        item_where = value.loc(name) if isinstance(value, LocDict) else where
        if not isinstance(name, str):
            raise _fail(item_where, f"environment variable name must be a string, got {name!r}")
        if not name or "=" in name or "\0" in name:  # the environment's NAME=value cannot hold it
            raise _fail(item_where, f"environment variable name {name!r} is empty or holds '=' or a NUL",
                        "write a name of letters, digits and '_'")
        if isinstance(item, bool):
            item = "true" if item else "false"
        if item is None:
            raise _fail(item_where, f"environment variable {name} has no value", 'write "" for an empty value')
        out.append((name, string(item, item_where)))
    return tuple(out)


tag_map = env_map  # agent tags have the same shape as env: NAME: value


def soft_fail(value: Any, where: Location) -> bool | tuple[int, ...]:
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        statuses = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("exit_status"), int):
                statuses.append(item["exit_status"])
            else:
                raise _fail(where, "soft_fail list items must be {exit_status: N}")
        return tuple(statuses)
    raise _fail(where, f"soft_fail must be true, false or a list of {{exit_status: N}}, got {value!r}")


def mapping(value: Any, where: Location) -> Any:
    if value is None or isinstance(value, dict):
        return value
    raise _fail(where, f"expected a mapping, got {_kind(value)}")


def anything(value: Any, where: Location) -> Any:
    return value


class choice:  # lower case: called as the other checkers' makers are
    """A checker of one of `options` (a class: the JSON Schema reads them)."""

    def __init__(self, *options: str) -> None:
        self.options = options

    def __call__(self, value: Any, where: Location) -> str:
        if value in self.options:
            return str(value)
        raise _fail(where, f"expected one of {', '.join(self.options)}, got {value!r}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    for kind, name in ((bool, "a boolean"), (dict, "a mapping"), (list, "a list"), (str, "a string"),
                       ((int, float), "a number")):
        if isinstance(value, kind):  # LocDict and LocList are dict and list
            return name
    return type(value).__name__


def require_mapping(value: Any, where: Location, what: str) -> LocDict:
    if isinstance(value, LocDict):
        return value
    raise _fail(where, f"{what} must be a mapping, got {_kind(value)}")


X_KEYS = ("config", "steps-file")  # the mappings whose `x-` keys are the author's own


def check_fields(
    data: LocDict,
    spec: Mapping[str, Checker],
    what: str,
    *,
    ignored: dict[str, str] | None = None,
    lenient: str = "",
    warnings: list[DeclarationWarning] | None = None,
) -> dict[str, Any]:
    """Validate `data` against `spec`.

    Unknown fields are errors, unless `lenient` names the program that reads
    the file and silently drops them (a dialect's: "vLLM's generator"): then
    they load with a warning naming it. `ignored` maps fields known to be
    dropped to the field that was meant.
    """
    out: dict[str, Any] = {}
    for name, value in data.items():
        where = data.loc(name)
        if what in X_KEYS and isinstance(name, str) and name.startswith("x-"):
            continue  # a place for YAML anchors (`x-sets: {core: &core [...]}`), as docker compose has
        checker = spec.get(name)
        if checker is None:
            meant = (ignored or {}).get(name)
            if lenient and warnings is not None:
                fix = f"use '{meant}'" if meant else suggest(name, spec)
                message = f"{what} field '{name}' is ignored by {lenient}"
                warnings.append(DeclarationWarning(where, "ignored-field", message, fix))
                continue
            fix = suggest(name, spec)
            if what in X_KEYS and isinstance(value, (list, dict)):  # perhaps a place for anchors: say where
                fix += f"; or name it 'x-{name}' if it holds YAML anchors"
            raise _fail(where, f"unknown {what} field '{name}'", fix)
        out[name] = checker(value, where)
    return out


class Written(NamedTuple):
    """A steps-file field as model.Step declares it."""

    attribute: str  # Step's
    check: Checker
    default: Any


def step_fields(read_by: str) -> dict[str, Written]:
    """YAML key -> the Step attribute it fills, for the files `read_by` names ("steps" or "legacy")."""
    return {f.metadata["key"] or f.name: Written(f.name, globals()[f.metadata["check"]], f.default)
            for f in dataclasses.fields(Step) if read_by in f.metadata.get("read_by", ())}


def as_written(fields: dict[str, Any], written: dict[str, Written]) -> dict[str, Any]:
    """Step's attributes from checked `fields`, each its declared default where absent (a required one: absent)."""
    return {w.attribute: fields.get(key, w.default) for key, w in written.items()
            if key in fields or w.default is not dataclasses.MISSING}
