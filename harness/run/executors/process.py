"""The process executor: one forked child per cell, bounded in time and memory.

:class:`ProcessExecutor` (the default) forks one child process per cell, up to ``jobs`` at a
time. The child inherits the fitted models, sends back its result through a pipe and exits; a
hard per-cell ``timeout`` kills it and ``max_memory`` caps what it may allocate (Linux). An
exception, a hang, a memory overrun or a crash of the child (segfault, ``os._exit``,
out-of-memory kill) becomes one ``error``/``timeout`` result, never the run's. A child never
outlives its runner: it asks the kernel for SIGKILL when its parent dies (Linux
``PR_SET_PDEATHSIG``) and arms its own alarm a little past the timeout, so neither a killed
runner nor a stopped one leaves a hung cell running. :func:`call_bounded` gives the same
bounds to other work of the runner, such as fitting a model.
"""

from __future__ import annotations

import ctypes
import functools
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
Task = tuple[Cell, CellInput]


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


class ProcessExecutor:
    """One forked child per cell, ``jobs`` at a time, each killed after ``timeout`` seconds."""

    name = "process"

    def __init__(self, jobs: int = 1, timeout: float | None = None,
                 max_memory: float | None = None, **options) -> None:
        self.jobs = max(1, int(jobs))
        self.timeout = timeout
        self.max_memory = max_memory

    def run(self, tasks: list[Task], on_result: OnResult) -> None:
        context = multiprocessing.get_context("fork")
        pending = deque(tasks)
        running: dict = {}
        try:
            while pending or running:
                while pending and len(running) < self.jobs:
                    cell, inputs = pending.popleft()
                    reader, writer = context.Pipe(duplex=False)
                    process = context.Process(
                        target=_child, daemon=True,
                        args=(writer, functools.partial(run_one, cell, inputs), os.getpid(),
                              self.timeout, self.max_memory))
                    process.start()
                    writer.close()
                    deadline = (time.monotonic() + self.timeout) if self.timeout else None
                    running[reader] = (process, cell, deadline)
                deadlines = [d for (_, _, d) in running.values() if d is not None]
                wait_for = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
                for reader in wait(list(running), timeout=wait_for):
                    process, cell, _ = running.pop(reader)
                    try:
                        result = reader.recv()
                    except (EOFError, OSError):
                        process.join(timeout=10)
                        result = CellResult.failure("error", _death_reason(process.exitcode))
                    reader.close()
                    process.join(timeout=10)
                    if process.is_alive():
                        process.kill()
                        process.join()
                    on_result(cell, result)
                now = time.monotonic()
                for reader, (process, cell, deadline) in list(running.items()):
                    if deadline is not None and now >= deadline:
                        process.kill()
                        process.join()
                        reader.close()
                        del running[reader]
                        on_result(cell, CellResult.failure(
                            "timeout", f"exceeded the per-cell timeout of {self.timeout:g} s"))
        finally:
            for reader, (process, _, _) in running.items():
                process.kill()
                process.join()
                reader.close()
