"""The runner: expand a grid, skip stored cells, fit each model once, execute, store, report."""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import registry
from harness.core.errors import BadInputError, HarnessError
from harness.forest.models import fit_model
from harness.forest.view import predict_output
from harness.run.cell_result import FINAL_STATUSES, CellResult
from harness.run.cells import Cell, expand_datasets, expand_methods, expand_models, iter_cells
from harness.run.defaults import DEFAULT_GRID
from harness.run.environment import describe_environment, package_versions
from harness.run.execute import CellInput, compile_ahead, prepare_methods
from harness.run.executors import make_executor
from harness.run.executors.process import call_bounded
from harness.run.lock import RunLock
from harness.run.native_threads import one_native_thread
from harness.run.options import check_option, compare_options, reject_repeats
from harness.run.protocol import ExplainRequest
from harness.run.store import Store
from harness.run.versions import VersionMix, stored_versions


@dataclass
class RunSummary:
    """Counts of one ``compare`` run and where its results are."""

    out: Path
    total: int = 0
    done: int = 0
    reused: int = 0
    skipped: int = 0
    not_installed: int = 0
    error: int = 0
    timeout: int = 0
    wall_time: float = 0.0
    reports: list[Path] = field(default_factory=list)
    #: keys of the cells of the grid (stored earlier or run now), in plan order
    cell_keys: list[str] = field(default_factory=list)
    #: reused cells made by package versions other than the current ones
    other_versions: VersionMix = field(default_factory=VersionMix)

    def line(self) -> str:
        text = (f"cells: {self.total} total, {self.done} done ({self.reused} reused), "
                f"{self.skipped} skipped, {self.error} error, {self.timeout} timeout")
        if self.not_installed:
            text += f", {self.not_installed} not installed"
        if self.other_versions.cells:
            text += "\n" + self.other_versions.line()
        return text

    @property
    def exit_code(self) -> int:
        return 0 if self.error == 0 and self.timeout == 0 else 1


def cell_versions() -> dict[str, str]:
    """The versions stored with every cell (those that change what a method computes)."""
    found = package_versions()
    return {dist: found[dist] for dist in ("tree-importance-harness", "numpy", "scikit-learn",
                                           "shap", "pandas")}


def _explain_rows(model, dataset, cell: Cell) -> np.ndarray:
    info = model.harness_fit_
    fixed = cell.method.rows
    rows = {"train": info["train_index"], "test": info["test_index"],
            "all": np.arange(dataset.n_samples)}[fixed or cell.explain_on]
    if fixed is None and cell.max_explain is not None and rows.size > cell.max_explain:
        rng = np.random.default_rng(cell.seed)
        rows = np.sort(rng.choice(rows, size=cell.max_explain, replace=False))
    return rows


def plan(datasets=None, models=None, methods=None, seeds=None, explain_on="train",
         max_explain=None) -> list[Cell]:
    """Validate a grid and list its cells; raises on bad input before anything is written."""
    datasets, models, methods, seeds, explain_on, max_explain = (
        check_option(name, value) for name, value in (
            ("datasets", datasets), ("models", models), ("methods", methods), ("seeds", seeds),
            ("explain_on", explain_on), ("max_explain", max_explain)))
    seeds = list(DEFAULT_GRID["seeds"] if seeds is None else seeds)
    grid = (expand_datasets(DEFAULT_GRID["datasets"] if datasets is None else datasets),
            expand_models(DEFAULT_GRID["models"] if models is None else models),
            expand_methods(DEFAULT_GRID["methods"] if methods is None else methods), seeds)
    for name, items in zip(("datasets", "models", "methods", "seeds"), grid):
        if not items:
            raise BadInputError(f"The grid has no {name}; give at least one.")
        reject_repeats(name, items)  # a cell named twice would run and count twice
    for dataset in grid[0]:
        for model in grid[1]:
            model.estimator(dataset.task, 0)  # e.g. a regression criterion on a classifier
    return list(iter_cells(*grid, explain_on=explain_on, max_explain=max_explain))


def compare(
    datasets: list | None = None, models: list | None = None, methods: list | None = None,
    seeds: list[int] | None = None, out: str | Path = "runs/compare", jobs: int | None = None,
    timeout: float | None = 600.0, executor: str = "process", force: bool = False,
    max_memory: float | None = None, scheduler: str | None = None,
    explain_on: str = "train", max_explain: int | None = None, reports: bool = True,
    on_event: Callable[[str, Any], None] | None = None,
) -> RunSummary:
    """Run a grid of datasets x models x seeds x methods and write store and reports.

    Cells already stored as ``done`` or ``skipped`` are reused (unless ``force``); failed ones
    are retried. ``on_event(kind, payload)`` receives ``("total", n)``, ``("cell", (cell,
    status))``, ``("progress", (cell, fraction))`` from a cell that reports its progress (a
    long one such as loco; not on Dask) and ``("stage", text)`` for progress display. When
    neither ``datasets`` nor ``methods`` is given, the default grid (with its
    ``max_explain``) is used. Returns a :class:`RunSummary`. Every option is checked first
    (:mod:`harness.run.options`): bad input raises :class:`BadInputError` before anything
    is written.
    """
    # every option checked and normalised (harness.run.options) before anything is written
    options = compare_options(
        datasets=datasets, models=models, methods=methods, seeds=seeds, out=out, jobs=jobs,
        timeout=timeout, executor=executor, force=force, max_memory=max_memory,
        scheduler=scheduler, explain_on=explain_on, max_explain=max_explain, reports=reports,
        on_event=on_event)
    out, executor, timeout, max_memory = (options.out, options.executor, options.timeout,
                                          options.max_memory)
    notify = options.on_event or (lambda kind, payload: None)
    max_explain = options.max_explain
    if max_explain is None and options.datasets is None and options.methods is None:
        max_explain = DEFAULT_GRID["max_explain"]
    cells = plan(options.datasets, options.models, options.methods, options.seeds,
                 options.explain_on, max_explain)
    # built before anything is written: a missing optional executor is bad input
    executor_obj = make_executor(executor, jobs=options.jobs, timeout=timeout,
                                 max_memory=max_memory, scheduler=options.scheduler)
    start, started = time.perf_counter(), time.time()
    summary = RunSummary(out=Path(out), total=len(cells), cell_keys=[c.key for c in cells])
    try:
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInputError(f"Cannot create the run folder {str(out)!r}: {exc}") from exc
        with RunLock(out), Store(out) as store, one_native_thread():
            _run_cells(cells, store, executor_obj, summary, options.force, notify,
                       FitLimits(timeout, max_memory, isolated=executor != "inprocess"))
            store.record_run(started, time.perf_counter() - start,
                             {**describe_environment(), "executor": executor,
                              "jobs": options.jobs})
            if options.reports:
                notify("stage", "writing reports")
                summary.reports = registry.build_reports(Path(out))
    finally:
        close = getattr(executor_obj, "close", None)
        if close is not None:
            close()
    summary.wall_time = time.perf_counter() - start
    return summary


@dataclass(frozen=True)
class FitLimits:
    """How model fitting is bounded: in a forked child with the run's per-cell ``timeout``
    and ``max_memory`` (``isolated``), or in this process (the in-process executor)."""

    timeout: float | None
    max_memory: float | None
    isolated: bool


def _run_cells(cells: list[Cell], store: Store, executor_obj, summary: RunSummary,
               force: bool, notify, limits: FitLimits) -> None:
    """Reuse stored cells, prepare and execute the rest, recording each result."""
    stored = {} if force else store.statuses()
    todo = [c for c in cells if stored.get(c.key) not in FINAL_STATUSES]
    todo_keys = {c.key for c in todo}
    versions = cell_versions()
    stored_versions_text = store.cell_versions() if len(todo) < len(cells) else {}
    for cell in cells:
        if cell.key not in todo_keys:
            _count(summary, stored[cell.key])
            summary.reused += stored[cell.key] == "done"
            summary.other_versions.add(stored_versions(stored_versions_text[cell.key]),
                                       versions)
    notify("total", (summary.total, summary.total - len(todo)))

    def record(cell: Cell, result: CellResult) -> None:
        result = dataclasses.replace(result, versions=versions)
        store.record_cell(cell.meta(), result)
        _count(summary, result.status)
        notify("cell", (cell, result.status))

    # the kernels compile in worker processes while the data load and the models fit here
    compiling = compile_ahead({type(cell.method) for cell in todo},
                              lambda done, total, name: notify(
                                  "stage", f"compiling kernels: {done}/{total} methods"))
    _refresh_truth(cells, todo, store)
    tasks = _prepare(todo, store, record, notify, limits)
    if compiling is not None:
        compiling.join()
    if executor_obj.cells_run_here:  # forked or in-process cells inherit them
        prepare_methods({type(cell.method) for cell, _ in tasks})  # loaded from the cache
    notify("stage", f"explaining {len(tasks)} cells")
    executor_obj.run(tasks, record,
                     lambda cell, fraction: notify("progress", (cell, fraction)))


def _refresh_truth(cells: list[Cell], todo: list[Cell], store: Store) -> None:
    """Store again the ground truth of datasets whose stored truth cannot be read (a store
    written by an older version holds it as a pickle, which is never loaded); the datasets
    of cells still to run are stored anyway when they are loaded."""
    loading = {(repr(c.dataset), c.seed) for c in todo}
    seen = set()
    for cell in cells:
        where = (repr(cell.dataset), cell.seed)
        if where in seen or where in loading:
            continue
        seen.add(where)
        if store.truth_needs_refresh(*where):
            try:
                store.record_dataset(f"{where[0]}|{where[1]}", cell.dataset.load(cell.seed),
                                     cell.seed)
            except HarnessError:
                raise
            except Exception:  # the reports then go without this truth, as before
                pass


def _count(summary: RunSummary, status: str) -> None:
    """One more cell of ``status`` (each status of the closed set is a counter)."""
    setattr(summary, status, getattr(summary, status) + 1)


def _failure(stage: str, exc: BaseException) -> CellResult:
    return CellResult.failure("error", f"{stage} failed: {type(exc).__name__}: {exc}",
                              traceback.format_exc())


def _fit(cell: Cell, dataset, limits: FitLimits) -> tuple[Any, CellResult | None]:
    """The fitted model of a cell group, or None and the failure that its cells record."""
    if not limits.isolated:
        try:
            return fit_model(cell.model, dataset, cell.seed), None
        except Exception as exc:
            return None, _failure("fitting the model", exc)
    return call_bounded(fit_model, (cell.model, dataset, cell.seed), limits.timeout,
                        limits.max_memory, "fitting the model")


def _prepare(todo: list[Cell], store: Store, record, notify,
             limits: FitLimits) -> list[tuple[Cell, CellInput]]:
    """Load each dataset and fit each model once; failures become error cells."""
    tasks = []
    loaded: dict[tuple[str, int], Any] = {}
    groups: dict[tuple[str, str, int], list[Cell]] = {}
    for cell in todo:
        groups.setdefault(cell.group, []).append(cell)
    for (dataset_key, model_key, seed), group in groups.items():
        first = group[0]
        notify("stage", f"fitting {model_key} on {dataset_key} (seed {seed})")
        try:
            if (dataset_key, seed) not in loaded:
                dataset = first.dataset.load(seed)
                store.record_dataset(f"{dataset_key}|{seed}", dataset, seed)
                loaded[(dataset_key, seed)] = dataset
            dataset = loaded[(dataset_key, seed)]
        except Exception as exc:
            for cell in group:
                record(cell, _failure("loading the dataset", exc))
            continue
        model, failure = _fit(first, dataset, limits)
        if failure is not None:
            for cell in group:
                record(cell, failure)
            continue
        _record_model(store, model, dataset, first)
        for method_class in {type(cell.method) for cell in group}:
            try:
                method_class.share(model)
            except Exception:  # the cells themselves will report the failure
                pass
        for cell in group:
            rows = _explain_rows(model, dataset, cell)
            weight = None if dataset.sample_weight is None else dataset.sample_weight[rows]
            # validated in the cell, by the protocol harness.explain runs too
            data = ExplainRequest(dataset.X[rows], dataset.y[rows], sample_weight=weight,
                                  feature_names=dataset.feature_names)
            tasks.append((cell, CellInput(model=model, data=data, sample_index=rows)))
    return tasks


def _record_model(store: Store, model, dataset, cell: Cell) -> None:
    info = model.harness_fit_
    start = time.perf_counter()
    predict_output(model, dataset.X[info["train_index"]])
    store.record_model({
        "key": f"{cell.group[0]}|{cell.group[1]}|{cell.seed}", "dataset": cell.group[0],
        "model": cell.group[1], "seed": cell.seed, "task": dataset.task,
        "fit_time": info["fit_time"], "score": info["score"],
        "score_name": info["score_name"], "n_train": int(info["train_index"].size),
        "n_test": int(info["test_index"].size), "n_features": dataset.n_features,
        "feature_names": dataset.feature_names,
        "predict_time": time.perf_counter() - start,
    })
