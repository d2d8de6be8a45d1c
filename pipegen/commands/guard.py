"""How every command ends: its exit code; a user error as one message on stderr; Ctrl-C as 130; output that
cannot be written as exit 3 (the I/O edge cli.py wraps each command in)."""

from __future__ import annotations

import errno
import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from pipegen.commands.output import output_failed
from pipegen.errors import EXIT_INTERRUPTED, PipegenError

# Writing the output failed: a closed or broken stdout, a full or failing device.
OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.EBADF, errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def guard(func: Callable[..., int]) -> Callable[..., None]:
    """Run a command; a user error is one message on stderr and its exit code; Ctrl-C exits 130 (click
    would make it 1, "Aborted!"), after every write in flight was undone (pipegen.atomic)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            code = func(*args, **kwargs)
            sys.stdout.flush()  # a full disk says so here, not in a traceback at exit
        except PipegenError as exc:
            click.echo(f"pipegen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("pipegen: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except OSError as exc:
            if exc.errno not in OUTPUT_ERRNOS:
                raise
            output_failed(exc.strerror)
        sys.exit(code or 0)

    return wrapper
