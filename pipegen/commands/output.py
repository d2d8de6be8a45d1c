"""A command's result that cannot be delivered (a closed or broken stdout, a full disk): one line, exit 3."""

from __future__ import annotations

import contextlib
import os
import sys

from pipegen.errors import EXIT_OUTPUT


def output_failed(why: str | None) -> None:
    """The result could not be delivered: say so on stderr and exit EXIT_OUTPUT, not a findings code."""
    with contextlib.suppress(OSError):  # what is still buffered goes nowhere, so exiting cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    with contextlib.suppress(OSError, AttributeError, ValueError):
        sys.stderr.write(f"pipegen: error: cannot write the output: {why}\n")
        sys.stderr.flush()
    os._exit(EXIT_OUTPUT)  # no flush at exit: stdout's buffer would fail again
