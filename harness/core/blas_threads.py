"""BLAS on one thread while a method explains: the harness's own threads do the parallel work.

The kernels run their tasks on ``numba.get_num_threads()`` threads
(:func:`harness.core.tasks.run_tasks`); the small linear algebra between them (tree SAGE's
comoments of each batch of drops with its control variates and their ``eigh``, SHAFF's
weighted Gram matrices and solves) gains little from BLAS threads, and OpenBLAS's threads
spin after each call, on the cores the kernel threads need. Measured on 2 cores through
``harness.explain``, tree SAGE on digits with 100 ExtraTrees, four interleaved rounds: 2 numba
threads gave 1.70-1.92x over one with BLAS on one thread, 1.34-1.57x with BLAS left on its 2;
beside other work, the ``eigh`` alone took 56 ms on 2 BLAS threads and 1.2 ms on one. The
runner (:mod:`harness.run.native_threads`) and the bench already keep BLAS on one thread, so
this also gives ``harness.explain`` the arithmetic of ``compare``: a multi-threaded BLAS
product may sum in another order.

OpenBLAS takes a thread count set from the main thread; this one (0.3.30) ignores a count set
from another thread once the main thread has set one, so an explain in a worker thread may
keep BLAS's threads (its speed, not its values, would show it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None
_lock = threading.Lock()
#: Explains under way in this process, and the limit the first of them set.
_active = 0
_limiter = None


def _blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded in this process, found at the first explain (a scan of the
    loaded shared libraries takes milliseconds; limiting through it then takes about 60 µs).
    numpy's BLAS, and scipy's that scikit-learn loads at ``import harness``, are loaded by
    then."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Every loaded BLAS library on one thread until the last explain under way in this
    process ends, then each on its thread count from before the first.

    A BLAS library's thread count belongs to the process, not to a thread: explains that
    overlap in several threads (a Dask worker's, a user's pool) share one limit, so that the
    first to end neither lifts it under the others nor leaves it set after the last.
    """
    global _active, _limiter
    with _lock:
        if _active == 0:
            _limiter = _blas_controller().limit(limits=1)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _limiter.restore_original_limits()
                _limiter = None
