"""Run a kernel's independent tasks on several threads: the harness's one parallel loop.

Every parallel kernel is a numba function compiled with ``nogil=True`` (not ``parallel=True``)
whose last two arguments are a range of task indices ``first, last``; it does tasks
``first, ..., last - 1`` in order, and no two tasks write the same output element. This module
calls it on ``numba.get_num_threads()`` threads, each taking the next task not yet taken, so
the tasks a kernel defines, not the threads, fix every output's arithmetic: the results are
the same bit for bit on any number of threads.

Why not numba's ``parallel=True``: its parfor passes and the outlined loop body are compiled
again for every kernel, and they were 41 % of the compile work a fresh environment waits for
(every method's kernels compiled in one process from an empty cache: 73.7 s with
``parallel=True``, 43.3 s without; issue 22, part 1). A kernel without them is an ordinary
function, called here once per task from a thread pool (a few microseconds per call, against
the tasks' milliseconds), or once for all tasks on one thread.

Tasks are handed out one at a time, so neighbouring tasks run on different threads at once:
a task must not write the cache lines that its neighbours write (an output laid out with a
row per task, or sums kept apart and written once). Where they did, two threads ran no
faster than one (tree SAGE's singleton sums wrote column j of an (n, p) array per task: 1.58x
on 2 threads, 1.91x with a row per feature).

The pool is the process's own: a process forked from one that used it (the runner's cell
workers) starts a new one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba

_pool: ThreadPoolExecutor | None = None
_pool_owner = (0, 0)  # (pid, workers) of the process and size that made ``_pool``
_pool_lock = threading.Lock()


def _shared_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_owner
    with _pool_lock:
        if _pool is None or _pool_owner != (os.getpid(), workers):
            if _pool is not None and _pool_owner[0] == os.getpid():
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="harness-kernel")
            _pool_owner = (os.getpid(), workers)
        return _pool


def run_tasks(kernel: Callable, n_tasks: int, *args) -> None:
    """Call ``kernel(*args, first, last)`` over the tasks ``0, ..., n_tasks - 1``.

    Parameters
    ----------
    kernel : numba dispatcher compiled with ``nogil=True``
        Does tasks ``first, ..., last - 1``; tasks are independent (disjoint outputs).
    n_tasks : int
        Number of tasks (none is run when it is 0).
    *args
        The kernel's other arguments, the same for every task.

    Notes
    -----
    On ``numba.get_num_threads()`` threads (the calling thread and pool threads, at most one
    per task), each taking the next task left; on one thread, one call does every task. An
    exception in a task is raised here once every thread has stopped.
    """
    threads = min(numba.get_num_threads(), n_tasks)
    if threads <= 1:
        if n_tasks > 0:
            kernel(*args, 0, n_tasks)
        return
    todo = iter(range(n_tasks))  # next() of a range iterator is atomic under the GIL

    def work() -> None:
        for task in todo:
            kernel(*args, task, task + 1)

    helpers = [_shared_pool(threads - 1).submit(work) for _ in range(threads - 1)]
    try:
        work()
    finally:
        for helper in helpers:
            helper.exception()  # wait for every thread before raising
    for helper in helpers:
        helper.result()
