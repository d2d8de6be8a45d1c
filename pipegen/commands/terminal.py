"""How much a command says and in what colour: -q/-v and --color (the I/O edge; every command's).

Colour is for people: stderr's `error` and `WARNING`, and the lines that need an eye in a text report
(check's errors, audit's losses, run's failed steps). It never reaches YAML, JSON or Markdown, which
tools read. `--color auto` colours a stream that is a terminal (not TERM=dumb), unless $NO_COLOR is set
and not empty (no-color.org); $FORCE_COLOR set and not 0 colours one that is not a terminal (NO_COLOR
wins over it); `always` and `never` override both, as a command line does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

import click

from pipegen.commands.options import TerminalOptions


def resolve(quiet: int, verbose: int, color: str, environ: Mapping[str, str]) -> TerminalOptions:
    """The options as they apply here: whether stdout and stderr get colour."""
    return TerminalOptions(verbosity=verbose - quiet, color_out=_colored(color, sys.stdout, environ),
                           color_err=_colored(color, sys.stderr, environ))


def _colored(color: str, stream: TextIO | None, environ: Mapping[str, str]) -> bool:
    if color != "auto":
        return color == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and environ.get("TERM") != "dumb"


def error(opts: TerminalOptions, text: str) -> None:
    """`pipegen: error: TEXT` on stderr, whatever -q says."""
    _say(click.style("error", fg="red", bold=True) if opts.color_err else "error", text)


def warn(opts: TerminalOptions, text: str) -> None:
    """`pipegen: WARNING: TEXT` on stderr, whatever -q says: a warning is never quiet."""
    _say(click.style("WARNING", fg="yellow", bold=True) if opts.color_err else "WARNING", text)


def detail(opts: TerminalOptions, text: str) -> None:
    """`pipegen: TEXT` on stderr with -v: what was read and decided on the way."""
    if opts.verbosity > 0:
        sys.stderr.write(f"pipegen: {text}\n")


def _say(label: str, text: str) -> None:
    sys.stderr.write(f"pipegen: {label}: {text}\n")


def painted(opts: TerminalOptions, text: str, rules: Sequence[tuple[str, str]]) -> str:
    """A text report for stdout with each line that matches a rule's regular expression in its colour
    (the first rule that matches); `text` as it is without colour on stdout."""
    if not opts.color_out:
        return text
    compiled = [(re.compile(pattern), color) for pattern, color in rules]
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        color = next((c for pattern, c in compiled if pattern.search(body)), None)
        out.append(click.style(body, fg=color) + line[len(body):] if color and body else line)
    return "".join(out)
