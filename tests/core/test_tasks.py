"""The harness's one parallel loop (harness.core.tasks.run_tasks) and the rule that no kernel
is compiled with numba's ``parallel=True`` (its parfor passes were 41 % of the compile work
of a fresh environment)."""

from __future__ import annotations

import importlib
import pkgutil
import threading

import numpy as np
import pytest
from numba import njit
from numba.core.registry import CPUDispatcher

import harness
from harness.core.tasks import run_tasks
from tests._support.threads import on_threads


@njit(cache=False, nogil=True)
def _square_tasks(x, out, first, last):
    for task in range(first, last):
        total = 0.0
        for k in range(x.shape[1]):  # a fixed order per task: the bits are the task's own
            total += x[task, k] * x[task, k]
        out[task] = total


@njit(cache=False, nogil=True)
def _failing_tasks(out, bad, first, last):
    for task in range(first, last):
        if task == bad:
            raise ValueError("task failed")
        out[task] = 1.0


def test_every_task_runs_once_with_the_same_bits_on_any_number_of_threads():
    x = np.random.default_rng(0).normal(size=(1001, 7))
    expected = (x * x).sum(axis=1)
    results = []
    for threads in (1, 2):
        out = np.full(x.shape[0], np.nan)
        on_threads(threads, lambda out=out: run_tasks(_square_tasks, x.shape[0], x, out))
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], expected, rtol=1e-13)


def test_no_task_is_run_for_zero_tasks_and_the_pool_has_one_thread_less():
    out = np.full(3, np.nan)
    on_threads(2, lambda: run_tasks(_square_tasks, 0, np.zeros((0, 1)), out))
    assert np.isnan(out).all()
    names = [t.name for t in threading.enumerate() if t.name.startswith("harness-kernel")]
    assert len(names) <= 1  # the calling thread does a share: at most threads - 1 helpers


@pytest.mark.parametrize("threads", [1, 2])
def test_an_exception_in_a_task_is_raised_in_the_caller(threads):
    out = np.zeros(50)
    with pytest.raises(ValueError, match="task failed"):
        on_threads(threads, lambda: run_tasks(_failing_tasks, 50, out, 37))


def test_no_kernel_of_the_harness_is_compiled_parallel():
    """Every harness module's numba dispatchers: none with ``parallel=True`` (parallel work
    goes through run_tasks, whose kernels are ``nogil``)."""
    dispatchers = []
    for module in pkgutil.walk_packages(harness.__path__, "harness."):
        if module.name.endswith("__main__"):
            continue
        loaded = importlib.import_module(module.name)
        dispatchers += [v for v in vars(loaded).values() if isinstance(v, CPUDispatcher)]
    assert len(dispatchers) > 50  # the walk found the kernels
    parallel = [d.py_func.__qualname__ for d in dispatchers
                if d.targetoptions.get("parallel")]
    assert parallel == []
    task_kernels = [d for d in dispatchers if d.py_func.__name__.endswith("_tasks")]
    assert len(task_kernels) >= 12
    assert all(d.targetoptions.get("nogil") for d in task_kernels), task_kernels
