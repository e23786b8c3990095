"""The in-process executor: cells one after the other in the runner's process (debugging)."""

from __future__ import annotations

from harness.run.execute import run_one
from harness.run.executors.process import OnProgress, OnResult, Task


class InProcessExecutor:
    """Run cells sequentially in the current process (no timeout, no isolation)."""

    name = "inprocess"
    cells_run_here = True  # the runner prepares the methods here, before the first cell

    def __init__(self, **options) -> None:  # jobs, timeout, memory limits do not apply
        pass

    def run(self, tasks: list[Task], on_result: OnResult,
            on_progress: OnProgress | None = None) -> None:
        for cell, inputs in tasks:
            progress = None if on_progress is None else (
                lambda fraction, cell=cell: on_progress(cell, fraction))
            on_result(cell, run_one(cell, inputs, progress))
