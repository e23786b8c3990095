"""The in-process executor: cells one after the other in the runner's process (debugging)."""

from __future__ import annotations

from harness.run.execute import run_one
from harness.run.executors.process import OnResult, Task


class InProcessExecutor:
    """Run cells sequentially in the current process (no timeout, no isolation)."""

    name = "inprocess"

    def __init__(self, **options) -> None:  # jobs, timeout, memory limits do not apply
        pass

    def run(self, tasks: list[Task], on_result: OnResult) -> None:
        for cell, inputs in tasks:
            on_result(cell, run_one(cell, inputs))
