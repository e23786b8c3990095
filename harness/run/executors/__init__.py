"""Executors: where cells run. They return results; only the runner writes the store.

- :class:`~harness.run.executors.inprocess.InProcessExecutor`: one cell after the other in this
  process (debugging; a hang or a crash there stops the run);
- :class:`~harness.run.executors.process.ProcessExecutor` (default): one forked, bounded child
  per cell;
- :class:`~harness.run.executors.dask.DaskExecutor`: a dask.distributed cluster.
"""

from __future__ import annotations

from harness.core.errors import BadInputError

EXECUTORS = {
    "process": "harness.run.executors.process:ProcessExecutor",
    "inprocess": "harness.run.executors.inprocess:InProcessExecutor",
    "dask": "harness.run.executors.dask:DaskExecutor",
}


def make_executor(name: str, *, jobs: int = 1, timeout: float | None = None,
                  max_memory: float | None = None, scheduler: str | None = None):
    """The executor called ``name`` with the run's options.

    Every executor takes the same keyword options and uses those that apply to it:
    ``jobs`` (cells at a time), ``timeout`` (hard per-cell seconds), ``max_memory``
    (per-cell bytes) and ``scheduler`` (a Dask scheduler address; None starts a
    LocalCluster). Executors are imported lazily, so an optional one (dask) costs nothing
    until it is asked for.
    """
    import importlib

    if name not in EXECUTORS:
        raise BadInputError(f"executor must be one of {', '.join(sorted(EXECUTORS))}; "
                            f"got {name!r}.")
    module, _, attr = EXECUTORS[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    return cls(jobs=jobs, timeout=timeout, max_memory=max_memory, scheduler=scheduler)
