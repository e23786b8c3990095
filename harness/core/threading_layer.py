"""numba's threading layer, set when ``harness`` is imported, before numba starts a thread.

The runner forks its cell workers, and GNU OpenMP (numba's usual threading layer) aborts a
forked child once its parent has used it ("Terminating: fork() called from a process already
using GNU OpenMP"). numba starts its threads at the first parallel kernel, but also at the
first ``numba.get_num_threads()`` or ``set_num_threads`` (the run's environment record, the
CLI's ``--threads``), with the layer configured at that moment: so the fork-safe work queue
is chosen here, at ``import harness``, unless the user chose a layer. numba stays unloaded
(start-up): where it is not imported yet, its ``NUMBA_THREADING_LAYER`` variable is set,
which numba reads when it is (and child processes inherit).
"""

import os
import sys

FORK_SAFE_LAYER = "workqueue"

if "NUMBA_THREADING_LAYER" not in os.environ:
    if "numba" in sys.modules:
        sys.modules["numba"].config.THREADING_LAYER = FORK_SAFE_LAYER
    else:
        os.environ["NUMBA_THREADING_LAYER"] = FORK_SAFE_LAYER
