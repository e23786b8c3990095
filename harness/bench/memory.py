"""``python -m harness bench --memory``: the memory of every local method at 10^4-10^6 rows.

Issue 22 asks that a local method's peak memory stay within its output, the forest and a
constant set by the block size (the protocol explains such methods in row blocks,
:func:`harness.run.protocol.row_block`), whatever the number n of rows explained, and that
10^6 rows x 20 features with a 100-tree forest run on a 24 GiB machine.

The forest (:func:`scale_forest`) is a ``RandomForestRegressor(n_estimators=100,
max_depth=12)`` fitted on ``FIT_ROWS`` = 5000 rows of 20 standard normal features with
y = x0 + x1 x2 + 0.1 noise: depth 12 bounds each tree to 2^13 - 1 nodes (about 1000 here), so
that the forest stays small beside the outputs and the growth with n is the explain's. The
explained rows are n fresh draws of the same features.

Each (method, n) runs in a fresh process (spawned), which fits the forest, prepares the
method (numba's cache), explains 256 rows (building the forms of the forest the method
reads: the forest is then in memory, as for every later call) and then measures one
``run_protocol`` of the n rows:

- ``traced_peak_mb``: the largest memory traced by ``tracemalloc`` (NumPy's and numba's
  arrays) above the start of the explain, validation included;
- ``rss_peak_mb``: the process's peak resident size during the explain (VmHWM, reset by
  writing 5 to /proc/self/clear_refs just before, proc(5)): everything, interpreter,
  libraries, the input X and the forest included; ``rss_above_start_mb`` is that minus the
  resident size at the start;
- ``extra_traced_mb`` and ``extra_rss_mb``: each peak above the start minus the output (values
  and base values). The forest is in memory before the start, so these are the explain's own
  temporaries: the quantity that must not grow with n.

``forest_mb`` is the model's own node arrays plus the forms the harness built from them (traced
during the 256-row explain that builds them). Times (``seconds``) are taken under tracing,
with ``threads`` numba threads. A method runs up to its ``max_rows`` (``SETTINGS``): the
interventional and path-dependent TreeSHAP cost far more per row than a walk of the paths
(at 10^5 rows path-dependent TreeSHAP takes minutes on one thread, interventional TreeSHAP with
100 background rows about 10 times longer), so they stop where a run takes minutes.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.forest.view import forest_view

MB = 1e6
N_FEATURES = 20
N_TREES = 100
MAX_DEPTH = 12
FIT_ROWS = 5000
WARM_ROWS = 256
SIZES = (10**4, 10**5, 10**6)


@dataclass(frozen=True)
class MemorySetting:
    """A local method (a spec such as ``treeshap[perturbation=interventional]``) and the
    largest number of rows it is measured on."""

    spec: str
    max_rows: int


#: Every local method of the registry, in each setting whose code differs (the tests check
#: that every registered local method is here).
SETTINGS = (
    MemorySetting("local_mdi", 10**6),
    MemorySetting("saabas", 10**6),
    MemorySetting("treeshap", 10**5),
    MemorySetting("treeshap[perturbation=interventional]", 10**4),
)
COLUMNS = ("method", "n_rows", "seconds", "input_mb", "output_mb", "forest_mb", "rss_peak_mb",
           "rss_above_start_mb", "traced_peak_mb", "extra_traced_mb", "extra_rss_mb",
           "block_rows", "threads")


def scale_forest(fit_rows: int = FIT_ROWS) -> Any:
    """The 100-tree, depth-12 random forest regressor of the module docstring (seeded)."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((fit_rows, N_FEATURES))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(fit_rows)
    return RandomForestRegressor(N_TREES, max_depth=MAX_DEPTH, random_state=0,
                                 n_jobs=1).fit(X, y)


def scale_rows(n_rows: int) -> np.ndarray:
    """n rows to explain: fresh standard normal draws of the 20 features (seeded)."""
    return np.random.default_rng(1).standard_normal((n_rows, N_FEATURES))


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # the kernel reports kB
    raise KeyError(key)


def _reset_rss_peak() -> bool:
    """Reset VmHWM to the current resident size (Linux); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def _model_bytes(model: Any) -> int:
    """Bytes of the forest's trees as the forest view reads them (its flat node arrays: about
    the size of the library's own)."""
    return sum(array.nbytes for tree in forest_view(model).trees
               for array in vars(tree).values() if isinstance(array, np.ndarray))


def measure(spec: str, model: Any, X: np.ndarray, threads: int | None = 1) -> dict:
    """Memory and time of one explain of ``X`` by ``spec`` on ``model``, in this process.

    The method is prepared and run once on the first ``WARM_ROWS`` rows first, so that the
    forest's forms are built and the kernels compiled before the measured explain (see the
    module docstring for the figures).
    """
    import numba

    from harness.bench.runner import output_bytes, traced_peak
    from harness.run.cells import expand_methods
    from harness.run.protocol import ExplainRequest, row_block, run_protocol

    if threads is not None:
        numba.set_num_threads(threads)
    method = expand_methods([spec])[0]
    method.prepare()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run_protocol(method, model, ExplainRequest(X[:WARM_ROWS]))
        view_bytes = tracemalloc.get_traced_memory()[0] - before
        resettable = _reset_rss_peak()
        rss_start = _status_bytes("VmRSS")
        clock = time.perf_counter()
        traced, result = traced_peak(lambda: run_protocol(method, model, ExplainRequest(X)))
        seconds = time.perf_counter() - clock
    finally:
        tracemalloc.stop()
    rss_peak = _status_bytes("VmHWM") if resettable else float("nan")
    output = output_bytes(result)
    return {
        "method": spec, "n_rows": X.shape[0], "seconds": seconds, "input_mb": X.nbytes / MB,
        "output_mb": output / MB, "forest_mb": (_model_bytes(model) + view_bytes) / MB,
        "rss_peak_mb": rss_peak / MB, "rss_above_start_mb": (rss_peak - rss_start) / MB,
        "traced_peak_mb": traced / MB, "extra_traced_mb": (traced - output) / MB,
        "extra_rss_mb": (rss_peak - rss_start - output) / MB,
        "block_rows": (row_block(model, X.shape[1], method) if method.rows_independent
                       else None),
        "threads": threads,
    }


def _measure_fresh(spec: str, n_rows: int, threads: int | None) -> dict:
    """:func:`measure` on the scale forest and ``n_rows`` rows (run in a spawned process)."""
    return measure(spec, scale_forest(), scale_rows(n_rows), threads)


def run_memory(settings: tuple[MemorySetting, ...] = SETTINGS,
               sizes: tuple[int, ...] = SIZES, threads: int | None = 1,
               on_step: Callable[[str, int, int], None] | None = None) -> pd.DataFrame:
    """Measure every setting at every size up to its ``max_rows``, each in a fresh process.

    Returns
    -------
    DataFrame
        One row per (method, n) with the columns ``COLUMNS`` (module docstring).
    """
    plan = [(setting.spec, n) for setting in settings for n in sizes if n <= setting.max_rows]
    context = multiprocessing.get_context("spawn")
    rows = []
    for done, (spec, n) in enumerate(plan):
        if on_step is not None:
            on_step(f"{spec} on {n} rows", done, len(plan))
        # a fresh process per setting: its peak resident size is its own
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            rows.append(pool.submit(_measure_fresh, spec, n, threads).result())
    if on_step is not None:
        on_step("done", len(plan), len(plan))
    return pd.DataFrame(rows, columns=list(COLUMNS))
