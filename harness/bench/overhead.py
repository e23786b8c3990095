"""``python -m harness bench --runner``: the runner's own cost per cell, and how it grows.

A grid of a trivial method (:class:`Noop`: ``index`` only tells its configurations apart, and
it returns zeros) on ``iris`` with a two-tree forest and ten seeds (ten model fits, shared by
every cell of their seed, as the runner shares them) is run at ``sizes`` cells by each
executor, one cell at a time (``jobs=1``), in a fresh folder. The runner's overhead per cell
is the run's wall time minus the cells' own work (the method's ``time_explain`` and the
model's ``time_predict`` that every cell measures), over the number of cells: it holds the
planning, the fits, the dispatch to the executor, the result's way back and its commit to the
store. The same grid is then run again (every cell reused: the resume check), and the reports
are built from the in-process run's folder. The store's own scaling is timed directly:
``record_cell`` of every cell, ``statuses`` (the resume check's one read) and loading the
results as tables. Linear growth shows as a constant figure per cell from 10^3 to 10^4.

A run's overhead also holds costs paid once per run, whatever its size: imports, the model
fits, and for Dask the start and the shutdown of its ``LocalCluster`` (seconds), which alone
add milliseconds per cell at 10^3 cells. So each executor's overhead is also split, from two
sizes, into the cost of one more cell (``marginal_ms``: the slope of the overhead between
that size and the one before) and the cost paid once (``fixed_s``: the rest); the reports'
build time is split the same way. Each executor first runs a small grid untimed, so that
imports paid once per process do not land on the smallest size.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core import registry
from harness.core.method import Method
from harness.core.params import Interval, Param
from harness.run.cell_result import CellResult
from harness.run.results import RunResults
from harness.run.runner import compare
from harness.run.store import Store

SIZES = (1_000, 10_000)
#: methods of the study grid whose reports are timed too: a study (datasets x K values x
#: depths x seeds x methods) grows by its data, models and seeds, with a handful of methods,
#: where the runner's grid above gives every cell a method setting of its own (pairwise
#: method agreement and per-method figures then grow with the square of the cells)
STUDY_METHODS = 10
EXECUTORS = ("inprocess", "process", "dask")
SEEDS = 10
DATASET, MODEL = "iris", "extra_trees[n_estimators=2]"


class Noop(Method):
    """A method that does nothing: its cells measure the runner alone (bench only)."""

    name, scope, family = "bench_noop", "global", "bench"
    unit, explains = "nothing", "nothing: a bench of the runner's overhead"
    parameters = {"index": Param(0, (Interval(int, 0, None),), "tells configurations apart")}
    summary = "zeros; the runner's overhead bench"

    def _explain(self, model, data, rng):
        return np.zeros(data.X.shape[1])


def _grid(n_cells: int) -> dict:
    per_seed = max(1, n_cells // SEEDS)
    return {"datasets": [DATASET], "models": [MODEL], "seeds": list(range(SEEDS)),
            "methods": [Noop(index=i) for i in range(per_seed)]}


def _cell_work(out: Path) -> float:
    """Seconds the cells spent in the method and the model's predict (their own work)."""
    results = RunResults.open(out)
    try:
        cells = results.cells
        return float(cells["time_explain"].fillna(0).sum() + cells["time_predict"].fillna(0)
                     .sum())
    finally:
        results.close()


def _time_executor(executor: str, n_cells: int, folder: Path) -> dict:
    grid = _grid(n_cells)
    out = folder / f"{executor}-{n_cells}"
    start = time.perf_counter()
    summary = compare(**grid, out=out, executor=executor, jobs=1, reports=False)
    wall = time.perf_counter() - start
    if summary.done != summary.total:
        raise RuntimeError(f"the {executor} bench run left cells undone: {summary.line()}")
    start = time.perf_counter()
    compare(**grid, out=out, executor=executor, jobs=1, reports=False)
    resume = time.perf_counter() - start
    work = _cell_work(out)
    n = summary.total
    return {"executor": executor, "cells": n, "wall_s": wall, "cell_work_ms": 1e3 * work / n,
            "overhead_ms": 1e3 * (wall - work) / n, "resume_ms": 1e3 * resume / n, "out": out}


def _time_store(n_cells: int, folder: Path) -> dict:
    """record_cell of n cells, the resume check's read, and the results as tables."""
    out = folder / f"store-{n_cells}"
    result = CellResult(status="done", scope="global", unit="x", explains="x",
                        feature_names=["a", "b", "c", "d"], time_explain=0.0, time_predict=0.0,
                        n_explained=1, values=np.zeros(4))
    with Store(out) as store:
        start = time.perf_counter()
        for i in range(n_cells):
            store.record_cell({"key": f"{i:08d}", "dataset": DATASET, "model": MODEL,
                               "seed": 0, "method": f"bench_noop[index={i}]",
                               "method_name": "bench_noop"}, result)
        write = time.perf_counter() - start
        start = time.perf_counter()
        store.statuses()
        read = time.perf_counter() - start
    start = time.perf_counter()
    results = RunResults.open(out)
    try:
        results.importances_table()
    finally:
        results.close()
    load = time.perf_counter() - start
    return {"cells": n_cells, "write_ms": 1e3 * write / n_cells,
            "statuses_ms": 1e3 * read / n_cells, "load_ms": 1e3 * load / n_cells}


def _time_reports(out: Path) -> float:
    start = time.perf_counter()
    registry.build_reports(out)
    return time.perf_counter() - start


def _time_study_reports(n_cells: int, folder: Path) -> float:
    """Seconds to build every report of an in-process run of :data:`STUDY_METHODS` methods
    times ``n_cells / STUDY_METHODS`` seeds (one model fit per seed)."""
    out = folder / f"study-{n_cells}"
    seeds = max(1, n_cells // STUDY_METHODS)
    compare(datasets=[DATASET], models=[MODEL], seeds=list(range(seeds)),
            methods=[Noop(index=i) for i in range(STUDY_METHODS)], out=out,
            executor="inprocess", jobs=1, reports=False)
    return _time_reports(out)


def _split(table: pd.DataFrame, by: str, seconds: str) -> pd.DataFrame:
    """Add ``marginal_ms`` (milliseconds per cell of ``seconds`` between a row's size and the
    previous size of its group; NaN for the smallest) and ``fixed_s`` (``seconds`` minus
    that slope times the cells: the part paid once per run)."""
    table = table.copy()
    table["marginal_ms"] = np.nan
    for _, rows in table.sort_values("cells").groupby(by, sort=False):
        index = rows.index
        slope = rows[seconds].diff() / rows["cells"].diff()
        table.loc[index, "marginal_ms"] = 1e3 * slope
    table["fixed_s"] = table[seconds] - table["marginal_ms"] / 1e3 * table["cells"]
    return table


def run_overhead(sizes: tuple[int, ...] = SIZES, executors: tuple[str, ...] = EXECUTORS,
                 on_step: Callable[[str], None] | None = None,
                 reports: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Time the runner per executor and size, and the store and reports per size.

    Returns
    -------
    runner : DataFrame
        One row per (executor, cells): ``wall_s``, ``cell_work_ms`` (the cells' own work per
        cell), ``overhead_ms`` (the rest, per cell), ``resume_ms`` (a rerun that reuses
        every cell, per cell), and the overhead split (from this size and the one before)
        into ``marginal_ms`` (per further cell) and ``fixed_s`` (once per run).
    store : DataFrame
        One row per size: ``write_ms``, ``statuses_ms`` and ``load_ms`` per cell (store
        alone), ``reports_s`` / ``reports_ms`` (every report built from the in-process
        run of that size; NaN when ``reports`` is false or that run was not made), and
        ``reports_marginal_ms`` / ``reports_fixed_s``, the build time split as the runner's
        overhead is; ``study_reports_s`` / ``study_reports_ms``, the same build for a study
        grid of that many cells with :data:`STUDY_METHODS` methods (NaN without
        ``reports``).
    """
    say = on_step or (lambda text: None)
    folder = Path(tempfile.mkdtemp(prefix="harness-overhead-"))
    try:
        runs, stores = [], []
        for executor in executors:
            # untimed: the first run in a process pays imports that no later one does, which
            # would land in the smallest size's figures (and a negative marginal cost)
            say(f"runner: {executor}, warming up")
            compare(**_grid(SEEDS), out=folder / f"warm-{executor}", executor=executor,
                    jobs=1, reports=False)
        for n_cells in sizes:
            for executor in executors:
                say(f"runner: {executor}, {n_cells} cells")
                runs.append(_time_executor(executor, n_cells, folder))
            say(f"store: {n_cells} cells")
            row = _time_store(n_cells, folder)
            source = next((r["out"] for r in runs if r["cells"] >= n_cells
                           and r["executor"] == "inprocess"), None)
            row["reports_s"] = np.nan
            if reports and source is not None:
                say(f"reports: {n_cells} cells")
                row["reports_s"] = _time_reports(source)
            row["reports_ms"] = 1e3 * row["reports_s"] / n_cells
            row["study_reports_s"] = np.nan
            if reports:
                say(f"reports: a study grid of {n_cells} cells, {STUDY_METHODS} methods")
                row["study_reports_s"] = _time_study_reports(n_cells, folder)
            row["study_reports_ms"] = 1e3 * row["study_reports_s"] / n_cells
            stores.append(row)
        runner = pd.DataFrame(runs).drop(columns="out")
        runner["overhead_s"] = runner["overhead_ms"] * runner["cells"] / 1e3
        runner = _split(runner, "executor", "overhead_s")
        stores = _split(pd.DataFrame(stores).assign(executor=""), "executor", "reports_s")
        return (runner.drop(columns="overhead_s"),
                stores.drop(columns="executor").rename(columns={
                    "marginal_ms": "reports_marginal_ms", "fixed_s": "reports_fixed_s"}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
