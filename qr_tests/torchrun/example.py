"""Dense tiny transformer under torchrun; every rank must agree with the others and with a
one-process run of the same seeded model.

    torchrun --standalone --nproc-per-node=4 qr_tests/torchrun/example.py           # tp=2, dp=2
    PP_SIZE=2 torchrun --standalone --nproc-per-node=4 qr_tests/torchrun/example.py # tp=2, pp=2

TP_SIZE defaults to 2, PP_SIZE to 1, DP_SIZE to WORLD_SIZE / (TP_SIZE * PP_SIZE);
QR_QUANT=FP|INT8|INT6|INT4 also runs the TP all-reduce through the reference quick-reduce.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # torchrun runs this file as a script

from qr_tests.torchrun.config import DENSE  # noqa: E402
from qr_tests.torchrun.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(DENSE))
