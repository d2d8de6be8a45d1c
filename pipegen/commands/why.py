"""`pipegen why`: what a change of each path does, or why a step got its decision (the I/O edge)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import TextIO

from pipegen.frozen import frozen
from pipegen.model import ChangeSet, Declarations, Selection
from pipegen.selection.chain import (
    SelectArgs,
    load_declarations,
    options_from,
    repository_paths,
    select,
    warn_if_untrusted,
)
from pipegen.selection.decide import decide, steps_by_key
from pipegen.selection.report import render_why


@frozen
class WhyOptions(SelectArgs):
    """`pipegen why`'s options: the paths and steps to explain."""

    paths: tuple[str, ...] = ()
    step_keys: tuple[str, ...] = ()
    fmt: str = "text"
    environ: Mapping[str, str] = field(default_factory=dict)


def main(args: WhyOptions, out: TextIO) -> int:
    # Paths alone need no diff; a step's decision does (and loads the declarations once).
    if args.step_keys:
        decl, selection = select(args, args.environ)
        warn_if_untrusted(selection)
    else:
        decl, selection = load_declarations(args, args.environ), None
    verdicts = path_verdicts(args, decl, args.paths, args.environ)
    out.write(render_why(verdicts, steps_by_key(decl, args.step_keys), selection, args.fmt))
    return 0


def path_verdicts(args: SelectArgs, decl: Declarations, paths: Sequence[str],
                  environ: Mapping[str, str]) -> list[Selection]:
    """Each path as a change of its own, decided by `decide` as `select` decides (same options, same inputs)."""
    files = repository_paths(_from_here(paths, args.root), args.root, "why")
    for path in files:
        if os.path.isdir(os.path.join(args.root, path)):
            # A folder as one changed path matches the entries naming it or above it, none inside it.
            sys.stderr.write(f"pipegen: WARNING: {path} is a folder: decided as one changed path, which no entry "
                             f"inside it matches (every file in it: git ls-files {path} | pipegen select "
                             "--files-from -)\n")
    options = options_from(args, decl, environ)
    # Each verdict keeps the warnings of its path's change (a config that shapes no step), not the declarations'.
    known = {str(w) for w in decl.warnings}
    verdicts = (decide(decl, ChangeSet((path,)), options) for path in files)
    return [replace(v, warnings=tuple(w for w in v.warnings if w not in known)) for v in verdicts]


def _from_here(paths: Sequence[str], root: str) -> list[str]:
    """From a subfolder of the repository a path is relative to that folder, as the shell completes it and
    git reads it (`cd internal && pipegen why ../go.mod config/x.go`); from the root or outside, to the root."""
    here, top = os.path.realpath(os.getcwd()), os.path.realpath(root)
    if not here.startswith(top + os.sep):
        return list(paths)
    return [p if os.path.isabs(p) else os.path.join(here, p) for p in paths]
