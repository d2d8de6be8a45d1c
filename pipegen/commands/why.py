"""`pipegen why`: what a change of each path does, or why a step got its decision (the I/O edge)."""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any, TextIO

from pipegen.commands.options import SelectionOptions, WhyOptions
from pipegen.commands.selecting import load_declarations, options_from, repository_paths, select, warn_if_untrusted
from pipegen.commands.terminal import warn
from pipegen.model import ChangeSet, Declarations
from pipegen.selection.decide import decide, step_index, steps_by_key
from pipegen.selection.decision_formats import render_why, why_path
from pipegen.selection.inputs import own_inputs
from pipegen.selection.matching import entry_matches, first_match, split
from pipegen.shown import shown


def main(args: WhyOptions, out: TextIO) -> int:
    # Paths alone need no diff; a step's decision does (and loads the declarations once).
    if args.step_keys:
        decl, selection = select(args)
        warn_if_untrusted(selection, args.terminal)
    else:
        decl, selection = load_declarations(args), None
    rows = path_rows(args, decl, args.paths)
    out.write(render_why(rows, steps_by_key(decl, args.step_keys), selection, args.fmt))
    return 0


def path_rows(args: SelectionOptions, decl: Declarations, paths: Sequence[str]) -> list[dict[str, Any]]:
    """What a change of each path alone does, as `decide` decides it (same options, same inputs). Paths that
    every entry, exclusion, rule and pattern of the declarations reads alike get the same decisions, so
    `decide` runs once for each such group and the others are told by name: many paths cost about what
    one select of them costs (9,022 paths took 1 min 48 s with a decide for each)."""
    files = repository_paths(_from_here(paths, args.root), args.root, "why")
    for path in files:
        full = os.path.join(args.root, path)
        if os.path.isdir(full) and not os.path.islink(full):  # git tracks a link as a file of its own
            # A folder as one changed path matches the entries naming it or above it, none inside it.
            warn(args.terminal, f"{path} is a folder: decided as one changed path, which no entry inside it "
                 f"matches (every file in it: git ls-files {path} | pipegen select --files-from -)")
    options = options_from(args, decl)
    # Each verdict keeps the warnings of its path's change (a config that shapes no step), not the declarations'.
    known = {str(w) for w in decl.warnings}
    told: dict[Hashable, tuple[str, dict[str, Any]]] = {}
    rows = []
    for path, key in zip(files, _alike(decl, files), strict=True):
        if key not in told:
            verdict = decide(decl, ChangeSet((path,)), options)
            told[key] = path, why_path(replace(verdict, warnings=tuple(w for w in verdict.warnings if w not in known)))
        first, row = told[key]
        rows.append(row if first == path else _renamed(row, first, path))
    return rows


def _alike(decl: Declarations, files: Sequence[str]) -> list[Hashable]:
    """For each path, what `decide` reads of it: the dependency entries it matches, the exclusions, rules,
    run-all and docs-only patterns; pipegen's own inputs and the declaration files are each their own."""
    settings = decl.settings
    excludes = sorted({(x, s.dependency_kind) for s in decl.steps for x in split(s.dependencies)[1]})
    own = [i.entry for i in own_inputs(decl)] + [p for pair in decl.aliases for p in pair] + list(decl.files)
    run_all = [*settings.run_all, *("!" + x for x in settings.run_all_exclude)]
    ignored, kind = (settings.docs_only, settings.uncovered_ignore), settings.entry_kind  # docs-only, uncovered
    keys: list[Hashable] = []
    for path, slots in zip(files, step_index(decl.steps).slots(files), strict=True):
        if any(path == e or path.startswith(e + "/") for e in own):
            keys.append(path)
            continue
        keys.append((slots, tuple(entry_matches(x, path, kind) for x, kind in excludes),
                     tuple(_entry(first_match(rule.changed, (path,), kind)) for rule in settings.rules),
                     _entry(first_match(run_all, (path,), settings.run_all_kind)) if run_all else None,
                     *(bool(e) and first_match(e, (path,), kind) is not None for e in ignored)))
    return keys


def _entry(hit: tuple[str, str] | None) -> str | None:
    return hit[1] if hit else None


def _renamed(row: dict[str, Any], first: str, path: str) -> dict[str, Any]:
    """`first`'s row told of `path`: the texts that name the changed file (`X matches 'entry'`, `rule 'r': X
    changed`, `X matches run-all pattern`) name `path`; the other reasons name no changed file. The texts name
    a path as shown() prints it (escaped, cut), so that text is what is swapped."""
    old, new = shown(first), shown(path)

    def swap(text: str) -> str:
        if text.startswith(old + " "):
            return new + text[len(old):]
        # a rule's reason; the uncovered warning and run-all reason (selection/uncovered.py) after the ignore lists
        for before, after in ((": ", " changed"), ("excludes: ", ": "), ("excludes: ", " (uncovered")):
            text = text.replace(f"{before}{old}{after}", f"{before}{new}{after}")
        return text

    return {**row, "path": path, "reason": swap(row["reason"]),
            "selects": [{**hit, "text": swap(hit["text"])} for hit in row["selects"]],
            "warnings": [swap(w) for w in row["warnings"]]}


def _from_here(paths: Sequence[str], root: str) -> list[str]:
    """From a subfolder of the repository a path is relative to that folder, as the shell completes it and
    git reads it (`cd internal && pipegen why ../go.mod config/x.go`); from the root or outside, to the root."""
    here, top = os.path.realpath(os.getcwd()), os.path.realpath(root)
    if not here.startswith(top + os.sep):
        return list(paths)
    return [p if os.path.isabs(p) else os.path.join(here, p) for p in paths]
