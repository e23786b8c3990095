"""asv suite of the out-of-bag methods on wide rows: p = 10^4 features.

The other suites run at p = 10 (diabetes, Friedman #1) or p = 200 (``benard2022``), where
the part of the cost that grows with p (the shift, the loss increases) is a smaller share.
A deliberate slowdown of that part (the loss moments computed five times, on a throwaway
commit, ``asv continuous --quick --factor 1.5``) moved mda_ik's ratio to predict by 0.97x
at p = 10 (not seen), 1.54x at p = 200 (flagged, just past the factor) and 2.62x here
(4.69 -> 12.31; mda_bc, untouched, 2.01 -> 1.97). At p = 10^4 that part is most of the
time (``python -m harness bench --scaling``: mda_ik's fitted exponent in p was 1.39 while
it held a (rows, p) array of loss increases, 0.80 without it).
``WideSuite.track_ratio_to_predict`` is the method's CPU time on p = 10^4 as a multiple of
the forest's own predict on the same rows, measured as ``bench_oob``'s ratios are
(interleaved in one process, :func:`benchmarks.common.interleaved_ratio`; the median over
three fresh processes): stable on a busy machine, and proportional to the method's own time.

The case is the scaling bench's base point (:mod:`harness.bench.scaling`) widened: Friedman
#1 rows (n = 1000, the features past the fifth irrelevant), a 100-tree random forest of depth
at most 8 trying sqrt(p) features per split, so that the trees keep the shape they have at
p = 10. Measured on 2 AMD EPYC cores, one thread: mda_bc 1.8-2.0x predict, mda_ik 4.5-5.6x
(0.17 s).
"""

from __future__ import annotations

import functools

from .common import ratio_over_processes

METHODS = ["mda_bc", "mda_ik"]
N_ROWS = 1000
N_FEATURES = 10_000


@functools.lru_cache(maxsize=1)
def wide_case() -> tuple:
    """(model, X, y): the forest of the module's docstring, grown on ``N_ROWS`` Friedman #1
    rows of ``N_FEATURES`` features, and those rows (the out-of-bag methods read them)."""
    from harness.bench.scaling import scaling_forest, synthetic

    X, y = synthetic(N_ROWS, N_FEATURES, seed=0)
    return scaling_forest(trees=100, depth=8).fit(X, y), X, y


def ratio_to_predict(method: str) -> float:
    """CPU time of ``method`` on :func:`wide_case` over that of the forest's predict on the
    same rows, in this process (:data:`benchmarks.probe.PROBES` ``"wide"``)."""
    import harness
    from harness.forest.view import predict_output

    from .common import interleaved_ratio

    model, X, y = wide_case()
    return interleaved_ratio(lambda: harness.explain(method, model, X, y),
                             lambda: predict_output(model, X))


class WideSuite:
    """Each OOB method's cost relative to predict at p = 10^4."""

    params = (METHODS,)
    param_names = ["method"]
    timeout = 600

    def track_ratio_to_predict(self, method):
        return ratio_over_processes("wide", method)

    track_ratio_to_predict.unit = "x predict"
