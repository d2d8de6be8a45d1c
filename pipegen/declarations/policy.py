"""The config's dependency policy (pipegen's own format): what a changed file that no entry matches does,
and the named dependency sets steps reference (`dependency_sets:`), resolved here after the steps load.

Kept apart from the layouts' loaders: every layout's settings take the same fields, the vLLM preset its
own values (presets.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipegen.declarations.field import Field
from pipegen.declarations.fields import Checker, choice, entry_list, require_mapping
from pipegen.declarations.yaml_values import LocDict
from pipegen.errors import DeclarationError, raise_all, suggest
from pipegen.model import Location, Settings, Step


def dependency_sets(value: Any, where: Location) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`dependency_sets: {core: [src/core/, Cargo.lock], ...}`: each set's entries, checked where written."""
    data: LocDict = require_mapping(value, where, "'dependency_sets'")
    return tuple((str(name), entry_list(entries, data.loc(name))) for name, entries in data.items())

POLICY_FIELDS: dict[str, Checker] = {
    "uncovered": Field(choice("warn", "run_all", "fail"), "A changed file no entry matches: name it, run every "
                       "step, or fail.", default="warn", example="run_all"),
    "uncovered_ignore": Field(entry_list, "Changes that need no step (never called uncovered).",
                              example=["LICENSE", "*.txt"]),
    "dependency_sets": Field(dependency_sets, "Named entry lists that steps add with `dependency_sets: [NAME]`.",
                             example={"core": ["src/core/", "Cargo.lock"]}),
    "globs": Field(choice("gitignore", "pathspec"), "How every glob reads: gitignore (`*` within a folder) or "
                   "pathspec (git's: `*` crosses /). Unset: gitignore, and check warns where git reads wider.",
                   example="gitignore"),
}


def policy_settings(fields: dict[str, Any]) -> dict[str, Any]:
    """Settings' keyword arguments from the checked config fields."""
    out = {name: fields[name] for name in POLICY_FIELDS if name in fields}
    if fields.get("globs") == "pathspec":  # git's reading: `src/*.rs` matches src/a/b.rs too
        out.update(entry_kind="pathspec", run_all_kind="pathspec")
    return out


def with_sets(steps: list[Step], settings: Settings) -> list[Step]:
    """Each step's named sets added to its entries (after its own), read in the config's glob dialect; a name
    no set has is an error at the step, every such step's at once."""
    sets = dict(settings.dependency_sets)
    out, errors = [], []
    for step in steps:
        unknown = [name for name in step.dependency_sets if name not in sets]
        if unknown:
            errors.append(DeclarationError(f"step '{step.key}' names dependency set '{unknown[0]}', which the config "
                                           "does not define", step.location, suggest(unknown[0], sets, "sets")))
            continue
        added = [entry for name in step.dependency_sets for entry in sets[name] if entry not in step.dependencies]
        if settings.entry_kind == "pathspec":
            step = replace(step, dependency_kind="pathspec")
        out.append(replace(step, dependencies=(*step.dependencies, *dict.fromkeys(added))) if added else step)
    raise_all(errors)
    return out
