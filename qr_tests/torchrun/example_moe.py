"""Mixture-of-experts tiny transformer under torchrun; every rank must agree with the others
and with a one-process run of the same seeded model.

    TP_SIZE=4 torchrun --standalone --nproc-per-node=4 qr_tests/torchrun/example_moe.py
    DP_SIZE=4 ENABLE_EP=1 torchrun --standalone --nproc-per-node=4 qr_tests/torchrun/example_moe.py

TP_SIZE and PP_SIZE default to 1, DP_SIZE to WORLD_SIZE / (TP_SIZE * PP_SIZE); ENABLE_EP=1
splits whole experts over the TP x DP ranks of a stage instead of splitting each expert's
width over the TP ranks. QR_QUANT=FP|INT8|INT6|INT4 also runs the TP all-reduce through the
reference quick-reduce.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # torchrun runs this file as a script

from qr_tests.torchrun.config import MOE  # noqa: E402
from qr_tests.torchrun.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(MOE))
