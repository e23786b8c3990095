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
``harness.explain`` now runs as ``compare`` and the bench measure it. On one numba thread the
limit changed neither the time (six interleaved rounds, within each other's noise) nor the
values (the same bits).

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
#: Explains under way in this process, and the (library, thread count) pairs to give back.
_active = 0
_given_back: list[tuple[object, int]] = []


def _blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded in this process, found at the first explain (a scan of the
    loaded shared libraries takes milliseconds). numpy's BLAS, and scipy's that
    scikit-learn loads at ``import harness``, are loaded by then."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Every loaded BLAS library on one thread until the last explain under way in this
    process ends, then each on its thread count from before the first.

    About 3 µs where BLAS is on one thread already (the runner, the bench), 6 µs where it
    is not. A BLAS library's thread count belongs to the process, not to a thread:
    explains that overlap in several threads (a Dask worker's, a user's pool) share one
    limit, so that the first to end neither lifts it under the others nor leaves it set
    after the last.
    """
    global _active, _given_back
    with _lock:
        if _active == 0:
            counts = [(library, library.get_num_threads())
                      for library in _blas_controller().lib_controllers]
            _given_back = [(library, count) for library, count in counts if count != 1]
            for library, _ in _given_back:
                library.set_num_threads(1)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for library, count in _given_back:
                    library.set_num_threads(count)
                _given_back = []
