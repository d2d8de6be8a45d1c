"""`pipegen` and `python -m pipegen`: the command line, started with the cyclic garbage collector off.

A command lives for a fraction of a second and keeps its objects until it exits, so collecting
cycles only costs time: about 4% of `pipegen render` on vLLM, most of it while modules import,
which is why this happens here, before `pipegen.cli` imports click. `import pipegen` (a library
user, the tests) leaves the collector alone.
"""

import gc

gc.disable()

from pipegen.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
