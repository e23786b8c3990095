"""One runner owns a run folder at a time.

:class:`RunLock` takes an exclusive ``flock`` on ``<out>/.runner.lock`` (through filelock) for
the whole run and writes who holds it (pid, host, start time) to ``<out>/.runner.json``. The
kernel releases a ``flock`` when its holder dies, whatever killed it, so a lock left by a
runner killed with SIGKILL is stale by construction and the next runner simply takes it over
(the holder file is then rewritten). A second runner that finds the lock held gets
:class:`~harness.core.errors.RunFolderBusyError` at once, naming the holder.

Forked cell processes inherit the lock's descriptor; they die with their runner
(:mod:`harness.run.executors.process`), so the lock is free as soon as the runner and its cells
are gone.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from filelock import FileLock, Timeout

from harness.core.errors import RunFolderBusyError

LOCK_NAME = ".runner.lock"
HOLDER_NAME = ".runner.json"


def _holder_text(folder: Path) -> str:
    """Who holds the folder, as far as its holder file says."""
    try:
        holder = json.loads((folder / HOLDER_NAME).read_text())
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder["start"])))
        return f"pid {int(holder['pid'])} on host {holder['host']}, started {started}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not written its pid yet"


class RunLock:
    """Exclusive ownership of a run folder for the duration of a ``with`` block.

    Parameters
    ----------
    folder : path
        The run folder (it must exist).

    Raises
    ------
    RunFolderBusyError
        On entry, when another live process holds the folder.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._lock = FileLock(str(self.folder / LOCK_NAME), timeout=0)

    def __enter__(self) -> RunLock:
        try:
            self._lock.acquire()
        except Timeout:
            raise RunFolderBusyError(
                f"The run folder {str(self.folder)!r} is in use by another runner "
                f"({_holder_text(self.folder)}); wait for it to finish, or give another --out."
            ) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "start": time.time()}
        temporary = self.folder / f"{HOLDER_NAME}.{os.getpid()}"
        temporary.write_text(json.dumps(holder))
        os.replace(temporary, self.folder / HOLDER_NAME)
        return self

    def __exit__(self, *exc) -> None:
        try:
            (self.folder / HOLDER_NAME).unlink(missing_ok=True)
        finally:
            self._lock.release()
