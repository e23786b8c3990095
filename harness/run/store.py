"""Durable result store: one SQLite file per run, one transaction per cell.

SQLite's journal makes every ``record_*`` call atomic, so a run killed with SIGKILL at any
moment leaves either the whole cell or nothing. While a runner writes, the store is in
write-ahead-log mode with ``synchronous=NORMAL`` (SQLite, "Write-Ahead Logging" and
"PRAGMA synchronous"): a commit is one append to ``results.sqlite-wal`` without an fsync, and
the log is synced at its checkpoints. A commit is then durable against the death of the
process (the operating system holds the write), and a power cut can lose at most the last
cells (recomputed by the next run) but never corrupts the file. A commit per cell in the
default rollback mode cost two or three fsyncs, tens of milliseconds each on a busy disk: the
whole of the runner's overhead per cell. When the writer closes, the store returns to the
rollback journal, so at rest it is one self-contained file, as readers and older versions
expect. Arrays are stored as ``.npy`` blobs read with
``allow_pickle=False`` and ground truth as JSON (:mod:`harness.run.truth_record`): nothing read
from a store is unpickled. Only the runner process writes (it holds the folder's
:class:`~harness.run.lock.RunLock`); executors return results to it. A stored ``done`` cell
is never replaced by a failure, whoever writes.

A file that is not a SQLite database, or one with damaged pages, raises
:class:`~harness.core.errors.StoreDamagedError` on the first read that meets the damage; a store
deleted or replaced while a run writes to it raises :class:`~harness.core.errors.StoreLostError`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import BadInputError, StoreDamagedError, StoreLostError
from harness.run.cell_result import (  # noqa: F401 (to_blob, from_blob, STATUSES: re-exported)
    ARRAY_COLUMNS,
    CELL_COLUMNS,
    FINAL_STATUSES,
    STATUSES,
    CellResult,
    from_blob,
    to_blob,
)
from harness.run.truth_record import TruthFormatError, decode_truth, encode_truth

CELLS_TABLE = ("CREATE TABLE IF NOT EXISTS cells (\n    "
               + ",\n    ".join(f"{c} {t}" for c, t in CELL_COLUMNS.items()) + "\n);")
SCHEMA = CELLS_TABLE + """
CREATE TABLE IF NOT EXISTS models (
    key TEXT PRIMARY KEY, dataset TEXT, model TEXT, seed INTEGER, task TEXT,
    fit_time REAL, score REAL, score_name TEXT, n_train INTEGER, n_test INTEGER,
    n_features INTEGER, feature_names TEXT, predict_time REAL, created REAL
);
CREATE TABLE IF NOT EXISTS datasets (
    key TEXT PRIMARY KEY, dataset TEXT, seed INTEGER, task TEXT, feature_names TEXT,
    truth BLOB, created REAL
);
CREATE TABLE IF NOT EXISTS truth_arrays (
    dataset_key TEXT, name TEXT, npy BLOB, PRIMARY KEY (dataset_key, name)
);
CREATE TABLE IF NOT EXISTS runs (
    started REAL, wall_time REAL, environment TEXT
);
"""
#: A failure never replaces a stored ``done`` cell (another runner's, or an earlier result
#: when ``force`` recomputes): the upsert below keeps the stored row in that case.
UPSERT_KEEPING_DONE = """
INSERT INTO cells ({columns}) VALUES ({marks})
ON CONFLICT(key) DO UPDATE SET {updates}
WHERE cells.status != 'done' OR excluded.status = 'done'
"""


class Store:
    """The results of one run folder (``<out>/results.sqlite``)."""

    filename = "results.sqlite"

    def __init__(self, folder: str | Path, create: bool = True) -> None:
        self.folder = Path(folder)
        self.path = self.folder / self.filename
        if not create and not self.path.is_file():
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
        except sqlite3.Error as exc:
            raise BadInputError(f"Cannot open the store {str(self.path)!r}: {exc}") from exc
        self._conn.row_factory = sqlite3.Row
        existed = self.path.is_file() and self.path.stat().st_size > 0
        if existed:
            self._check_structure()
        self._writer = create
        if create:
            self._guard(lambda: (self._conn.executescript(SCHEMA), self._conn.commit()))
            self._add_missing_columns()
            self._write_ahead(True)
        else:
            self._guard(lambda: self._conn.execute("SELECT count(*) FROM cells").fetchone())
        self._inode = self.path.stat().st_ino
        #: (dataset, seed, reason) of stored ground truth that could not be read
        self.unreadable_truth: list[tuple[str, int, str]] = []

    def close(self) -> None:
        if self._writer:
            self._write_ahead(False)
        self._conn.close()

    def _write_ahead(self, on: bool) -> None:
        """Write-ahead log with unsynced commits while this runner writes (``on``), or back
        to the rollback journal. Best effort: a store left in either mode reads the same (a
        reader replays a log left by a killed runner), and going back fails only while
        another connection has the file open, which then keeps the log a little longer."""
        pragmas = (("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL") if on
                   else ("PRAGMA journal_mode=DELETE",))
        try:
            for pragma in pragmas:
                self._conn.execute(pragma).fetchall()
        except sqlite3.Error:
            pass

    def damaged(self, exc: BaseException) -> StoreDamagedError:
        """The one message for a store that cannot be read, with what to do about it."""
        return StoreDamagedError(
            f"The store {str(self.path)!r} is damaged ({type(exc).__name__}: {exc}). Move it "
            f"aside (e.g. to {self.filename}.damaged) and run compare again to recompute the "
            "run, or restore it from a copy."
        )

    def _guard(self, read):
        """Run a read; a damaged file (not a database, malformed pages, a corrupt blob) is
        :class:`StoreDamagedError`, never a raw sqlite3 or NumPy error."""
        try:
            return read()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "no such column" in str(exc):
                raise self.damaged(exc) from exc
            raise BadInputError(f"Cannot read the store {str(self.path)!r}: {exc}") from exc
        except (sqlite3.DatabaseError, ValueError, OSError, json.JSONDecodeError) as exc:
            raise self.damaged(exc) from exc

    def _add_missing_columns(self) -> None:
        """Give a store written before a result column existed that column (empty in its
        rows, which read as before), so that this runner can write its cells."""
        present = {row[1] for row in self._guard(
            lambda: self._conn.execute("PRAGMA table_info(cells)").fetchall())}
        missing = [(column, kind) for column, kind in CELL_COLUMNS.items()
                   if column not in present]
        def add() -> None:
            with self._conn:
                for column, kind in missing:
                    self._conn.execute(f"ALTER TABLE cells ADD COLUMN {column} {kind}")

        if missing:
            self._guard(add)

    def _check_structure(self) -> None:
        """SQLite's ``quick_check`` (page structure, in time linear in the file): bytes
        overwritten inside the file are found here, before any report reads them."""
        problems = self._guard(lambda: self._conn.execute("PRAGMA quick_check").fetchall())
        if [tuple(row) for row in problems] != [("ok",)]:
            raise self.damaged(sqlite3.DatabaseError(
                f"quick_check: {'; '.join(str(row[0]) for row in problems[:3])}"))

    def _check_still_there(self) -> None:
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = None
        if inode != self._inode:
            raise StoreLostError(
                f"The store {str(self.path)!r} was deleted or replaced while this run was "
                "writing to it: the cells it held are lost, and so is this run's work. Run "
                "compare again to recompute them."
            )

    def _write(self, statements: list[tuple[str, list | tuple]]) -> None:
        """One atomic transaction; a failing disk or a read-only store is a clear error, and
        the rollback keeps everything stored before it."""
        self._check_still_there()
        try:
            with self._conn:
                for sql, values in statements:
                    self._conn.execute(sql, values)
        except sqlite3.DatabaseError as exc:
            self._check_still_there()
            if not isinstance(exc, sqlite3.OperationalError):
                raise self.damaged(exc) from exc
            raise BadInputError(
                f"Cannot write to the store {str(self.path)!r}: {exc} (is the disk full or "
                "the folder read-only?). This write was rolled back; the cells stored before "
                "it are kept. Rerun to resume."
            ) from exc

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- cells -------------------------------------------------------------------------
    def statuses(self) -> dict[str, str]:
        """Status of every stored cell, by key."""
        return self._guard(
            lambda: dict(self._conn.execute("SELECT key, status FROM cells").fetchall()))

    def record_cell(self, meta: dict[str, Any], result: CellResult) -> bool:
        """Write one cell atomically, replacing an earlier attempt unless that one is ``done``
        and this one is not. Returns whether the row was written."""
        row = result.to_row(meta)
        sql = UPSERT_KEEPING_DONE.format(
            columns=", ".join(row), marks=", ".join("?" for _ in row),
            updates=", ".join(f"{c} = excluded.{c}" for c in row if c != "key"))
        before = self._conn.total_changes
        self._write([(sql, list(row.values()))])
        return self._conn.total_changes > before

    def cell_result(self, key: str) -> CellResult:
        """The stored result of one cell."""
        row = self._guard(lambda: self._conn.execute(
            "SELECT * FROM cells WHERE key = ?", (key,)).fetchone())
        if row is None:
            raise KeyError(key)
        return self._guard(lambda: CellResult.from_row(row))

    def cell_versions(self) -> dict[str, str | None]:
        """The package versions (JSON) stored with every cell, by key."""
        return self._guard(
            lambda: dict(self._conn.execute("SELECT key, versions FROM cells").fetchall()))

    def cell_rows(self) -> list[sqlite3.Row]:
        return self._guard(lambda: self._conn.execute(
            "SELECT * FROM cells ORDER BY dataset, model, seed, method"
        ).fetchall())

    def cell_arrays(self, key: str) -> dict[str, np.ndarray | None]:
        """values, std, base_values, sample_index and row_weights of one cell."""
        result = self.cell_result(key)
        return {name: getattr(result, name) for name in ARRAY_COLUMNS}

    # --- models and datasets ------------------------------------------------------------
    def record_run(self, started: float, wall_time: float,
                   environment: dict[str, Any]) -> None:
        """One runner's pass over the grid: when, how long, and on what (JSON)."""
        self._write([("INSERT INTO runs VALUES (?, ?, ?)",
                      (started, wall_time, json.dumps(environment, default=str)))])

    def run_rows(self) -> list[dict[str, Any]]:
        """Every recorded pass, oldest first (none for a store written before they were)."""
        tables = {row[0] for row in self._guard(lambda: self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall())}
        if "runs" not in tables:
            return []
        rows = self._guard(lambda: self._conn.execute(
            "SELECT started, wall_time, environment FROM runs ORDER BY started").fetchall())
        return [{"started": r[0], "wall_time": r[1], "environment": json.loads(r[2] or "{}")}
                for r in rows]

    def record_model(self, info: dict[str, Any]) -> None:
        info = {**info, "created": time.time()}
        info["feature_names"] = json.dumps(info.get("feature_names"))
        columns = ", ".join(info)
        self._write([(f"INSERT OR REPLACE INTO models ({columns}) VALUES "
                      f"({', '.join('?' for _ in info)})", list(info.values()))])

    def model_rows(self) -> list[sqlite3.Row]:
        return self._guard(lambda: self._conn.execute("SELECT * FROM models").fetchall())

    def record_dataset(self, key: str, dataset, seed: int) -> None:
        """Store a dataset's description and ground truth (JSON plus ``.npy`` arrays)."""
        text, arrays = (None, {}) if dataset.truth is None else encode_truth(dataset.truth)
        statements = [
            ("INSERT OR REPLACE INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?)",
             (key, dataset.name, seed, dataset.task, json.dumps(dataset.feature_names), text,
              time.time())),
            ("DELETE FROM truth_arrays WHERE dataset_key = ?", (key,)),
        ]
        statements += [("INSERT INTO truth_arrays VALUES (?, ?, ?)", (key, name, to_blob(a)))
                       for name, a in arrays.items()]
        self._write(statements)

    def _truth_row(self, dataset: str, seed: int):
        return self._guard(lambda: self._conn.execute(
            "SELECT key, truth FROM datasets WHERE dataset = ? AND seed = ?", (dataset, seed)
        ).fetchone())

    def _read_truth(self, row) -> tuple[Any, str | None]:
        """The truth of a ``datasets`` row, or None and why it cannot be read. Only a JSON
        document has arrays to fetch: anything else (an older store's pickle) is refused by
        :func:`decode_truth` without being loaded."""
        arrays = {}
        if isinstance(row["truth"], str):
            rows = self._guard(lambda: self._conn.execute(
                "SELECT name, npy FROM truth_arrays WHERE dataset_key = ?", (row["key"],)
            ).fetchall())
            arrays = {name: from_blob(npy) for name, npy in rows}
        try:
            return decode_truth(row["truth"], arrays), None
        except (TruthFormatError, ValueError) as exc:
            return None, str(exc)

    def truth(self, dataset: str, seed: int):
        """The stored ground truth of a dataset (None when it has none).

        Truth stored in another form (a pickle written by an older version, or a damaged
        document) is never loaded: it reads as None and is listed in
        :attr:`unreadable_truth`, so that reports say so instead of failing.
        """
        row = self._truth_row(dataset, seed)
        if row is None or row["truth"] is None:
            return None
        truth, problem = self._read_truth(row)
        if problem is not None:
            self.unreadable_truth.append((dataset, seed, problem))
        return truth

    def truth_needs_refresh(self, dataset: str, seed: int) -> bool:
        """Whether the dataset's stored truth is missing or unreadable (the runner then stores
        it again from the dataset itself)."""
        row = self._truth_row(dataset, seed)
        if row is None:
            return True
        return row["truth"] is not None and self._read_truth(row)[1] is not None

    def dataset_rows(self) -> list[sqlite3.Row]:
        return self._guard(lambda: self._conn.execute(
            "SELECT key, dataset, seed, task FROM datasets").fetchall())
