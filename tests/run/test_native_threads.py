"""Models that use OpenMP run in forked cells: the runner keeps one native thread, so no
OpenMP team exists in the parent when it forks (GNU OpenMP hangs in such a child)."""

from __future__ import annotations

import os
import subprocess
import sys

import harness


def test_hist_gradient_boosting_cells_finish_in_forked_processes(tmp_path):
    before = os.environ.get("OMP_NUM_THREADS")
    summary = harness.compare(
        datasets=["diabetes"], models=["hist_gradient_boosting[n_estimators=20]"],
        methods=["mdi", "saabas", "mda_test"], out=tmp_path / "run", executor="process",
        jobs=1, timeout=60, reports=False)
    # before one_native_thread, the first cell's predict hung until the timeout
    assert (summary.done, summary.timeout, summary.error) == (3, 0, 0), summary.line()
    assert os.environ.get("OMP_NUM_THREADS") == before  # restored for the caller


def test_numba_threads_started_before_any_kernel_are_fork_safe():
    """``numba.get_num_threads()`` starts numba's threads with the layer configured then; the
    run's environment record calls it before any kernel is imported, and with GNU OpenMP the
    forked cells that then run a parallel kernel abort. ``import harness`` sets the layer."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    for first in ("import harness, numba", "import numba, harness"):  # numba imported or not
        code = (f"{first}; import sys; numba.get_num_threads(); "
                "print(numba.threading_layer(), 'harness.kernels' in sys.modules)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, check=True)
        assert done.stdout.split() == ["workqueue", "False"], (first, done.stdout + done.stderr)
