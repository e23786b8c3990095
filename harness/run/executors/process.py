"""The process executor: cells in forked worker processes, bounded in time and memory.

:class:`ProcessExecutor` (the default) forks ``jobs`` worker processes that run one cell at a
time each. A worker inherits the fitted models, gets the index of its next cell and sends back
the result through a pipe; a hard per-cell ``timeout`` kills it and ``max_memory`` caps what
it may allocate (Linux). An
exception, a hang, a memory overrun or a crash of the child (segfault, ``os._exit``,
out-of-memory kill) becomes one ``error``/``timeout`` result, never the run's. A child never
outlives its runner: it asks the kernel for SIGKILL when its parent dies (Linux
``PR_SET_PDEATHSIG``) and arms its own alarm a little past the timeout, so neither a killed
runner nor a stopped one leaves a hung cell running. :func:`call_bounded` gives the same
bounds to other work of the runner, such as fitting a model.
"""

from __future__ import annotations

import ctypes
import math
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from harness.run.cell_result import CellResult
from harness.run.cells import Cell
from harness.run.execute import CellInput, run_one

OnResult = Callable[[Cell, CellResult], None]
OnProgress = Callable[[Cell, float], None]
Task = tuple[Cell, CellInput]
#: least time between two progress messages of a worker (a sampling method may report often)
PROGRESS_INTERVAL = 0.5
PROGRESS = "progress"  # the tag of a worker's ``(PROGRESS, fraction)`` messages


class _ProgressSender:
    """A cell's progress callback in a worker: sends ``(PROGRESS, fraction)`` through the
    pipe, at most every :data:`PROGRESS_INTERVAL` seconds."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.last = -math.inf

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_INTERVAL:
            self.last = now
            self.connection.send((PROGRESS, float(fraction)))


def _limit_memory(max_memory: float) -> None:
    """Cap this process's address space at its current size plus ``max_memory`` bytes
    (RLIMIT_AS; Linux counts the inherited mappings, hence the current size is added)."""
    import resource

    with open("/proc/self/statm") as handle:
        current = int(handle.read().split()[0]) * resource.getpagesize()
    limit = current + int(max_memory)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def memory_limit_reason(result: CellResult, max_memory: float) -> CellResult:
    """Name the per-cell memory limit in the reason of a cell that ran out of memory."""
    reason = result.reason or ""
    if result.status == "error" and reason.startswith("MemoryError"):
        result = result.with_reason(f"exceeded the per-cell memory limit of "
                                    f"{max_memory / 2**20:.0f} MiB ({reason})")
    return result


#: Seconds past the timeout at which a child's own alarm ends it, should its runner not.
ALARM_GRACE = 5.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux), and exit now if
    the parent is already gone (it may have died between the fork and this call)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the alarm below still bounds the child
            pass
    if os.getppid() != parent:
        os._exit(1)


def _arm_alarm(timeout: float | None) -> None:
    """End this process with SIGALRM (default action: terminate) a little past ``timeout``."""
    if timeout is not None and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(math.ceil(timeout + ALARM_GRACE))


def bound_child(parent: int, timeout: float | None, max_memory: float | None) -> None:
    """What every forked child of the harness does first: die with its parent, end itself
    past its time limit, and cap its memory."""
    _die_with_parent(parent)
    _arm_alarm(timeout)
    if max_memory is not None and os.path.exists("/proc/self/statm"):
        _limit_memory(max_memory)


def _child(writer, compute: Callable[[], Any], parent: int, timeout: float | None,
           max_memory: float | None) -> None:
    """Body of every forked child: bound it, compute its outcome, send that back through
    ``writer`` (a :class:`CellResult` if it failed) and exit without the parent's cleanup."""
    try:
        bound_child(parent, timeout, max_memory)
        outcome = compute()
    except BaseException as exc:  # run_one catches Exception; this is for the rest
        outcome = CellResult.failure("error", f"{type(exc).__name__}: {exc}",
                                     traceback.format_exc())
    if max_memory is not None and isinstance(outcome, CellResult):
        outcome = memory_limit_reason(outcome, max_memory)
    try:
        writer.send(outcome)
    except Exception as exc:
        writer.send(CellResult.failure("error", f"the result could not be sent back: {exc}"))
    writer.close()
    os._exit(0)


def _death_reason(exitcode: int | None, whose: str = "the cell's process") -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"{whose} was killed by {name} before returning a result"
    return f"{whose} exited with code {exitcode} before returning a result"


@dataclass
class _Value:
    """A bounded call's return value, told apart from a failure on its way back."""

    value: Any


def call_bounded(function: Callable, args: tuple, timeout: float | None,
                 max_memory: float | None, what: str) -> tuple[Any, CellResult | None]:
    """Call ``function(*args)`` in a forked child bounded like a cell.

    Returns ``(value, None)``, or ``(None, failure)`` with an ``error``/``timeout``
    :class:`CellResult` whose reason names ``what`` (e.g. "fitting the model") and the limit it
    exceeded. The value comes back through a pipe from a child this process started, so only
    our own objects are unpickled. Used by the runner for work that would otherwise run
    unbounded in its own process, such as fitting a model.
    """
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=_child, daemon=True,
                              args=(writer, lambda: _Value(function(*args)), os.getpid(),
                                    timeout, max_memory))
    process.start()
    writer.close()
    try:
        if not reader.poll(timeout):
            return None, CellResult.failure(
                "timeout", f"{what} exceeded the time limit of {timeout:g} s")
        try:
            outcome = reader.recv()
        except (EOFError, OSError):
            process.join(timeout=10)
            return None, CellResult.failure(
                "error", f"{what} failed: {_death_reason(process.exitcode, 'its process')}")
        if isinstance(outcome, CellResult):
            return None, outcome.with_reason(f"{what} failed: {outcome.reason}")
        return outcome.value, None
    finally:
        reader.close()
        if process.is_alive():
            process.kill()
        process.join()


def _address_space() -> int:
    """Bytes of this process's address space (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _serve(connection, tasks: list[Task], parent: int, timeout: float | None,
           max_memory: float | None) -> None:
    """Body of a forked cell worker: run the cells whose indices come through ``connection``
    (None: exit), each under its own alarm, and send back ``(result, retiring)``, after any
    number of ``(PROGRESS, fraction)`` messages while the cell runs.

    The worker retires (exits after sending) when its address space has grown by more than
    half of ``max_memory`` since the fork: its memory cap (:func:`bound_child`) was set at the
    fork, so a fresh worker gives the next cell its whole headroom again.
    """
    try:
        bound_child(parent, None, max_memory)
        start = _address_space()
        while True:
            index = connection.recv()
            if index is None:
                break
            _arm_alarm(timeout)
            try:
                result = run_one(*tasks[index], _ProgressSender(connection))
            except BaseException as exc:  # run_one catches Exception; this is for the rest
                result = CellResult.failure("error", f"{type(exc).__name__}: {exc}",
                                            traceback.format_exc())
            if timeout is not None and hasattr(signal, "SIGALRM"):
                signal.alarm(0)
            if max_memory is not None:
                result = memory_limit_reason(result, max_memory)
            retiring = bool(max_memory) and _address_space() - start > max_memory / 2
            try:
                connection.send((result, retiring))
            except Exception as exc:
                connection.send((CellResult.failure(
                    "error", f"the result could not be sent back: {exc}"), True))
                retiring = True
            if retiring:
                break
    except (EOFError, OSError, KeyboardInterrupt):  # the runner is gone or stopping
        pass
    os._exit(0)


@dataclass
class _Worker:
    """A forked cell worker, its end of the pipe and the cell it runs (None: idle)."""

    process: Any
    connection: Any
    index: int | None = None
    deadline: float | None = None

    def stop(self) -> None:
        self.process.kill()
        self.process.join()
        self.connection.close()


class ProcessExecutor:
    """Cells in ``jobs`` forked worker processes, each cell killed after ``timeout`` seconds.

    A worker is forked once and runs cell after cell (a fork of the runner costs tens of
    milliseconds, which a fork per cell paid every time), each cell under its own alarm. A
    worker that dies in a cell (segfault, ``os._exit``, a kill) makes that cell one ``error``
    result; one past the timeout is killed and its cell is a ``timeout``; a cell that ends in
    ``error`` takes its worker along (an exception may leave the process in a bad state). The
    next cell then gets a fresh fork, which holds every model: the runner fits them all before
    the executor starts.
    """

    name = "process"
    cells_run_here = True  # forked cells inherit what the runner prepared

    def __init__(self, jobs: int = 1, timeout: float | None = None,
                 max_memory: float | None = None, **options) -> None:
        self.jobs = max(1, int(jobs))
        self.timeout = timeout
        self.max_memory = max_memory

    def _fork(self, context, tasks: list[Task]) -> _Worker:
        ours, theirs = context.Pipe(duplex=True)
        process = context.Process(target=_serve, daemon=True,
                                  args=(theirs, tasks, os.getpid(), self.timeout,
                                        self.max_memory))
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def run(self, tasks: list[Task], on_result: OnResult,
            on_progress: OnProgress | None = None) -> None:
        context = multiprocessing.get_context("fork")
        pending = deque(range(len(tasks)))
        idle: list[_Worker] = []
        busy: dict[Any, _Worker] = {}  # by connection
        try:
            while pending or busy:
                while pending and len(busy) < self.jobs:
                    worker = idle.pop() if idle else self._fork(context, tasks)
                    worker.index = pending.popleft()
                    try:
                        worker.connection.send(worker.index)
                    except OSError:  # died while idle: a fresh fork takes the cell
                        pending.appendleft(worker.index)
                        worker.stop()
                        continue
                    worker.deadline = (time.monotonic() + self.timeout) if self.timeout else None
                    busy[worker.connection] = worker
                deadlines = [w.deadline for w in busy.values() if w.deadline is not None]
                wait_for = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
                for connection in wait(list(busy), timeout=wait_for):
                    worker = busy[connection]
                    cell = tasks[worker.index][0]
                    try:
                        message = connection.recv()
                        if isinstance(message[0], str):  # (PROGRESS, fraction): still runs
                            if on_progress is not None:
                                on_progress(cell, message[1])
                            continue
                        result, retiring = message
                    except (EOFError, OSError):
                        worker.process.join(timeout=10)
                        result, retiring = CellResult.failure(
                            "error", _death_reason(worker.process.exitcode)), True
                    del busy[connection]
                    if retiring or result.status == "error":
                        worker.stop()
                    else:
                        idle.append(worker)
                    on_result(cell, result)
                now = time.monotonic()
                for connection, worker in list(busy.items()):
                    if worker.deadline is not None and now >= worker.deadline:
                        del busy[connection]
                        worker.stop()
                        on_result(tasks[worker.index][0], CellResult.failure(
                            "timeout", f"exceeded the per-cell timeout of {self.timeout:g} s"))
        finally:
            for worker in [*busy.values(), *idle]:
                worker.stop()
