"""A method explains with BLAS on one thread, and the BLAS thread count is given back after.

The oracle is threadpoolctl's own report of each loaded BLAS library's thread count: inside
``Method.explain`` it must be 1, outside it must be what the caller had set, also when
explains overlap in several threads (the count belongs to the process).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from harness.core.blas_threads import one_blas_thread
from harness.core.method import ExplainData, Method


def _blas_threads() -> list[int]:
    return [library["num_threads"] for library in threadpool_info()
            if library["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    """BLAS on 2 threads around the test (skipped where this BLAS will not take 2)."""
    with threadpool_limits(limits=2, user_api="blas"):
        counts = _blas_threads()
        if not counts or min(counts) < 2:
            pytest.skip(f"no BLAS library here runs on 2 threads (thread counts: {counts})")
        yield counts


class RecordsBlasThreads(Method):
    name, scope, family, unit, explains = "records_blas_threads", "global", "test", "1", "x"
    seen: list[int] = []

    def _explain(self, model, data, rng):
        type(self).seen = _blas_threads()
        return np.zeros(data.X.shape[1])


def test_explain_runs_on_one_blas_thread_and_gives_the_count_back(two_blas_threads):
    data = ExplainData(X=np.zeros((4, 2)), y=None, feature_names=["a", "b"],
                       task="regression")
    RecordsBlasThreads().explain(None, data, np.random.default_rng(0))

    assert RecordsBlasThreads.seen and set(RecordsBlasThreads.seen) == {1}
    assert _blas_threads() == two_blas_threads


class _RecordedLibrary:
    """A BLAS library whose thread counts ``one_blas_thread`` sets are recorded."""

    def __init__(self, threads: int):
        self.threads, self.calls = threads, []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, threads: int) -> None:
        self.threads = threads
        self.calls.append(threads)


class _RecordedController:
    def __init__(self, *threads: int):
        self.lib_controllers = [_RecordedLibrary(count) for count in threads]


def test_overlapping_explains_share_one_limit_given_back_after_the_last(monkeypatch):
    # recorded rather than read back from OpenBLAS: this OpenBLAS (0.3.30) ignores a thread
    # count set from another thread than the main one once the main thread has set one
    controller = _RecordedController(2, 1)
    monkeypatch.setattr("harness.core.blas_threads._blas_controller", lambda: controller)
    on_two, on_one = controller.lib_controllers
    entered, first_may_end, first_ended = (threading.Event() for _ in range(3))
    calls_when = {}

    def first() -> None:
        with one_blas_thread():
            entered.set()
            first_may_end.wait(10)
        first_ended.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert entered.wait(10)
    with one_blas_thread():
        first_may_end.set()
        assert first_ended.wait(10)
        calls_when["the first ended"] = list(on_two.calls)
    thread.join(10)

    assert calls_when["the first ended"] == [1]  # not lifted under the second
    assert on_two.calls == [1, 2] and on_two.threads == 2  # given back after the last
    assert on_one.calls == []  # a library on one thread already is left alone
    with one_blas_thread():  # a later explain limits again
        assert on_two.threads == 1
    assert on_two.calls == [1, 2, 1, 2]
