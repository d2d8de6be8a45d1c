"""`pipegen select`: decide every step for the change and print the decisions (the I/O edge)."""

from __future__ import annotations

from typing import TextIO

from pipegen.commands.options import SelectOptions
from pipegen.commands.selecting import select, warn_if_untrusted
from pipegen.selection.decision_formats import render_selection


def main(args: SelectOptions, out: TextIO) -> int:
    """The decisions in `fmt`; an untrusted diff is also a WARNING on stderr."""
    _decl, selection = select(args)
    warn_if_untrusted(selection, args.terminal)
    out.write(render_selection(selection, args.fmt))
    return 0
