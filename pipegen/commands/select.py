"""`pipegen select`: decide every step for the change and print the decisions (the I/O edge)."""

from __future__ import annotations

from typing import Mapping

from pipegen.selection.chain import SelectArgs, select, warn_if_untrusted
from pipegen.selection.report import render_selection


def main(args: SelectArgs, fmt: str, environ: Mapping[str, str]) -> str:
    """The decisions in `fmt`; an untrusted diff is also a WARNING on stderr."""
    _decl, selection = select(args, environ)
    warn_if_untrusted(selection)
    return render_selection(selection, fmt)
