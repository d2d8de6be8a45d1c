"""The torchrun examples' entry point, torch-free: the layout is checked before torch is imported.

Kept apart from config.py (which the torch modules import for the layout types) so that
no module imports another that imports it back.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys

from qr_tests.torchrun.config import ConfigError, ModelConfig, layout_from_env


def main(model: ModelConfig) -> int:
    """Entry point of both examples: one line and exit status 2 for a bad layout, 1 when the
    ranks disagree, 0 when every check passed."""
    faulthandler.register(signal.SIGUSR1)  # a timed-out test asks each rank where it hangs
    try:
        layout = layout_from_env(os.environ, model)
    except ConfigError as err:
        if os.environ.get("RANK", "0") == "0":  # one line, not one per rank
            print(f"error: {err}", file=sys.stderr)
        return 2
    from qr_tests.torchrun.dist import Mismatch, run  # imports torch: only for a valid layout

    try:
        run(model, layout)
    except Mismatch as err:
        sys.stderr.write(f"[rank {layout.rank}] FAIL {model.name}: {err}\n")  # one write per line
        sys.stderr.flush()
        return 1
    return 0
