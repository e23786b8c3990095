"""Durable result store: one SQLite file per run, one transaction per cell.

SQLite's journal makes every ``record_*`` call atomic, so a run killed with SIGKILL at any
moment leaves either the whole cell or nothing. Arrays are stored as ``.npy`` blobs. Only the
runner process writes; executors return results to it.
"""

from __future__ import annotations

import io
import json
import pickle
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import BadInputError

STATUSES = ("done", "skipped", "not_installed", "error", "timeout")
FINAL_STATUSES = ("done", "skipped")  # reused by later runs; the others are retried

SCHEMA = """
CREATE TABLE IF NOT EXISTS cells (
    key TEXT PRIMARY KEY, status TEXT NOT NULL, reason TEXT, traceback TEXT,
    dataset TEXT, dataset_name TEXT, dataset_params TEXT, model TEXT, model_name TEXT,
    model_params TEXT, seed INTEGER, method TEXT, method_name TEXT, method_params TEXT,
    scope TEXT, unit TEXT, explains TEXT, feature_names TEXT, time_explain REAL,
    time_predict REAL, n_explained INTEGER, explain_on TEXT,
    vals BLOB, std BLOB, base_values BLOB, sample_index BLOB, extra TEXT,
    versions TEXT, created REAL
);
CREATE TABLE IF NOT EXISTS models (
    key TEXT PRIMARY KEY, dataset TEXT, model TEXT, seed INTEGER, task TEXT,
    fit_time REAL, score REAL, score_name TEXT, n_train INTEGER, n_test INTEGER,
    n_features INTEGER, feature_names TEXT, predict_time REAL, created REAL
);
CREATE TABLE IF NOT EXISTS datasets (
    key TEXT PRIMARY KEY, dataset TEXT, seed INTEGER, task TEXT, feature_names TEXT,
    truth BLOB, created REAL
);
"""


def to_blob(array: np.ndarray | None) -> bytes | None:
    if array is None:
        return None
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.load(io.BytesIO(blob), allow_pickle=False)


class Store:
    """The results of one run folder (``<out>/results.sqlite``)."""

    filename = "results.sqlite"

    def __init__(self, folder: str | Path, create: bool = True) -> None:
        self.folder = Path(folder)
        self.path = self.folder / self.filename
        if not create and not self.path.exists():
            raise BadInputError(f"No results in {str(self.folder)!r}: {self.filename} is missing.")
        if create:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BadInputError(
                    f"Cannot create the run folder {str(self.folder)!r}: {exc}"
                ) from exc
        try:
            self._conn = sqlite3.connect(self.path, timeout=30)
            if create:
                self._conn.executescript(SCHEMA)
                self._conn.commit()
        except sqlite3.Error as exc:
            raise BadInputError(f"Cannot open the store {str(self.path)!r}: {exc}") from exc
        self._conn.row_factory = sqlite3.Row

    def close(self) -> None:
        self._conn.close()

    def _write(self, sql: str, values: list | tuple) -> None:
        """One atomic write; a failing disk or a read-only store is a clear error, and the
        transaction's rollback keeps everything stored before it."""
        try:
            with self._conn:
                self._conn.execute(sql, values)
        except sqlite3.Error as exc:
            raise BadInputError(
                f"Cannot write to the store {str(self.path)!r}: {exc} (is the disk full or "
                "the folder read-only?). The cells stored before are intact; rerun to resume."
            ) from exc

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- cells -------------------------------------------------------------------------
    def statuses(self) -> dict[str, str]:
        """Status of every stored cell, by key."""
        return dict(self._conn.execute("SELECT key, status FROM cells").fetchall())

    def record_cell(self, meta: dict[str, Any], result: dict[str, Any]) -> None:
        """Write one cell atomically (replacing an earlier failed attempt)."""
        if result["status"] not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}; got {result['status']!r}")
        row = {
            **{k: meta.get(k) for k in (
                "key", "dataset", "dataset_name", "model", "model_name", "seed", "method",
                "method_name", "explain_on")},
            "dataset_params": json.dumps(meta.get("dataset_params", {})),
            "model_params": json.dumps(meta.get("model_params", {})),
            "method_params": json.dumps(meta.get("method_params", {})),
            "status": result["status"], "reason": result.get("reason"),
            "traceback": result.get("traceback"), "scope": result.get("scope"),
            "unit": result.get("unit"), "explains": result.get("explains"),
            "feature_names": json.dumps(result.get("feature_names")),
            "time_explain": result.get("time_explain"),
            "time_predict": result.get("time_predict"),
            "n_explained": result.get("n_explained"),
            "vals": to_blob(result.get("values")), "std": to_blob(result.get("std")),
            "base_values": to_blob(result.get("base_values")),
            "sample_index": to_blob(result.get("sample_index")),
            "extra": json.dumps(result.get("extra", {}), default=str),
            "versions": json.dumps(result.get("versions", {})),
            "created": time.time(),
        }
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self._write(f"INSERT OR REPLACE INTO cells ({columns}) VALUES ({marks})",
                    list(row.values()))

    def cell_rows(self) -> list[sqlite3.Row]:
        return self._conn.execute(
            "SELECT * FROM cells ORDER BY dataset, model, seed, method"
        ).fetchall()

    def cell_arrays(self, key: str) -> dict[str, np.ndarray | None]:
        row = self._conn.execute(
            "SELECT vals, std, base_values, sample_index FROM cells WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            raise KeyError(key)
        return {
            "values": from_blob(row["vals"]), "std": from_blob(row["std"]),
            "base_values": from_blob(row["base_values"]),
            "sample_index": from_blob(row["sample_index"]),
        }

    # --- models and datasets ------------------------------------------------------------
    def record_model(self, info: dict[str, Any]) -> None:
        info = {**info, "created": time.time()}
        info["feature_names"] = json.dumps(info.get("feature_names"))
        columns = ", ".join(info)
        self._write(f"INSERT OR REPLACE INTO models ({columns}) VALUES "
                    f"({', '.join('?' for _ in info)})", list(info.values()))

    def model_rows(self) -> list[sqlite3.Row]:
        return self._conn.execute("SELECT * FROM models").fetchall()

    def record_dataset(self, key: str, dataset, seed: int) -> None:
        self._write("INSERT OR REPLACE INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, dataset.name, seed, dataset.task, json.dumps(dataset.feature_names),
                     pickle.dumps(dataset.truth), time.time()))

    def truth(self, dataset: str, seed: int):
        """The stored ground truth of a dataset (None when it has none)."""
        row = self._conn.execute(
            "SELECT truth FROM datasets WHERE dataset = ? AND seed = ?", (dataset, seed)
        ).fetchone()
        return None if row is None or row["truth"] is None else pickle.loads(row["truth"])

    def dataset_rows(self) -> list[sqlite3.Row]:
        return self._conn.execute("SELECT key, dataset, seed, task FROM datasets").fetchall()
