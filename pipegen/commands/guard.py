"""How every command starts and ends (the I/O edge cli.py wraps each command in): -q, -v and --color
resolved; its exit code; a user error as one message on stderr; Ctrl-C as 130; output that cannot be
written as exit 3."""

from __future__ import annotations

import errno
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from pipegen.commands.output import output_failed
from pipegen.errors import EXIT_INTERRUPTED, PipegenError

COLORS = ("auto", "always", "never")  # --color's choices (commands/terminal.py says what each does)
# Writing the output failed: a closed or broken stdout, a full or failing device.
OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.EBADF, errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def guard(func: Callable[..., int]) -> Callable[..., None]:
    """Run a command; a user error is one message on stderr and its exit code; Ctrl-C exits 130 (click
    would make it 1, "Aborted!"), after every write in flight was undone (pipegen.atomic). The command
    gets -q, -v and --color (after its own options in --help) as `terminal`."""

    @functools.wraps(func)
    def wrapper(*args: Any, quiet: int, verbose: int, color: str, **kwargs: Any) -> None:
        from pipegen.commands.terminal import detail, error, resolve  # at call time: `--version` needs none of it

        terminal = resolve(quiet, verbose, color, os.environ)
        started = time.monotonic()
        try:
            code = func(*args, terminal=terminal, **kwargs)
            sys.stdout.flush()  # a full disk says so here, not in a traceback at exit
        except PipegenError as exc:
            error(terminal, str(exc))
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("pipegen: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except OSError as exc:
            if exc.errno not in OUTPUT_ERRNOS:
                raise
            output_failed(exc.strerror)
        detail(terminal, f"done in {time.monotonic() - started:.2f} s, exit status {code or 0}")
        sys.exit(code or 0)

    for option in reversed(TERMINAL_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


TERMINAL_OPTIONS = (
    click.option("-q", "--quiet", count=True, help="Say less: no progress lines or bar (errors and warnings "
                 "still show)."),
    click.option("-v", "--verbose", count=True, help="Say more on stderr: the declarations read, the change "
                 "found, the time taken."),
    click.option("--color", type=click.Choice(COLORS), default="auto", show_default=True, help="Colour errors, "
                 "warnings, losses and failed steps: auto = on a terminal unless $NO_COLOR is set (or where "
                 "$FORCE_COLOR is). Never in YAML, JSON or Markdown."),
)
