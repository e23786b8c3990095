"""``python -m harness``: see :mod:`harness.cli`."""

import gc
import sys

from harness.cli import main

code = main()
# The interpreter's teardown collects the garbage of every object still alive, numba's
# dispatchers and their compiled kernels included: 0.87 s after a default compare. Frozen
# objects are left out of that collection (and freed by the system at exit): 0.09 s.
gc.freeze()
sys.exit(code)
