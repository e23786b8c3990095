"""Models that use OpenMP run in forked cells: the runner keeps one native thread, so no
OpenMP team exists in the parent when it forks (GNU OpenMP hangs in such a child)."""

from __future__ import annotations

import os

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
