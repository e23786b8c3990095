"""``python -m harness bench --runner`` (harness/bench/overhead.py), at a tiny size."""

from __future__ import annotations

import numpy as np

from harness.bench import overhead


def test_runner_overhead_splits_add_up_and_reports_are_timed_on_both_grids(monkeypatch):
    """Each run's wall time is its cells' own work plus the overhead; the overhead is the
    fixed part plus the marginal cost per cell times the cells; the reports are timed on the
    runner's grid and on a study grid of STUDY_METHODS methods."""
    monkeypatch.setattr(overhead, "SEEDS", 2)
    monkeypatch.setattr(overhead, "STUDY_METHODS", 2)
    steps = []
    runner, store = overhead.run_overhead(sizes=(4, 8), executors=("inprocess",),
                                          on_step=steps.append)
    assert runner["cells"].tolist() == [4, 8] and store["cells"].tolist() == [4, 8]
    np.testing.assert_allclose(runner["cell_work_ms"] + runner["overhead_ms"],
                               1e3 * runner["wall_s"] / runner["cells"], rtol=1e-9)
    last = runner.iloc[-1]
    np.testing.assert_allclose(last["fixed_s"] + last["marginal_ms"] / 1e3 * last["cells"],
                               last["overhead_ms"] * last["cells"] / 1e3, rtol=1e-9)
    assert np.isnan(runner["marginal_ms"].iloc[0])  # no smaller size to take a slope from
    assert (store["reports_s"] > 0).all() and (store["study_reports_s"] > 0).all()
    np.testing.assert_allclose(store["study_reports_ms"],
                               1e3 * store["study_reports_s"] / store["cells"])
    assert "reports: a study grid of 8 cells, 2 methods" in steps
