"""Dask executor: cells run on the worker processes of a Dask cluster.

Without a ``scheduler`` address, :class:`DaskExecutor` starts (and owns) a ``LocalCluster``
of ``jobs`` single-threaded worker processes; with one, it connects to that cluster and only
disconnects at the end. Results come back to the runner's process, which calls ``on_result``
and stays the only writer of the store.

Each fitted model is scattered once, to every worker, and every cell that explains it depends
on that copy; the copy is released when the model's last cell has finished. Cells go in
batches: one Dask task runs a few cells of one model in turn on one worker thread and returns
their results together, which are then stored at once, cell by cell. A task costs a few round
trips between the runner, the scheduler and the worker (about 10 ms on a busy machine),
which one task per cell would pay per cell. A batch is submitted only to a worker thread that
is free, one batch per thread, so its submission is its start and the per-cell ``timeout`` is
measured in the runner. A cell whose method class has not yet run a cell in this run goes
alone (its cost is unknown); then a batch takes the next cells of its model while their
expected time (a moving average of their classes' cells, measured on the worker) stays within
:data:`BATCH_SECONDS` (and ``timeout / BATCH_TIMEOUT_SHARE``), up to :data:`MAX_BATCH`
cells and an even share of the waiting cells per thread, so that results and progress keep
coming. Before a worker's first cell (a fresh or replacement worker too) the run's methods are
imported and compiled there (``prepare``), as the runner does before forking cells, so no
cell's timeout holds that one-off work.

Failures stay in their cell, as with :class:`harness.run.executors.process.ProcessExecutor`.
A cell that raises is its own ``error`` in its batch's results. A batch that fails as a whole
(its worker died, it ran past the timeout, it was lost) has its cells submitted again one by
one, so that the failure below lands on the cell that caused it and the others are done (the
cells of such a batch that had finished on the worker are computed again: their results
never reached the runner):

- a worker that dies in a cell (segfault, ``os._exit``, out-of-memory kill) makes that cell one
  ``error`` result (Dask's ``KilledWorker``, at the first death on an owned cluster) and the
  worker's nanny starts a fresh worker;
- a cell still running ``timeout`` seconds after its submission becomes a ``timeout`` result
  and is cancelled. Cancelling cannot stop code stuck in C, so on an owned cluster its worker
  process is killed as well and replaced by its nanny; any other cell that was running there is
  submitted again. An external cluster's workers are not ours to kill: the cell is only
  cancelled, and its worker thread gets no further cell of this run until it is free again; if
  every thread stays busy that way for another ``timeout`` seconds, the cells still waiting
  become ``error`` results (a later run retries them).
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import time
import traceback
import uuid
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from harness.core.errors import BadInputError, HarnessError, NotInstalledError
from harness.run.cell_result import CellResult
from harness.run.cells import Cell
from harness.run.execute import CellInput, prepare_methods, run_one
from harness.run.executors.process import OnProgress, OnResult, Task

INSTALL_HINT = "pip install 'dask[distributed]' (or the tree-importance-harness[dask] extra)"
#: Seconds to wait for an external scheduler before giving up.
CONNECT_TIMEOUT = 10.0
#: Seconds between two looks for a free worker thread while cells wait.
POLL_INTERVAL = 0.25
#: Submissions of one cell whose model copy was lost with another cell's dead worker.
MAX_ATTEMPTS = 3
#: Most cells of one batch (one Dask task): a bound on what one lost batch costs again.
MAX_BATCH = 64
#: Expected seconds of one batch at most (from its cells' method classes' seconds per cell so
#: far, :data:`COST_WEIGHT`), so that results and progress keep arriving; with a ``timeout``,
#: at most ``timeout / BATCH_TIMEOUT_SHARE``, so that a batch is far inside the timeout it
#: runs under.
BATCH_SECONDS = 0.25
BATCH_TIMEOUT_SHARE = 20
#: Weight of a cell's seconds in its method class's expected seconds (a moving average: the
#: largest so far would stop batching for the rest of a run after one cell that a busy
#: machine held up, and the first cell of a class, which pays first-call costs, would too).
COST_WEIGHT = 0.2
#: Submissions of one cell whose own worker left an external cluster (killed, crashed or
#: stopped): once more elsewhere, then an ``error``, so that a cell that kills its worker
#: costs a user's cluster two workers at most.
MAX_WORKER_LOSSES = 2
#: How long an owned LocalCluster waits for a lost worker's replacement before it closes the
#: worker's nanny (Dask's default is 15 s): as long as a run may last.
LOST_WORKER_WAIT = "3650 days"
#: Seconds a run waits with waiting cells and no running worker in the cluster (every one
#: died or was stopped, none joined) before it records them as errors: never a run that
#: waits without end and without a word.
NO_WORKER_WAIT = 120.0
#: Loggers of the client side that report a lost scheduler or worker at length; while a run
#: uses an external cluster they are quiet, and the runner says it in one line.
CLIENT_LOGGERS = ("distributed.client", "distributed.core", "distributed.comm",
                  "distributed.batched", "distributed.utils")


class SchedulerLostError(HarnessError):
    """The run's connection to its Dask scheduler broke: the run stops (cells stored so far are
    kept; a rerun against a scheduler resumes)."""


def _import_distributed():
    try:
        import dask
        import distributed
    except ImportError as exc:
        raise NotInstalledError(
            f"executor='dask' needs the dask and distributed packages, which could not be "
            f"imported ({exc}). Install them with {INSTALL_HINT}."
        ) from exc
    return dask, distributed


def _run_cell(cell: Cell, model: Any, data: Any, sample_index: Any) -> CellResult:
    """Worker side of a cell: :func:`harness.run.execute.run_one` on the worker's model copy."""
    try:
        return run_one(cell, CellInput(model=model, data=data, sample_index=sample_index))
    except BaseException as exc:  # run_one catches Exception; this is for the rest
        return CellResult.failure("error", f"{type(exc).__name__}: {exc}",
                                  traceback.format_exc())


@dataclass
class _Batch:
    """Cells of one model sent as one task: (cell, data, sample_index) each. A plain object,
    so that Dask does not walk the list looking for futures in it."""

    cells: list[tuple[Cell, Any, Any]]


def _run_cells(batch: _Batch, model: Any) -> list[tuple[CellResult, float]]:
    """Worker side of a batch: each cell in turn (a failure stays in its cell's result),
    with the seconds it took here, which size the run's next batches."""
    results = []
    for cell, data, sample_index in batch.cells:
        start = time.perf_counter()
        result = _run_cell(cell, model, data, sample_index)
        results.append((result, time.perf_counter() - start))
    return results


def cluster_workers(client: Any) -> dict[str, dict]:
    """The scheduler's workers (address: information), asked of the scheduler itself.

    Not ``client.scheduler_info()``: it refreshes the client's cached identity and returns
    the cache, which the client's periodic refresh (every
    ``distributed.client.scheduler-info-interval``) may overwrite in between with an identity
    that lists no worker (``n_workers=0``, distributed >= 2025). Read so, a live worker
    looks gone, and the run would take it for lost and never give it a cell again.
    """
    return client.sync(client.scheduler.identity)["workers"]


def _thread_is_free() -> None:
    """Probe task: it starts only once its worker has a free thread again."""


class DaskExecutor:
    """Run cells on a Dask cluster, in batches, one per worker thread, each cell with a hard
    ``timeout``.

    Parameters
    ----------
    jobs : int
        Worker processes of the owned ``LocalCluster`` (one thread each). Ignored with
        ``scheduler``: the external cluster's worker threads set the parallelism.
    timeout : float or None
        Seconds a cell may run, counted in the runner from its submission to a free thread.
    max_memory : float or None
        Memory limit in bytes of each owned worker (its nanny kills it above 95% of the limit,
        and its cell becomes an ``error``); None for no limit. Ignored with ``scheduler``.
    scheduler : str or None
        Address of a running Dask scheduler (``tcp://host:8786``); None starts a LocalCluster.
    **options
        ``connect_timeout``: seconds to reach ``scheduler`` (default :data:`CONNECT_TIMEOUT`).
        Options of :func:`harness.run.executors.make_executor` that do not apply are
        ignored.

    Raises
    ------
    NotInstalledError
        If dask or distributed cannot be imported.
    BadInputError
        If ``scheduler`` is not an address, or no scheduler answers there in time.
    """

    name = "dask"
    #: cells run on the workers, each prepared there before its first cell (warm_up): the
    #: runner does not load the kernels into its own process for them
    cells_run_here = False

    def __init__(self, jobs: int = 1, timeout: float | None = None,
                 max_memory: float | None = None, scheduler: str | None = None,
                 **options: Any) -> None:
        dask, distributed = _import_distributed()
        self.dask, self.distributed = dask, distributed
        self.jobs = max(1, int(jobs))
        self.timeout = timeout
        self.scheduler = scheduler
        self.cluster = None
        self.quieted: dict[str, int] = {}
        if scheduler is None:
            # A worker's death is its cell's, as for a forked cell: no retry elsewhere. Every
            # worker keeps its model copies (the memory manager would drop the extra ones).
            settings = {"distributed.scheduler.allowed-failures": 0,
                        "distributed.scheduler.active-memory-manager.start": False}
            with dask.config.set(settings):
                self.cluster = distributed.LocalCluster(
                    n_workers=self.jobs, threads_per_worker=1, processes=True,
                    memory_limit=int(max_memory) if max_memory else 0,
                    dashboard_address=None, silence_logs=logging.CRITICAL,
                    # no dashboard, and its HTTP routes on a free port: the default 8787,
                    # taken by another cluster on a shared machine, prints a warning
                    scheduler_kwargs={"dashboard_address": ":0"},
                )
            self.client = distributed.Client(self.cluster, set_as_default=False)
            return
        if not isinstance(scheduler, str) or not scheduler:
            raise BadInputError(f"scheduler must be a Dask scheduler address such as "
                                f"'tcp://host:8786', or None; got {scheduler!r}.")
        connect_timeout = float(options.get("connect_timeout") or CONNECT_TIMEOUT)
        self.quieted = {name: logging.getLogger(name).level for name in CLIENT_LOGGERS}
        for name in CLIENT_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        try:
            self.client = distributed.Client(scheduler, timeout=connect_timeout,
                                             set_as_default=False)
        except Exception as exc:
            self.close()
            raise BadInputError(
                f"scheduler must be the address of a running Dask scheduler; got {scheduler!r}, "
                f"where none answered within {connect_timeout:g} s ({type(exc).__name__}: "
                f"{exc}). Start one (`dask scheduler`) or pass scheduler=None for a local cluster."
            ) from exc

    def close(self) -> None:
        """Disconnect; an owned LocalCluster is shut down, an external one keeps running."""
        client, self.client = getattr(self, "client", None), None
        if client is not None:
            try:
                client.close(timeout=CONNECT_TIMEOUT)
            except Exception:  # a scheduler gone already: nothing left to disconnect from
                pass
        for name, level in getattr(self, "quieted", {}).items():
            logging.getLogger(name).setLevel(level)
        self.quieted = {}
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.close()

    def run(self, tasks: list[Task], on_result: OnResult,
            on_progress: OnProgress | None = None) -> None:
        """Run every task and call ``on_result(cell, result)`` once per task, here. A cell's
        own progress stays on its worker (``on_progress`` is never called)."""
        if self.cluster is None:
            _Run(self, tasks, on_result).loop()
            return
        # An owned worker killed (its cell's timeout) is replaced by its nanny; but the
        # LocalCluster closes a nanny for good when no worker of its name has joined
        # `lost-worker-timeout` (15 s) after one left, which a second kill during the
        # replacement's start (seconds, imports) meets, leaving the run without workers.
        with self.dask.config.set({"distributed.deploy.lost-worker-timeout": LOST_WORKER_WAIT}):
            _Run(self, tasks, on_result).loop()

    def worker_pid(self, address: str) -> int | None:
        """Process id of an owned worker (its nanny lives in this process)."""
        for nanny in list(self.cluster.workers.values()):
            if getattr(nanny, "worker_address", None) == address:
                return nanny.pid
        return None


@dataclass
class _SharedModel:
    """A fitted model, its copy on the cluster and how many of its cells are unfinished."""

    model: Any
    remaining: int = 0
    future: Any = None


@dataclass
class _Waiting:
    """A cell waiting for a thread: its submissions so far + 1 (``attempt``), and whether it
    must go alone (it was in a batch that failed as a whole, so its own fate is unknown)."""

    cell: Cell
    inputs: CellInput
    attempt: int = 1
    alone: bool = False


@dataclass
class _Flight:
    """A submitted batch (one cell or more, one model, in order on one worker thread)."""

    batch: list[_Waiting]
    worker: str
    future: Any
    model_future: Any
    deadline: float | None


class _Run:
    """State of one :meth:`DaskExecutor.run`: waiting cells, batches in flight, busy threads."""

    def __init__(self, executor: DaskExecutor, tasks: list[Task], on_result: OnResult) -> None:
        self.executor = executor
        self.client = executor.client
        self.on_result = on_result
        self.done: queue.Queue = queue.Queue()  # futures, put by their done callbacks
        self.pending = deque(_Waiting(cell, inputs) for cell, inputs in tasks)
        self.running: dict[str, _Flight] = {}  # by future key
        self.probes: dict[str, tuple[Any, str]] = {}  # key: (future, worker address)
        self.busy: Counter[str] = Counter()  # threads in use per worker address
        self.retired: set[str] = set()  # dead or killed workers: never given a cell again
        self.held_since: dict[str, float] = {}  # when a stall began (held_too_long)
        self.threads: dict[str, int] = {}  # worker address -> threads, as last asked
        self.asked = -float("inf")  # when the scheduler was last asked for its workers
        self.models: dict[int, _SharedModel] = {}
        for _, inputs in tasks:
            self.models.setdefault(id(inputs.model), _SharedModel(inputs.model)).remaining += 1
        self.method_classes = sorted({type(cell.method) for cell, _ in tasks},
                                     key=lambda cls: cls.name)
        self.warm: set[str] = set()  # workers that imported and compiled the methods
        self.cost: dict[type, float] = {}  # seconds of a cell of each method class, on its worker
        timeout = executor.timeout
        self.batch_seconds = BATCH_SECONDS if not timeout else min(
            BATCH_SECONDS, timeout / BATCH_TIMEOUT_SHARE)

    def loop(self) -> None:
        try:
            while self.pending or self.running:
                self.check_connection()
                try:
                    self.refresh_workers()
                    if self.pending:
                        self.fill_threads()
                except OSError as exc:  # CommClosedError, a refused or timed-out connection
                    raise self.lost(exc) from exc
                if not (self.pending or self.running):
                    break  # the last waiting cells were given up
                try:
                    self.settle(self.done.get(timeout=self.wait_time()))
                    while not self.done.empty():
                        self.settle(self.done.get_nowait())
                except queue.Empty:
                    pass
                self.stop_expired()
        finally:
            futures = [f.future for f in self.running.values()]
            futures += [future for future, _ in self.probes.values()]
            if futures and self.client is not None and self.client.status == "running":
                self.client.cancel(futures)

    def check_connection(self) -> None:
        """Raise :class:`SchedulerLostError` once the client has lost its scheduler."""
        if self.client.status != "running":
            raise self.lost(None)

    def lost(self, cause: BaseException | None) -> SchedulerLostError:
        """The one line that stops a run whose scheduler is gone; the cells in flight are left
        unrecorded, for the rerun to compute."""
        where = self.executor.scheduler or "of the local cluster"
        why = f" ({type(cause).__name__}: {' '.join(str(cause).split())})" if cause else ""
        in_flight = sum(len(f.batch) for f in self.running.values())
        return SchedulerLostError(
            f"lost the connection to the Dask scheduler {where} mid-run{why}; the cells "
            f"finished before are stored, the {in_flight} in flight are not: start a "
            f"scheduler and its workers and run the same command again to resume")

    def refresh_workers(self) -> None:
        """Ask the scheduler for its running workers at most every POLL_INTERVAL seconds (a
        round trip per cell would be most of the overhead of a short cell), and take the
        cells of workers that left the cluster back (:meth:`lose_worker`)."""
        now = time.monotonic()
        if now - self.asked < POLL_INTERVAL:
            return
        self.asked = now
        workers = cluster_workers(self.client)
        self.threads = {address: int(info.get("nthreads", 1))
                        for address, info in workers.items() if address not in self.retired
                        and info.get("status", "running") == "running"}
        if self.executor.cluster is not None:
            return  # an owned worker's death is its cell's error (KilledWorker), as documented
        gone = {f.worker for f in self.running.values()} | set(self.busy)
        for address in gone - set(workers):
            self.lose_worker(address)

    def lose_worker(self, address: str) -> None:
        """A worker left the cluster (killed, crashed, or shut down): its cells go back to
        the queue (at most MAX_WORKER_LOSSES submissions each, then ``error``; the cells of a
        lost batch go alone, as which of them stopped the worker is unknown). They were
        submitted to it alone, so the scheduler holds them for it and runs them nowhere else:
        cancelling them here means each cell runs once at a time."""
        self.retired.add(address)
        self.busy.pop(address, None)
        for key, (future, worker) in list(self.probes.items()):
            if worker == address:
                del self.probes[key]
                self.client.cancel([future])
        lost = [f for f in self.running.values() if f.worker == address]
        for flight in lost:
            del self.running[flight.future.key]
            self.client.cancel([flight.future])
            alone = len(flight.batch) > 1
            for waiting in reversed(flight.batch):
                if waiting.attempt < MAX_WORKER_LOSSES:
                    self.pending.appendleft(_Waiting(waiting.cell, waiting.inputs,
                                                     waiting.attempt + 1, alone))
                else:
                    self.finish(waiting, CellResult.failure(
                        "error", f"the cell's worker left the cluster before returning a "
                                 f"result, {waiting.attempt} times (last {address}: killed, "
                                 f"crashed or shut down)"))

    def finish(self, waiting: _Waiting, result: CellResult) -> None:
        shared = self.models[id(waiting.inputs.model)]
        shared.remaining -= 1
        if shared.remaining == 0:
            shared.future = None  # the cluster drops its copy
        self.on_result(waiting.cell, result)

    def fill_threads(self) -> None:
        """Submit batches of waiting cells to free worker threads (or give up if none will
        free up)."""
        threads = {a: n for a, n in self.threads.items() if a not in self.retired}
        total = sum(threads.values())
        for address, nthreads in threads.items():
            if self.pending and self.busy[address] < nthreads:
                self.warm_up(address)
            while (self.pending and self.busy[address] < nthreads
                   and address not in self.retired):
                self.submit(address, self.take_batch(total))
        # nothing in flight and cells waiting: every thread stuck, or no worker at all
        waiting = bool(self.pending and not self.running)
        if self.held_too_long("stuck", waiting and bool(threads), self.executor.timeout or 0):
            self.give_up(f"not run: every worker thread of the cluster at "
                         f"{self.executor.scheduler} stayed busy with cancelled cells that "
                         f"exceeded the per-cell timeout; restart its workers and run again")
        if self.held_too_long("workerless", waiting and not threads, NO_WORKER_WAIT):
            scheduler = self.executor.scheduler
            cluster = f"the Dask cluster at {scheduler}" if scheduler else "the local Dask cluster"
            self.give_up(f"not run: {cluster} had no running worker for {NO_WORKER_WAIT:g} s "
                         f"(every worker died or was stopped); start workers and run the "
                         f"same command again to resume")

    def held_too_long(self, what: str, holds: bool, limit: float) -> bool:
        """Whether ``holds`` has been true at every call since more than ``limit`` seconds
        ago (one clock per ``what``, reset when it is false)."""
        if not holds:
            self.held_since.pop(what, None)
            return False
        now = time.monotonic()
        return now - self.held_since.setdefault(what, now) > limit

    def give_up(self, reason: str) -> None:
        """Record every waiting cell as an error with ``reason``."""
        while self.pending:
            self.finish(self.pending.popleft(), CellResult.failure("error", reason))

    def take_batch(self, threads: int) -> list[_Waiting]:
        """The next cells to submit together: the first waiting cell, and the ones after it
        while they share its model, their method classes have each run a cell already (a
        cell of unknown cost goes alone, so a slow or hanging one holds no other), the
        batch's expected time stays within ``batch_seconds`` and its size within
        MAX_BATCH and an even share of the waiting cells among the cluster's threads."""
        first = self.pending.popleft()
        batch = [first]
        spent = self.cost.get(type(first.cell.method))
        if first.alone or spent is None:
            return batch
        limit = min(MAX_BATCH, -(-(len(self.pending) + 1) // max(1, threads)))
        while self.pending and len(batch) < limit:
            following = self.pending[0]
            cost = self.cost.get(type(following.cell.method))
            if (following.alone or cost is None or following.inputs.model is not
                    first.inputs.model or spent + cost > self.batch_seconds):
                break
            batch.append(self.pending.popleft())
            spent += cost
        return batch

    def warm_up(self, address: str) -> None:
        """Import and compile the run's methods on a worker before its first cell (a fresh
        or replacement worker too), so that a cell's timeout, counted from its submission,
        never holds them."""
        if address in self.warm:
            return
        self.warm.add(address)
        try:
            self.client.run(prepare_methods, self.method_classes, workers=[address])
        except Exception:  # a worker gone meanwhile: its cells report that themselves
            pass

    def submit(self, address: str, batch: list[_Waiting]) -> None:
        shared = self.models[id(batch[0].inputs.model)]
        if shared.future is None or shared.future.status != "finished":
            # One copy, on the worker of this batch; a batch elsewhere has its worker fetch
            # it (each batch is pinned to its worker, so placement is ours, not the data's).
            # Not a broadcast: the scheduler's replication to every worker waits without end
            # for a worker that died meanwhile, and the scatter with it.
            try:
                shared.future = self.client.scatter([shared.model], workers=[address],
                                                    hash=False)[0]
            except OSError:
                raise
            except Exception:  # the worker left since the scheduler was last asked
                self.retired.add(address)
                self.asked = -float("inf")  # ask again, and take back its cells
                self.pending.extendleft(reversed(batch))
                return
        first = batch[0].cell
        future = self.client.submit(
            _run_cells, _Batch([(w.cell, w.inputs.data, w.inputs.sample_index) for w in batch]),
            shared.future,
            key=f"harness-{first.method.name}-{first.key}-{len(batch)}-{uuid.uuid4().hex[:8]}",
            pure=False,
            # on this worker only: if it dies, the batch waits for us (lose_worker) instead
            # of running elsewhere beside a batch that already holds that thread
            workers=[address], allow_other_workers=False,
        )
        timeout = self.executor.timeout
        deadline = time.monotonic() + timeout if timeout else None
        self.running[future.key] = _Flight(batch, address, future, shared.future, deadline)
        self.busy[address] += 1
        future.add_done_callback(self.done.put)

    def wait_time(self) -> float | None:
        deadlines = [f.deadline for f in self.running.values() if f.deadline is not None]
        wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        # a worker may join, leave, come back or finish a cancelled cell meanwhile
        wait = POLL_INTERVAL if wait is None else min(wait, POLL_INTERVAL)
        return wait

    def settle(self, future: Any) -> None:
        """Handle a future that finished: a probe frees its thread, a batch gives each of its
        cells its result (stored at once, in the batch's order)."""
        if future.status == "cancelled" and self.client.status != "running":
            self.check_connection()  # cancelled because the scheduler is gone
        if future.key in self.probes:
            _, worker = self.probes.pop(future.key)
            self.busy[worker] -= 1
            return
        flight = self.running.pop(future.key, None)
        if flight is None:  # timed out or submitted again already
            return
        self.busy[flight.worker] -= 1
        results = self.outcome(flight)
        if results is None:  # lost as a whole: its cells wait again, alone if it was a batch
            alone = len(flight.batch) > 1
            self.pending.extendleft(
                _Waiting(w.cell, w.inputs, w.attempt + (not alone), alone or w.alone)
                for w in reversed(flight.batch))
            return
        for waiting, (result, seconds) in zip(flight.batch, results, strict=True):
            kind = type(waiting.cell.method)
            known = self.cost.get(kind, seconds)
            self.cost[kind] = known + COST_WEIGHT * (seconds - known)
            self.finish(waiting, result)

    def outcome(self, flight: _Flight) -> list[tuple[CellResult, float]] | None:
        """Each cell's result and seconds on its worker, from the batch's finished future;
        None to submit its cells again (a batch of more than one cell that failed as a whole
        goes again cell by cell, so that the failure lands on the cell that caused it)."""
        single = len(flight.batch) == 1
        try:
            return flight.future.result()
        except self.executor.distributed.KilledWorker as exc:
            self.retired.update({flight.worker, exc.last_worker.address})
            if not single:
                return None
            return [(CellResult.failure(
                "error", f"the cell's worker died before returning a result (segfault, "
                         f"os._exit, out-of-memory or external kill); Dask reported "
                         f"KilledWorker for worker {exc.last_worker.address}"), 0.0)]
        except Exception as exc:
            lost = (flight.model_future.status != "finished"
                    or getattr(exc, "reason", None) == "lost dependencies")
            attempt = flight.batch[0].attempt
            if flight.future.status == "cancelled" and lost and attempt < MAX_ATTEMPTS:
                return None  # its model's last copy died with another batch's worker
            if not single:
                return None
            return [(CellResult.failure("error", f"{type(exc).__name__}: {exc}",
                                        "".join(traceback.format_exception(exc))), 0.0)]

    def stop_expired(self) -> None:
        now = time.monotonic()
        expired = [f for f in self.running.values()
                   if f.deadline is not None and now >= f.deadline and not f.future.done()]
        for flight in expired:
            if self.running.pop(flight.future.key, None) is None:  # resubmitted already
                continue
            reason = self.stop(flight)
            if len(flight.batch) == 1:
                self.finish(flight.batch[0], CellResult.failure("timeout", reason))
            else:  # which cell ran long is unknown: each goes again alone, with its timeout
                self.pending.extendleft(_Waiting(w.cell, w.inputs, w.attempt, True)
                                        for w in reversed(flight.batch))

    def stop(self, flight: _Flight) -> str:
        """Cancel a batch past its timeout and free its thread; the timeout's reason."""
        reason = f"exceeded the per-cell timeout of {self.executor.timeout:g} s"
        on_worker = {address: set(keys) for address, keys in self.client.processing().items()}
        worker = next((a for a, keys in on_worker.items() if flight.future.key in keys), None)
        self.client.cancel([flight.future])
        self.busy[flight.worker] -= 1
        if worker is None:  # not started anywhere: nothing else to stop
            return reason
        if self.executor.cluster is not None:  # ours to kill
            pid = self.executor.worker_pid(worker)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)  # its nanny starts a fresh worker
                except ProcessLookupError:
                    pass
            self.retired.add(worker)
            lost = [f for key, f in self.running.items()
                    if f.worker == worker or key in on_worker[worker]]
            for other in lost:
                del self.running[other.future.key]  # lost with the worker: run it again
                self.busy[other.worker] -= 1
                self.client.cancel([other.future])
                self.pending.extendleft(reversed(other.batch))
            return reason
        probe = self.client.submit(_thread_is_free, key=f"harness-probe-{uuid.uuid4().hex}",
                                   pure=False, workers=[worker], allow_other_workers=False)
        self.probes[probe.key] = (probe, worker)
        self.busy[worker] += 1
        probe.add_done_callback(self.done.put)
        return (f"{reason}; cancelled on the external cluster's worker {worker}, which was not "
                f"restarted and may still be running it")
