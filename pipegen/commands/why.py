"""`pipegen why`: which steps paths select, or why a step got its decision (the I/O edge)."""

from __future__ import annotations

from typing import Mapping, Sequence

from pipegen.selection.chain import SelectArgs, load_declarations, select, warn_if_untrusted
from pipegen.selection.decide import steps_by_key
from pipegen.selection.report import render_why


def main(args: SelectArgs, paths: Sequence[str], step_keys: Sequence[str], fmt: str,
         environ: Mapping[str, str]) -> str:
    # Paths alone need no diff; a step's decision does (and loads the declarations once).
    if step_keys:
        decl, selection = select(args, environ)
        warn_if_untrusted(selection)
    else:
        decl, selection = load_declarations(args, environ), None
    return render_why(decl, paths, steps_by_key(decl, step_keys), selection, fmt)
