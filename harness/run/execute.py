"""Run one cell: the pure part of the runner, shared by every executor."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.cores import usable_cores
from harness.core.errors import BadInputError, MethodSkipped, NotInstalledError
from harness.forest.view import predict_output
from harness.run.cell_result import CellResult
from harness.run.cells import Cell
from harness.run.compile import (
    cache_is_warm,
    compile_in_processes,
    compile_tasks,
    prepare_from_cache,
)
from harness.run.protocol import ExplainRequest, run_protocol


@dataclass
class CellInput:
    """What a cell needs besides its configuration: the fitted model and the rows."""

    model: Any
    data: ExplainRequest
    sample_index: np.ndarray  # rows of the dataset that ``data`` holds


def compile_ahead(method_classes,
                  on_progress: Callable[[int, int, str], None] | None = None,
                  processes: int | None = None) -> threading.Thread | None:
    """Start compiling the methods' kernels into numba's on-disk cache in ``processes``
    worker processes (None: one per usable core; :mod:`harness.run.compile`), from a
    background thread, so that the caller can load data and fit models meanwhile; join the
    thread it returns before :func:`prepare_methods`. None when the cache holds them all.
    Even one process is worth its start-up: the caller then runs the kernels' cached code
    (:func:`harness.run.compile.prepare_from_cache` says why)."""
    method_classes = [c for c in method_classes if not c.missing_packages()]
    if cache_is_warm(method_classes):
        return None
    processes = min(processes or usable_cores(), len(compile_tasks(method_classes)))
    thread = threading.Thread(target=compile_in_processes, name="harness-compile",
                              args=(method_classes, processes, on_progress), daemon=True)
    thread.start()
    return thread


def prepare_methods(method_classes, processes: int | None = 1,
                    on_progress: Callable[[int, int, str], None] | None = None) -> None:
    """Import packages and compile kernels once, before any cell is timed: in the runner
    (forked cells inherit them) and on each Dask worker before its first cell. A failure is
    left for the cell itself to report.

    When numba's on-disk cache lacks any of the kernels, they are first compiled into it in
    ``processes`` worker processes (None: one per usable core; :func:`compile_ahead`); this
    process then loads them from the cache. ``on_progress`` gets (methods done, methods in
    all, name) from that step.
    """
    method_classes = [c for c in method_classes if not c.missing_packages()]
    compiling = compile_ahead(method_classes, on_progress, processes)
    if compiling is not None:
        compiling.join()
    for method_class in method_classes:
        try:
            prepare_from_cache(method_class)
        except Exception:
            pass


def run_one(cell: Cell, inputs: CellInput,
            progress: Callable[[float], None] | None = None) -> CellResult:
    """Explain one cell through :func:`harness.run.protocol.run_protocol`.

    Every outcome is a :class:`CellResult` with a status from the closed set: bad inputs
    and exceptions are ``error``, a missing package ``not_installed``, a declined cell
    ``skipped``. Only ``method.explain`` is timed as ``time_explain``; the model's own predict
    on the same rows is timed separately (``time_predict``) for the timing report's ratio.
    ``progress`` receives the fraction done that long methods report (e.g. loco's refits).
    """
    try:
        importances = run_protocol(cell.method, inputs.model, inputs.data, cell.seed,
                                   progress=progress)
    except NotInstalledError as exc:
        return CellResult.failure("not_installed", str(exc))
    except MethodSkipped as exc:
        return CellResult.failure("skipped", str(exc))
    except BadInputError as exc:
        return CellResult.failure("error", f"checking the inputs failed: {exc}")
    except Exception as exc:
        return CellResult.failure("error", f"{type(exc).__name__}: {exc}",
                                  traceback.format_exc())
    X = np.asarray(inputs.data.X, dtype=float)
    start = time.perf_counter()
    predict_output(inputs.model, X)
    time_predict = time.perf_counter() - start
    sample_index = inputs.sample_index
    if importances.sample_index is not None:
        sample_index = sample_index[importances.sample_index]
    values = importances.values
    return CellResult(
        status="done", scope=importances.scope, unit=importances.unit,
        explains=importances.explains, feature_names=importances.feature_names,
        time_explain=importances.time_explain, time_predict=time_predict,
        n_explained=int(X.shape[0]), values=values, std=importances.std,
        base_values=importances.base_values,
        sample_index=sample_index if importances.scope == "local" else None,
        row_weights=importances.row_weights, extra=importances.extra,
        reason=None if np.all(np.isfinite(values)) else "values contain NaN or inf",
    )
