"""Run one cell: the pure part of the runner, shared by every executor."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.method import ExplainData
from harness.forest.sklearn import predict_output
from harness.run.cells import Cell


@dataclass
class CellInput:
    """What a cell needs besides its configuration: the fitted model and the rows."""

    model: Any
    data: ExplainData
    sample_index: np.ndarray  # rows of the dataset that ``data`` holds


def run_one(cell: Cell, inputs: CellInput) -> dict[str, Any]:
    """Explain one cell and return a result dict with a status from the closed set.

    Only ``method.explain`` is timed as ``time_explain``; the model's own predict on the same
    rows is timed separately (``time_predict``) for the timing report's ratio.
    """
    method = cell.method
    missing = method.missing_packages()
    if missing:
        return {"status": "not_installed",
                "reason": f"needs {', '.join(missing)} ({method.install_hint()})"}
    try:
        reason = method.skip(inputs.model, inputs.data)
        if reason:
            return {"status": "skipped", "reason": reason}
        method.prepare()  # usually already done by the runner before forking
        importances = method.explain(inputs.model, inputs.data, np.random.default_rng(cell.seed))
    except Exception as exc:
        return {"status": "error", "reason": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}
    start = time.perf_counter()
    predict_output(inputs.model, inputs.data.X)
    time_predict = time.perf_counter() - start
    sample_index = inputs.sample_index
    if importances.sample_index is not None:
        sample_index = sample_index[importances.sample_index]
    values = importances.values
    return {
        "status": "done", "scope": importances.scope, "unit": importances.unit,
        "explains": importances.explains, "feature_names": importances.feature_names,
        "time_explain": importances.time_explain, "time_predict": time_predict,
        "n_explained": int(inputs.data.X.shape[0]), "values": values,
        "std": importances.std, "base_values": importances.base_values,
        "sample_index": sample_index if importances.scope == "local" else None,
        "extra": importances.extra,
        "reason": None if np.all(np.isfinite(values)) else "values contain NaN or inf",
    }
