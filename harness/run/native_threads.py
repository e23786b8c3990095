"""One native thread per process while the runner forks.

The runner forks its cell processes and model fits from one parent. GNU OpenMP (which
scikit-learn's HistGradientBoosting, XGBoost and LightGBM use) hangs in a forked child once the
parent has started its thread team: measured, a HistGradientBoosting ``predict`` in a child
forked after the parent fitted or predicted with one never returned. With one OpenMP thread no
team is started, so forking stays safe; and the runner's parallelism is its cell processes
(``jobs``), which native thread pools would only oversubscribe (a HistGradientBoosting fit on
442 rows took 9 s with two spinning OpenMP threads on a busy 2-core machine).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def one_native_thread() -> Iterator[None]:
    """Limit OpenMP and BLAS to one thread in this process and the ones it forks: the
    libraries loaded now through threadpoolctl, those loaded later (XGBoost and LightGBM are
    imported when first used) through ``OMP_NUM_THREADS``. Both are restored on exit."""
    previous = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        if previous is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = previous
