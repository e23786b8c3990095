"""Shared asv setup: fitted forests cached once, a fast/regular profile by environment variable.

``HARNESS_BENCH_PROFILE=fast`` (default) keeps every suite to seconds; ``regular`` uses the
sizes of the papers' experiments (1000 trees).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATASETS = ["led", "breast_cancer", "diabetes"]
FORESTS = ["extra_trees", "random_forest"]

PROFILES = {
    "fast": {"n_estimators": 30, "max_explain": 100},
    "regular": {"n_estimators": 1000, "max_explain": None},
}

# Methods whose cost is set by a sampling budget get a fixed one in the fast profile, so that
# their timings measure a fixed amount of work and the suites stay short.
FAST_METHOD_PARAMS = {
    "sage": {"n_background": 16, "max_permutations": 512, "batch_size": 128},
    "tree_sage": {"n_background": 16, "max_permutations": 512, "batch_size": 128},
    "shaff": {"n_subsets": 16},
    "rs": {"n_trees": 20},
    "srs": {"n_trees": 20},
    "loco": {"n_folds": 2},
}


def method_params(method: str) -> dict:
    """Parameter overrides of ``method`` in the current profile."""
    return FAST_METHOD_PARAMS.get(method, {}) if profile() is PROFILES["fast"] else {}


def profile() -> dict:
    name = os.environ.get("HARNESS_BENCH_PROFILE", "fast")
    if name not in PROFILES:
        raise ValueError(f"HARNESS_BENCH_PROFILE must be one of {sorted(PROFILES)}; got {name!r}")
    return PROFILES[name]


def explain_inputs(method: str, model, ds) -> tuple:
    """(method spec, X, y) that ``ExplainSuite`` explains: every training row (the OOB
    methods need them; the others get enough rows that the kernels, not the per-call checks,
    set the time), or the held-out rows for a method that takes them (``mda_test``)."""
    import harness

    cls = harness.core.registry.get_method_class(method)
    info = model.harness_fit_
    rows = info["test_index"] if cls.rows == "test" else info["train_index"]
    spec = harness.core.registry.make_method(method, **method_params(method))
    return spec, ds.X[rows], ds.y[rows]


def fitted_case(dataset: str, forest: str) -> tuple:
    """(model, X, dataset) of one (dataset, forest) of the grid: the model fitted with seed 0,
    X its training rows (the first ``max_explain`` in the fast profile)."""
    import harness

    settings = profile()
    ds = harness.load_dataset(dataset)
    spec = {"forest": forest, "n_estimators": settings["n_estimators"]}
    if dataset == "led":
        spec.update(max_features=1, bootstrap=False)
    model = harness.fit_model(spec, ds, seed=0)
    X = ds.X[model.harness_fit_["train_index"]]
    if settings["max_explain"] is not None:
        X = X[: settings["max_explain"]]
    return model, X, ds


def fitted_forests() -> dict:
    """(dataset, forest) -> (model, X, dataset) for the benchmark grid."""
    return {(dataset, forest): fitted_case(dataset, forest)
            for dataset in DATASETS for forest in FORESTS}


# --- measures that stay stable on a busy machine -------------------------------------------
# CPU time of this process, not wall time: on a shared machine a process waits for a core for
# a varying share of the wall clock (3x on 2 cores at load 6, measured), while the CPU time of
# a single-threaded call varies by a few per cent. Kernels run on one numba thread here, so
# the CPU time of a call is its work; a slowdown that waits (sleep, I/O) is seen only by the
# absolute ``time_`` suites of ``bench_absolute``.
MIN_SAMPLE_SECONDS = 0.05  # per timed sample: ~10^4 x the clock's resolution and jitter
ALTERNATIONS = 9           # explain and predict samples, interleaved (ABBA order)
MAX_SECONDS = 10.0         # ... fewer (3 or more) where a call is long: refits take seconds
PROCESSES = 3              # fresh processes per tracked ratio, the median kept (benchmarks.probe)


def _cpu_seconds_per_call(call: Callable[[], Any], number: int) -> float:
    start = time.process_time()
    for _ in range(number):
        call()
    return (time.process_time() - start) / number


def _calls_per_sample(call: Callable[[], Any], min_seconds: float) -> int:
    """Smallest number of back-to-back calls (1, then scaled up) that lasts ``min_seconds``
    of CPU time, as ``timeit.Timer.autorange`` does for wall time."""
    number = 1
    while True:
        spent = _cpu_seconds_per_call(call, number) * number
        if spent >= min_seconds:
            return number
        number = max(2 * number, int(number * 1.2 * min_seconds / max(spent, 1e-6)))


def interleaved_ratio(numerator: Callable[[], Any], denominator: Callable[[], Any], *,
                      min_seconds: float | None = None,
                      alternations: int | None = None) -> float:
    """Median over ``alternations`` of (CPU time per call of ``numerator``) / (that of
    ``denominator``), the two timed in turn in this process (ABBA order, so that a drift of
    the machine's speed affects both alike), each sample ``min_seconds`` long or more; after
    three alternations, none is started once ``MAX_SECONDS`` of CPU time are spent.

    Both calls are made once first (imports, compilation), outside the samples. The defaults
    are the module's ``MIN_SAMPLE_SECONDS`` and ``ALTERNATIONS``, read at each call (the
    suite's test lowers them to run every benchmark once in seconds).
    """
    min_seconds = MIN_SAMPLE_SECONDS if min_seconds is None else min_seconds
    alternations = ALTERNATIONS if alternations is None else alternations
    numerator(), denominator()
    n_num = _calls_per_sample(numerator, min_seconds)
    n_den = _calls_per_sample(denominator, min_seconds)
    ratios, start = [], time.process_time()
    for k in range(alternations):
        if k >= 3 and time.process_time() - start > MAX_SECONDS:
            break
        if k % 2:
            num = _cpu_seconds_per_call(numerator, n_num)
            den = _cpu_seconds_per_call(denominator, n_den)
        else:
            den = _cpu_seconds_per_call(denominator, n_den)
            num = _cpu_seconds_per_call(numerator, n_num)
        ratios.append(num / den)
    return float(statistics.median(ratios))


def ratio_over_processes(probe: str, *args: str) -> float:
    """Median of a ratio measured by :mod:`benchmarks.probe` in ``PROCESSES`` fresh processes,
    one after the other (see the probe module for why); in this process when ``PROCESSES`` is 1
    or less (the suites' smoke test).

    The probes import the ``harness`` this environment has installed (asv's build of the
    commit under test): the benchmarks' folder is put last on their path, never first.
    """
    from .probe import PROBES

    if PROCESSES <= 1:
        return PROBES[probe](*args)
    root = str(Path(__file__).resolve().parents[1])
    code = f"import sys; sys.path.append({root!r}); from benchmarks.probe import main; " \
           "main(sys.argv[1:])"
    ratios = []
    for _ in range(PROCESSES):  # each inherits this environment (the bench profile included)
        done = subprocess.run([sys.executable, "-c", code, probe, *args], check=True,
                              capture_output=True, text=True)
        ratios.append(float(done.stdout.strip().splitlines()[-1]))
    return float(statistics.median(ratios))
