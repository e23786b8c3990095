"""Dask executor: same values as the local executors, failures isolated per cell.

Every test runs against a real LocalCluster with worker processes. None depends on how fast
the machine is: workers import what a cell needs before they join
(``tests._support.dask_preload``), so the per-cell timeout measures the cell alone and is
tens of times what the quick cells need on a busy machine
(``tests.run.test_runner.CELL_TIMEOUT``); a cell that must outlast a timeout never ends by
itself, or waits for a flag that the test raises once the timeout is stored.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import harness  # noqa: E402
from harness.core.errors import HarnessError, NotInstalledError  # noqa: E402
from harness.core.method import Method  # noqa: E402
from harness.core.params import Interval, Param  # noqa: E402
from harness.core.types import Importances  # noqa: E402
from harness.run.executors import dask as dask_executor  # noqa: E402
from harness.run.results import RunResults  # noqa: E402
from tests.run.test_runner import (  # noqa: E402  (workers import it too)
    CELL_TIMEOUT,
    HANG_SECONDS,
    Hangs,
    KillsItself,
)

# Workers unpickle these classes by reference: they import this module (pytest puts the
# repository root on sys.path, and spawned workers inherit sys.path).


@pytest.fixture(autouse=True)
def _workers_import_before_they_join():
    """Every worker started in a test (and every replacement) runs the preload first."""
    with dask.config.set({"distributed.worker.preload": ["tests._support.dask_preload"]}):
        yield


class WaitsForFlag(Method):
    """Runs until the file ``flag`` exists (at most HANG_SECONDS): past its timeout for sure,
    then done as soon as the test says so."""

    name, scope, family = "test_dask_slow", "global", "test"

    def __init__(self, flag: Path) -> None:
        super().__init__()
        self.flag = str(flag)

    def _explain(self, model, data, rng):
        give_up = time.monotonic() + HANG_SECONDS
        while not os.path.exists(self.flag) and time.monotonic() < give_up:
            time.sleep(0.01)
        return Importances(np.ones(data.X.shape[1]), "global", data.feature_names, "one", "x")


class DaskWorkerPid(Method):
    name, scope, family = "test_dask_worker_pid", "global", "test"

    def _explain(self, model, data, rng):
        values = np.full(data.X.shape[1], float(os.getpid()))
        return Importances(values, "global", data.feature_names, "pid", "x")


class HoldsMemory(Method):
    """Takes 1 GiB (twice the worker limit of the test) in 64 MiB steps, touching every page,
    and keeps it: only the nanny's kill ends it early, however late its monitor looks."""

    name, scope, family = "test_holds_memory", "global", "test"

    def _explain(self, model, data, rng):
        blocks = [np.ones(2**23) for _ in range(16)]
        time.sleep(HANG_SECONDS)
        return Importances(np.ones(data.X.shape[1]) * len(blocks), "global",
                           data.feature_names, "x", "x")


SMALL_GRID = dict(datasets=["iris", "linear_gaussian[n_samples=80]"],
                  models=[{"forest": "random_forest", "n_estimators": 5}],
                  methods=["mdi", "saabas", "sobol_mda", "mda_bc"], max_explain=20,
                  reports=False)


def test_dask_gives_the_same_results_as_the_process_executor(tmp_path):
    local = harness.compare(**SMALL_GRID, out=tmp_path / "process", executor="process", jobs=2)
    dask = harness.compare(**SMALL_GRID, out=tmp_path / "dask", executor="dask", jobs=2)
    assert dask.line() == local.line() == ("cells: 8 total, 8 done (0 reused), 0 skipped, "
                                           "0 error, 0 timeout")
    cells = {name: harness.load_results(tmp_path / name, kind="cells").set_index("key")
             for name in ("process", "dask")}
    assert sorted(cells["process"].index) == sorted(cells["dask"].index)
    statuses = cells["process"]["status"]
    assert (cells["dask"].loc[statuses.index, "status"] == statuses).all()
    runs = {name: RunResults.open(tmp_path / name) for name in ("process", "dask")}
    try:
        for key in statuses.index[statuses == "done"]:
            a, b = runs["process"].arrays(key), runs["dask"].arrays(key)
            for name in ("values", "std", "base_values", "sample_index"):
                if a[name] is None:
                    assert b[name] is None
                    continue
                assert a[name].dtype == b[name].dtype
                np.testing.assert_array_equal(a[name], b[name])
    finally:
        for run in runs.values():
            run.close()


def test_a_crash_and_a_hang_stay_in_their_cells(tmp_path):
    out = tmp_path / "run"
    summary = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=5]"],
        methods=[KillsItself(), Hangs(), DaskWorkerPid(), "mdi", "saabas"],
        out=out, executor="dask", jobs=2, timeout=CELL_TIMEOUT, reports=False,
    )
    assert summary.line() == "cells: 5 total, 3 done (0 reused), 0 skipped, 1 error, 1 timeout"
    cells = harness.load_results(out, kind="cells").set_index("method")
    assert cells.loc["test_kills_itself", "status"] == "error"
    assert "worker died" in cells.loc["test_kills_itself", "reason"]
    assert "KilledWorker" in cells.loc["test_kills_itself", "reason"]
    assert cells.loc["test_hangs", "status"] == "timeout"
    assert f"timeout of {CELL_TIMEOUT} s" in cells.loc["test_hangs", "reason"]
    for method in ("test_dask_worker_pid", "mdi", "saabas"):
        assert cells.loc[method, "status"] == "done"
    # cells ran in worker processes, not in the runner
    pid = harness.load_results(out, kind="importances")
    pid = pid.loc[pid["method"] == "test_dask_worker_pid", "value"].unique()
    assert pid.size == 1 and int(pid[0]) != os.getpid()


def test_an_unreachable_scheduler_is_bad_input_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT", 1.0)
    waited = []  # the connection attempt is bounded by CONNECT_TIMEOUT (no clock is read)

    def client(*args, **kwargs):
        waited.append(kwargs.get("timeout"))
        return real_client(*args, **kwargs)

    real_client = distributed.Client
    monkeypatch.setattr(distributed, "Client", client)
    out = tmp_path / "run"
    address = "tcp://127.0.0.1:1"
    with pytest.raises(HarnessError, match=r"tcp://127\.0\.0\.1:1.*within 1 s"):
        harness.compare(datasets=["iris"], models=["extra_trees[n_estimators=5]"],
                        methods=["mdi"], out=out, executor="dask", scheduler=address,
                        reports=False)
    assert waited == [1.0]
    assert not out.exists()


def test_a_live_worker_is_never_read_as_gone():
    """ci40 and ci41 lost a live external worker for good: ``client.scheduler_info()`` returns
    the client's cached identity, which its periodic refresh overwrote in between with one
    listing no worker (452 of 2000 reads at a 1 ms refresh on this machine), so the run
    retired the worker as gone and waited for a thread without end. The runner reads the
    scheduler's workers directly; at the same 1 ms refresh, every read lists the worker."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster, \
            dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}), \
            distributed.Client(cluster.scheduler_address) as client:
        address = next(iter(cluster.scheduler.workers))
        reads = [address in dask_executor.cluster_workers(client) for _ in range(500)]
    assert all(reads), f"{reads.count(False)} of 500 reads missed the live worker"


def test_an_external_cluster_keeps_its_workers_and_a_busy_thread_gets_no_cell(tmp_path):
    flag = tmp_path / "release"

    def release_once_timed_out(kind, payload):
        """The slow cell's thread frees itself only after its timeout was stored."""
        if kind == "cell" and payload[0].method.name == "test_dask_slow":
            flag.touch()

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster:
        summary = harness.compare(
            datasets=["iris"], models=["extra_trees[n_estimators=5]"],
            methods=[WaitsForFlag(flag), "mdi", "saabas"], out=tmp_path / "run",
            executor="dask", scheduler=cluster.scheduler_address, timeout=CELL_TIMEOUT,
            reports=False, on_event=release_once_timed_out,
        )
        # the slow cell times out; its thread, still running, is not killed, and the other
        # cells wait for it instead of timing out behind it
        assert summary.line() == ("cells: 3 total, 2 done (0 reused), 0 skipped, 0 error, "
                                  "1 timeout")
        cells = harness.load_results(tmp_path / "run", kind="cells").set_index("method")
        assert "was not restarted" in cells.loc["test_dask_slow", "reason"]
        assert len(cluster.scheduler.workers) == 1  # still running, not closed by the run


def test_without_distributed_the_executor_is_not_installed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    out = tmp_path / "run"
    with pytest.raises(NotInstalledError, match=r"pip install 'dask\[distributed\]'"):
        harness.compare(datasets=["iris"], models=["extra_trees[n_estimators=5]"],
                        methods=["mdi"], out=out, executor="dask", reports=False)
    assert not out.exists()


def test_a_cell_past_the_memory_limit_costs_its_worker_not_the_run(tmp_path):
    summary = harness.compare(datasets=["iris"], models=[{"forest": "random_forest",
                                                          "n_estimators": 5}],
                              methods=[HoldsMemory(), "mdi", "saabas"], out=tmp_path / "run",
                              executor="dask", max_memory=512 * 2**20, jobs=2, reports=False)
    assert summary.line() == "cells: 3 total, 2 done (0 reused), 0 skipped, 1 error, 0 timeout"
    cells = harness.load_results(tmp_path / "run", kind="cells").set_index("method_name")
    assert "worker died" in cells.loc["test_holds_memory", "reason"]


class SlowToPrepare(Method):
    """Its one-off ``prepare`` (imports, compilation) takes longer than a cell may; its
    explain is instant. Prepared once per process."""

    name, scope, family = "test_slow_prepare", "global", "test"
    unit, explains = "one", "nothing"
    prepared_in: int | None = None

    @classmethod
    def prepare(cls) -> None:
        if cls.prepared_in != os.getpid():
            time.sleep(1.5 * CELL_TIMEOUT)
            cls.prepared_in = os.getpid()

    def _explain(self, model, data, rng):
        return np.ones(data.X.shape[1])


def test_a_workers_one_off_preparation_is_not_counted_in_its_first_cell(tmp_path):
    summary = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=3]"], methods=[SlowToPrepare()],
        out=tmp_path / "run", executor="dask", jobs=1, timeout=CELL_TIMEOUT, reports=False)
    assert summary.line() == "cells: 1 total, 1 done (0 reused), 0 skipped, 0 error, 0 timeout"


#: The cell of :class:`Scaled` and :class:`ScaledOrDies` that fails (in the middle of a batch).
FAILS_AT = 5
N_BATCHED = 12


class Scaled(Method):
    """The model's impurity importances times ``index + 1`` (each cell of a batch its own
    numbers); the cell ``index == FAILS_AT`` raises."""

    name, scope, family = "test_dask_scaled", "global", "test"
    unit, explains = "impurity decrease", "the model's feature_importances_, scaled"
    parameters = {"index": Param(0, (Interval(int, 0, None),), "the scale, minus one")}

    def _explain(self, model, data, rng):
        if self.params["index"] == FAILS_AT:
            raise ValueError(f"cell {FAILS_AT} fails on purpose")
        return np.asarray(model.feature_importances_, dtype=float) * (self.params["index"] + 1)


class ScaledOrDies(Scaled):
    """As :class:`Scaled`, but its cell ``index == FAILS_AT`` ends its worker process."""

    name = "test_dask_scaled_or_dies"

    def _explain(self, model, data, rng):
        if self.params["index"] == FAILS_AT:
            os._exit(3)
        return np.asarray(model.feature_importances_, dtype=float) * (self.params["index"] + 1)


class ScaledOrHangs(Scaled):
    """As :class:`Scaled`, but its cell ``index == FAILS_AT`` never ends by itself."""

    name = "test_dask_scaled_or_hangs"

    def _explain(self, model, data, rng):
        if self.params["index"] == FAILS_AT:
            time.sleep(HANG_SECONDS)
        return np.asarray(model.feature_importances_, dtype=float) * (self.params["index"] + 1)


def _batched_run(monkeypatch, method_class, out: Path, executor: str,
                 timeout: float | None = 600.0):
    """A grid of N_BATCHED cells of ``method_class``, one model, on one worker; with Dask, the
    cells submitted together in each task, in order (without a time bound on a batch, so
    that however busy the machine, every cell after the first goes in one batch)."""
    batches = []
    if executor == "dask":
        monkeypatch.setattr(dask_executor, "BATCH_SECONDS", 3600.0)
        monkeypatch.setattr(dask_executor, "BATCH_TIMEOUT_SHARE", 1e-9)
        submit = dask_executor._Run.submit

        def spy(run, address, batch):
            batches.append([waiting.cell.key for waiting in batch])
            return submit(run, address, batch)

        monkeypatch.setattr(dask_executor._Run, "submit", spy)
    summary = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=5]"],
        methods=[method_class(index=i) for i in range(N_BATCHED)], seeds=[0], out=out,
        executor=executor, jobs=1, timeout=timeout, reports=False)
    cells = harness.load_results(out, kind="cells").set_index("key")
    return summary, cells, batches


def _assert_same_cells(reference: Path, other: Path) -> None:
    """Same statuses and, for every done cell, the same stored arrays."""
    cells = {out: harness.load_results(out, kind="cells").set_index("key")
             for out in (reference, other)}
    statuses = cells[reference]["status"]
    assert sorted(statuses.index) == sorted(cells[other].index)
    assert (cells[other].loc[statuses.index, "status"] == statuses).all()
    runs = [RunResults.open(out) for out in (reference, other)]
    try:
        for key in statuses.index[statuses == "done"]:
            a, b = (run.arrays(key) for run in runs)
            np.testing.assert_array_equal(a["values"], b["values"])
    finally:
        for run in runs:
            run.close()


def test_a_cell_that_raises_inside_a_batch_is_its_own_error_and_the_others_are_done(
        tmp_path, monkeypatch):
    local, _, _ = _batched_run(monkeypatch, Scaled, tmp_path / "local", "inprocess")
    summary, cells, batches = _batched_run(monkeypatch, Scaled, tmp_path / "dask", "dask")
    line = (f"cells: {N_BATCHED} total, {N_BATCHED - 1} done (0 reused), 0 skipped, 1 error, "
            f"0 timeout")
    assert summary.line() == local.line() == line
    failing = cells.index[cells["method"] == f"test_dask_scaled[index={FAILS_AT}]"][0]
    assert cells.loc[failing, "status"] == "error"
    assert f"cell {FAILS_AT} fails on purpose" in cells.loc[failing, "reason"]
    # it failed inside a batch, which ran once: every cell submitted once, in the grid's order
    assert any(failing in batch and len(batch) > 1 for batch in batches), batches
    assert sum(batches, []) == local.cell_keys
    _assert_same_cells(tmp_path / "local", tmp_path / "dask")


def test_a_batch_whose_worker_dies_goes_again_cell_by_cell(tmp_path, monkeypatch):
    local, _, _ = _batched_run(monkeypatch, ScaledOrDies, tmp_path / "local", "process")
    summary, cells, batches = _batched_run(monkeypatch, ScaledOrDies, tmp_path / "dask",
                                           "dask")
    line = (f"cells: {N_BATCHED} total, {N_BATCHED - 1} done (0 reused), 0 skipped, 1 error, "
            f"0 timeout")
    assert summary.line() == local.line() == line
    dying = cells.index[cells["method"] == f"test_dask_scaled_or_dies[index={FAILS_AT}]"][0]
    assert "worker died" in cells.loc[dying, "reason"]
    # the batch that held it died with it; its cells went again one by one (the dying one
    # once more, alone), and none is lost
    big = next(batch for batch in batches if dying in batch and len(batch) > 1)
    after = batches[batches.index(big) + 1:]
    assert all(len(batch) == 1 for batch in after) and sum(after, []) == big
    _assert_same_cells(tmp_path / "local", tmp_path / "dask")


def test_a_batch_past_the_timeout_goes_again_cell_by_cell_and_only_its_slow_cell_times_out(
        tmp_path, monkeypatch):
    summary, cells, batches = _batched_run(monkeypatch, ScaledOrHangs, tmp_path / "dask",
                                           "dask", timeout=CELL_TIMEOUT)
    assert summary.line() == (f"cells: {N_BATCHED} total, {N_BATCHED - 1} done (0 reused), "
                              f"0 skipped, 0 error, 1 timeout")
    hangs = summary.cell_keys[FAILS_AT]  # one dataset, model and seed: the methods' order
    assert cells.loc[hangs, "status"] == "timeout"
    assert f"timeout of {CELL_TIMEOUT} s" in cells.loc[hangs, "reason"]
    big = next(batch for batch in batches if hangs in batch and len(batch) > 1)
    after = batches[batches.index(big) + 1:]
    assert all(len(batch) == 1 for batch in after) and sum(after, []) == big
    # each done cell holds its own numbers: the model's impurity importances (which sum to
    # one) times its index + 1
    run = RunResults.open(tmp_path / "dask")
    try:
        unscaled = [run.arrays(key)["values"] / (index + 1)
                    for index, key in enumerate(summary.cell_keys) if key != hangs]
    finally:
        run.close()
    for values in unscaled:
        np.testing.assert_allclose(values, unscaled[0], rtol=0, atol=1e-12)
    assert unscaled[0].sum() == pytest.approx(1.0, abs=1e-12)


def test_waiting_cells_are_errors_once_the_cluster_has_had_no_worker(monkeypatch):
    """Never a run that waits without end and without a word: when every worker of the
    cluster is gone and none joins, the waiting cells are recorded as errors, with the
    reason, after NO_WORKER_WAIT (here 0.3 s; the loop runs in a thread so that a regression
    fails the test instead of hanging the suite)."""
    import threading
    from types import SimpleNamespace

    from harness.core.registry import make_method

    monkeypatch.setattr(dask_executor, "NO_WORKER_WAIT", 0.3)

    class WorkerlessClient:
        status = "running"
        scheduler = SimpleNamespace(identity=lambda: {"workers": {}})

        def sync(self, function, *args, **kwargs):
            return function(*args, **kwargs)

        def cancel(self, futures):
            pass

    executor = SimpleNamespace(client=WorkerlessClient(), cluster=None, timeout=None,
                               scheduler="tcp://127.0.0.1:8786")
    model = object()
    tasks = [(SimpleNamespace(method=make_method("mdi"), key=f"cell{i}"),
              SimpleNamespace(model=model)) for i in range(3)]
    recorded = []
    run = dask_executor._Run(executor, tasks, lambda cell, result: recorded.append(
        (cell.key, result)))
    loop = threading.Thread(target=run.loop, daemon=True)
    loop.start()
    loop.join(timeout=60)
    assert not loop.is_alive(), "the run still waits for workers that never come"
    assert [key for key, _ in recorded] == ["cell0", "cell1", "cell2"]
    for _, result in recorded:
        assert result.status == "error"
        assert "had no running worker for 0.3 s" in result.reason
        assert "tcp://127.0.0.1:8786" in result.reason
