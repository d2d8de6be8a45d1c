"""derived-drift: a hand-written dependency list that no longer holds what the step's `derive:` (use: check)
computes from the code. Pure: the links come from graph/expand.py.

A list frozen from the code's graph goes stale silently (Materialize's port: removing `src/adapter` from
`testdrive` left check at 0 findings, and a real change to `src/adapter/src/coord.rs` then blocked it).
One finding per folder of derived entries the list misses (error: a change there would not run the step),
and one per hand-written entry that covers none of them (a warning: it may be meant, it may be left over).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from pipegen.check.entries import declared
from pipegen.check.findings import Finding
from pipegen.graph.derived import ROOT, Link, chain
from pipegen.model import Step
from pipegen.selection.matching import entry_matches, first_match, split


def drift_findings(step: Step, links: Sequence[Link]) -> list[Finding]:
    entries = [d for d in step.dependencies if d != step.location.file]
    derived = [link[0] for link in links]
    by_entry = {link[0]: link for link in links}
    missing = [path for path in derived if not first_match(entries, (path,), step.dependency_kind)]
    folders: dict[str, list[str]] = {}
    for path in missing:
        folders.setdefault(posixpath.dirname(path) if path.endswith((".py", ".toml", ".lock")) else path, []).append(
            path)
    name = declared(step)
    out = [Finding("derived-drift", "error", step.location,
                   f"a change to {_shown(paths[0])}{_more(paths, folder)} would not run step '{name}', which its "
                   f"derive: reaches: {chain(paths[0], by_entry)}",
                   _fix(folder, paths),
                   name, tuple(paths))
           for folder, paths in folders.items()]
    includes, _ = split(entries)
    roots = {by for _, by, how in links if how == ROOT}
    for entry in includes:
        if not any(_overlap(entry, path, step) for path in derived) and entry.rstrip("/") not in roots:
            out.append(Finding("derived-drift", "warning", step.location,
                               f"entry '{entry}' of step '{name}' covers nothing its derive: reaches",
                               "remove it if it is left over, or keep it if the step needs it for another reason",
                               name))
    return out


def _overlap(entry: str, path: str, step: Step) -> bool:
    """The entry matches the derived path, or lies inside a derived folder (a crate)."""
    return entry_matches(entry, path, step.dependency_kind) or entry.startswith(path.rstrip("/") + "/")


def _shown(path: str) -> str:
    """A derived crate is a folder: shown as one."""
    return path if "." in posixpath.basename(path) else path + "/"


def _fix(folder: str, paths: Sequence[str]) -> str:
    """Add the folder; files of the top folder (Cargo.toml, Cargo.lock) by name."""
    names = [folder + "/"] if folder else paths
    return "add " + ", ".join(f"'{name}'" for name in names) + " to its source_file_dependencies"


def _more(paths: Sequence[str], folder: str) -> str:
    return f" (and {len(paths) - 1} more in {folder + '/' if folder else 'the top folder'})" if len(paths) > 1 else ""
