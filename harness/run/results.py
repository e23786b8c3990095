"""Read a run folder back: the tidy tables and the arrays that reports are computed from."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.errors import BadInputError
from harness.core.types import global_view
from harness.run.store import Store

META_COLUMNS = [
    "key", "status", "reason", "dataset", "dataset_name", "model", "model_name", "seed",
    "method", "method_name", "scope", "unit", "explains", "time_explain", "time_predict",
    "n_explained", "explain_on",
]
KINDS = ("importances", "cells", "local", "models")


def _prefixed(params_json: str, prefix: str) -> dict:
    params = json.loads(params_json or "{}")
    return {f"{prefix}{k}": (json.dumps(v) if isinstance(v, list) else v)
            for k, v in params.items()}


def cell_global_view(arrays: dict[str, np.ndarray | None], scope: str) -> np.ndarray:
    """:func:`harness.core.types.global_view` of one stored cell (``arrays``: as
    :meth:`RunResults.arrays` returns them), with its explained rows' weights where it has
    them (a local method on a weighted support: the weighted mean |local|)."""
    return np.asarray(global_view(arrays["values"], scope, arrays["row_weights"]), dtype=float)


@dataclass
class RunResults:
    """Everything stored in a run folder, opened read-only for reports."""

    folder: Path
    cells: pd.DataFrame
    models: pd.DataFrame
    store: Store
    _cells_table: pd.DataFrame | None = field(default=None, repr=False)
    _derived: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, folder: str | Path) -> RunResults:
        store = Store(folder, create=False)
        cells = pd.DataFrame([dict(r) for r in store.cell_rows()])
        if cells.empty:
            cells = pd.DataFrame(columns=[*META_COLUMNS, "feature_names", "dataset_params",
                                          "model_params", "method_params", "traceback"])
        models = pd.DataFrame([dict(r) for r in store.model_rows()])
        keep = [c for c in cells.columns if c not in ("vals", "std", "base_values",
                                                      "sample_index")]
        return cls(Path(folder), cells[keep], models, store)

    def restricted(self, keys: Iterable[str]) -> RunResults:
        """This run seen through the cells ``keys`` only: the current grid of a store that
        also keeps the cells of earlier grids (or of an earlier version of a method)."""
        wanted = set(keys)
        cells = self.cells[self.cells["key"].isin(wanted)].reset_index(drop=True)
        return RunResults(self.folder, cells, self.models, self.store)

    def derived(self, name: str, build: Callable[[RunResults], pd.DataFrame]) -> pd.DataFrame:
        """A table computed from this run by ``build(self)``, built once per opened run and
        shared by every report that asks for it under ``name`` (a copy is returned)."""
        if name not in self._derived:
            self._derived[name] = build(self)
        return self._derived[name].copy()

    def done(self) -> pd.DataFrame:
        return self.cells[self.cells["status"] == "done"]

    def arrays(self, key: str) -> dict[str, np.ndarray | None]:
        """values, std, base_values, sample_index and row_weights of one cell."""
        return self.store.cell_arrays(key)

    @cached_property
    def _row_of_key(self) -> dict[str, int]:
        # built once: a scan of the table per cell made every report quadratic in the cells
        return {key: row for row, key in enumerate(self.cells["key"])}

    def _row(self, key: str) -> pd.Series:
        """The ``cells`` row of ``key``."""
        return self.cells.iloc[self._row_of_key[key]]

    def feature_names(self, key: str) -> list[str]:
        return json.loads(self._row(key)["feature_names"])

    def runs(self) -> list[dict]:
        """Each pass of a runner over this folder: ``started`` (epoch s), ``wall_time`` (s)
        and ``environment`` (:func:`harness.run.environment.describe_environment`)."""
        return self.store.run_rows()

    def extra(self, key: str) -> dict:
        """What the method of one cell recorded beside its values (``Importances.extra``)."""
        return json.loads(self._row(key)["extra"] or "{}")

    def truth(self, dataset: str, seed: int):
        return self.store.truth(dataset, int(seed))

    def close(self) -> None:
        self.store.close()

    def cells_table(self) -> pd.DataFrame:
        """One row per cell with its status, timings, model score and p_* parameters.

        Built once per opened run (the store is only read here); a copy is returned.
        """
        if self._cells_table is None:
            self._cells_table = self._build_cells_table()
        return self._cells_table.copy()

    def _build_cells_table(self) -> pd.DataFrame:
        rows = []
        for _, row in self.cells.iterrows():
            record = {c: row.get(c) for c in META_COLUMNS}
            record.update(_prefixed(row.get("dataset_params"), "p_dataset_"))
            record.update(_prefixed(row.get("model_params"), "p_model_"))
            record.update(_prefixed(row.get("method_params"), "p_method_"))
            rows.append(record)
        table = pd.DataFrame(rows, columns=None if rows else META_COLUMNS)
        if not self.models.empty and not table.empty:
            scores = self.models[["dataset", "model", "seed", "score", "score_name",
                                  "fit_time", "predict_time", "n_train", "n_test"]]
            scores = scores.rename(columns={"score": "model_score",
                                            "score_name": "model_score_name",
                                            "predict_time": "model_predict_time_train"})
            table = table.merge(scores, on=["dataset", "model", "seed"], how="left")
        return table

    def importances_table(self) -> pd.DataFrame:
        """Tidy per-feature table of every done cell (local methods: mean |value|)."""
        cells = self.cells_table()
        done = cells[cells["status"] == "done"].reset_index(drop=True)
        if done.empty:
            return pd.DataFrame(columns=[*cells.columns, "feature", "value", "std"])
        # one frame built at the end: a frame per cell, with every cell column set on it one
        # by one, cost milliseconds per cell
        names, values, stds, owner = [], [], [], []
        for position, (key, scope) in enumerate(zip(done["key"], done["scope"],
                                                    strict=True)):
            arrays = self.arrays(key)
            summary = cell_global_view(arrays, scope)
            std = arrays["std"] if scope == "global" else None
            names.extend(self.feature_names(key))
            values.append(summary)
            stds.append(np.full(summary.shape, np.nan) if std is None
                        else np.asarray(std, dtype=float))
            owner.append(np.full(summary.shape[0], position))
        owner = np.concatenate(owner)
        table = done.iloc[owner].reset_index(drop=True)
        table["feature"] = names
        table["value"] = np.concatenate(values)
        table["std"] = np.concatenate(stds)
        return table[["feature", "value", "std", *done.columns]]

    def local_table(self) -> pd.DataFrame:
        """Tidy per-(cell, sample, feature) table of local methods' values."""
        cells = self.cells_table()
        frames = []
        for _, row in cells[(cells["status"] == "done") & (cells["scope"] == "local")].iterrows():
            arrays = self.arrays(row["key"])
            values, rows = arrays["values"], arrays["sample_index"]
            names = self.feature_names(row["key"])
            if values.ndim == 2:
                values = values[:, :, None]
            n, p, k = values.shape
            frame = pd.DataFrame({
                "sample": np.repeat(rows, p * k),
                "feature": np.tile(np.repeat(names, k), n),
                "output": np.tile(np.arange(k), n * p),
                "value": values.reshape(-1),
            })
            for column in ("key", "dataset", "model", "seed", "method"):
                frame[column] = row[column]
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_results(out: str | Path, kind: str = "importances") -> pd.DataFrame:
    """Load a run folder as a tidy pandas DataFrame.

    Parameters
    ----------
    out : path
        The run folder given to ``compare``.
    kind : {"importances", "cells", "local", "models"}
        ``importances`` (default): one row per (cell, feature), global view (local methods
        summarised as mean |value|); ``cells``: one row per cell with status, reason, timings,
        model score and ``p_dataset_*``, ``p_model_*``, ``p_method_*`` parameters; ``local``:
        one row per (cell, sample, feature, output); ``models``: one row per fitted model.
    """
    if kind not in KINDS:
        raise BadInputError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}.")
    results = RunResults.open(out)
    try:
        if kind == "models":
            return results.models
        return {"importances": results.importances_table, "cells": results.cells_table,
                "local": results.local_table}[kind]()
    finally:
        results.close()
