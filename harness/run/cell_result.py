"""The one record a cell's result takes, from the method to the store and back.

:class:`CellResult` is what :func:`harness.run.execute.run_one` returns, what every executor
hands back to the runner (a failure included), what the store writes with :meth:`to_row` and
what :meth:`from_row` rebuilds. The ``cells`` table's schema is :data:`CELL_COLUMNS`, written
here once: the cell's configuration (:meth:`harness.run.cells.Cell.meta`) followed by the
result's fields, arrays as ``.npy`` blobs read with ``allow_pickle=False``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

Status = Literal["done", "skipped", "not_installed", "error", "timeout"]
STATUSES: tuple[str, ...] = get_args(Status)
#: Statuses a later run reuses; the others are retried.
FINAL_STATUSES = ("done", "skipped")

#: Column -> SQLite type of the ``cells`` table: the cell's configuration, then its result.
META_COLUMNS = {
    "key": "TEXT PRIMARY KEY", "dataset": "TEXT", "dataset_name": "TEXT",
    "dataset_params": "TEXT", "model": "TEXT", "model_name": "TEXT", "model_params": "TEXT",
    "seed": "INTEGER", "method": "TEXT", "method_name": "TEXT", "method_params": "TEXT",
    "explain_on": "TEXT",
}
RESULT_COLUMNS = {
    "status": "TEXT NOT NULL", "reason": "TEXT", "traceback": "TEXT", "scope": "TEXT",
    "unit": "TEXT", "explains": "TEXT", "feature_names": "TEXT", "time_explain": "REAL",
    "time_predict": "REAL", "n_explained": "INTEGER", "vals": "BLOB", "std": "BLOB",
    "base_values": "BLOB", "sample_index": "BLOB", "extra": "TEXT", "versions": "TEXT",
    "created": "REAL", "row_weights": "BLOB",
}
CELL_COLUMNS = {**META_COLUMNS, **RESULT_COLUMNS}
#: Array fields and the columns that hold them (``values`` is ``vals``: VALUES is SQL).
ARRAY_COLUMNS = {"values": "vals", "std": "std", "base_values": "base_values",
                 "sample_index": "sample_index", "row_weights": "row_weights"}
_JSON_META = ("dataset_params", "model_params", "method_params")


def to_blob(array: np.ndarray | None) -> bytes | None:
    """An array as ``.npy`` bytes (no pickled objects)."""
    if array is None:
        return None
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    """The array of :func:`to_blob`'s bytes; never unpickles."""
    if blob is None:
        return None
    return np.load(io.BytesIO(blob), allow_pickle=False)


@dataclass
class CellResult:
    """The outcome of one cell: a status from the closed set, its reason, and on ``done`` the
    method's values with their description and timings."""

    status: Status
    reason: str | None = None
    traceback: str | None = None
    scope: str | None = None
    unit: str | None = None
    explains: str | None = None
    feature_names: list[str] | None = None
    time_explain: float | None = None
    time_predict: float | None = None
    n_explained: int | None = None
    values: np.ndarray | None = None
    std: np.ndarray | None = None
    base_values: np.ndarray | None = None
    sample_index: np.ndarray | None = None
    #: a local method's explained rows' weights where they are not all equal (None: equal)
    row_weights: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}; got {self.status!r}")

    @classmethod
    def failure(cls, status: Status, reason: str, traceback: str | None = None) -> CellResult:
        """A cell that did not finish (or was not run), with why."""
        return cls(status=status, reason=reason, traceback=traceback)

    def with_reason(self, reason: str) -> CellResult:
        return dataclasses.replace(self, reason=reason)

    def to_row(self, meta: dict[str, Any]) -> dict[str, Any]:
        """The ``cells`` row of this result for the cell described by ``meta``."""
        row = {column: meta.get(column) for column in META_COLUMNS}
        for column in _JSON_META:
            row[column] = json.dumps(meta.get(column, {}))
        row.update({
            "status": self.status, "reason": self.reason, "traceback": self.traceback,
            "scope": self.scope, "unit": self.unit, "explains": self.explains,
            "feature_names": json.dumps(self.feature_names),
            "time_explain": self.time_explain, "time_predict": self.time_predict,
            "n_explained": self.n_explained,
            "extra": json.dumps(self.extra, default=str), "versions": json.dumps(self.versions),
            "created": time.time(),
        })
        for name, column in ARRAY_COLUMNS.items():
            row[column] = to_blob(getattr(self, name))
        return row

    @classmethod
    def from_row(cls, row: Any) -> CellResult:
        """Rebuild a result from a ``cells`` row (a mapping of column to value)."""
        present = set(row.keys())  # a store written before a column was added lacks it
        arrays = {name: from_blob(row[column]) if column in present else None
                  for name, column in ARRAY_COLUMNS.items()}
        return cls(
            status=row["status"], reason=row["reason"], traceback=row["traceback"],
            scope=row["scope"], unit=row["unit"], explains=row["explains"],
            feature_names=json.loads(row["feature_names"] or "null"),
            time_explain=row["time_explain"], time_predict=row["time_predict"],
            n_explained=row["n_explained"], extra=json.loads(row["extra"] or "{}"),
            versions=json.loads(row["versions"] or "{}"), **arrays)
