"""One ratio measurement in a fresh process (``python -c`` of :func:`main`), for
:func:`benchmarks.common.ratio_over_processes`.

Measured in one process, a ratio of CPU times still moves from process to process on a
busy machine (local_mdi's ratio to predict on diabetes: 0.357, 0.367, 0.378 and 0.472 in four
asv runs of the same commit at load 6-10, measured): where a process's arrays land and which
core it shares set a per-process factor that interleaving cannot remove. The median over a
few fresh processes does. Each probe rebuilds its case from seeds (the fits are
deterministic), so it needs nothing from the asv process but the suite's names.
"""

from __future__ import annotations

import sys


def _explain_ratio(method: str, case: str) -> float:
    """``bench_methods.ExplainSuite``'s ratio: ``method`` on a case of the shared grid."""
    import harness
    from harness.forest.view import predict_output

    from .common import explain_inputs, fitted_case, interleaved_ratio

    model, _, ds = fitted_case(*case.split("/"))
    spec, X, y = explain_inputs(method, model, ds)
    return interleaved_ratio(lambda: harness.explain(spec, model, X, y),
                             lambda: predict_output(model, X))


def _oob_ratio(method: str, case: str) -> float:
    """``bench_oob.OOBSuite``'s ratio: ``method`` on a bench case."""
    import harness
    from harness.forest.view import predict_output

    from .bench_oob import fitted_case
    from .common import interleaved_ratio

    model, X, y = fitted_case(case)
    return interleaved_ratio(lambda: harness.explain(method, model, X, y),
                             lambda: predict_output(model, X))


def _wide_ratio(method: str) -> float:
    """``bench_wide.WideSuite``'s ratio: ``method`` on p = 10^4 features."""
    from .bench_wide import ratio_to_predict

    return ratio_to_predict(method)


PROBES = {"explain": _explain_ratio, "oob": _oob_ratio, "wide": _wide_ratio}


def main(argv: list[str]) -> None:
    """``argv``: a probe name of :data:`PROBES` and its arguments; prints the ratio."""
    import warnings

    from .bench_methods import _one_thread

    warnings.simplefilter("ignore")
    _one_thread()  # for the rest of this process: kernels and BLAS on one thread
    probe, *args = argv
    print(repr(PROBES[probe](*args)))


if __name__ == "__main__":
    main(sys.argv[1:])
