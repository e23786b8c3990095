"""``python -m harness``: see :mod:`harness.cli`."""

import gc
import sys

from harness.cli import main

# A command lives for one run: collect garbage less often than Python's (700, 10, 10) does.
# Building the default compare's reports collected 896 times in 1.32 s of 11.4 s, and 54
# times in 0.45 s at these thresholds; the explain and report processes fork from this one
# and keep them.
gc.set_threshold(10_000, 20, 20)
code = main()
# The interpreter's teardown collects the garbage of every object still alive, numba's
# dispatchers and their compiled kernels included: 0.87 s after a default compare. Frozen
# objects are left out of that collection (and freed by the system at exit): 0.09 s.
gc.freeze()
sys.exit(code)
