"""`pipegen select`: decide every step for the change and print the decisions (the I/O edge)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TextIO

from pipegen.frozen import frozen
from pipegen.selection.chain import SelectArgs, select, warn_if_untrusted
from pipegen.selection.decision_formats import render_selection


@frozen
class SelectOptions(SelectArgs):
    """`pipegen select`'s options."""

    fmt: str = "text"
    environ: Mapping[str, str] = field(default_factory=dict)


def main(args: SelectOptions, out: TextIO) -> int:
    """The decisions in `fmt`; an untrusted diff is also a WARNING on stderr."""
    _decl, selection = select(args, args.environ)
    warn_if_untrusted(selection)
    out.write(render_selection(selection, args.fmt))
    return 0
