"""``python -m harness bench --scaling``: how each method's cost grows with the work.

Every registered method (its defaults, with the sample counts of the sampling methods fixed:
:data:`FIXED_WORK`) is timed along four axes, one at a time around the base point
:data:`BASE` (n = 1000 rows, p = 10 features, 100 trees of depth at most 8):

- ``n``: the rows the method reads. Methods that read the training rows (``rows = "train"``:
  the out-of-bag family, ``rs``, ``srs``, ``loco``) get a forest grown on those n rows; the
  others explain n fresh rows of the same distribution with the base forest;
- ``p``: the features of the data (the forests try ``sqrt(p)`` features per split, so that a
  tree's shape does not change with p);
- ``trees``: the forest's number of trees (one forest grown by ``warm_start``, copied at
  each size, so that every size shares its first trees);
- ``depth``: the forest's ``max_depth``; the size on this axis is the measured mean depth of
  the leaves (trees of n = 1000 rows stop deepening near depth 10).

The data are Friedman #1 (``make_friedman1``, noise 1, its first five features relevant),
the forest a ``RandomForestRegressor(max_features="sqrt", bootstrap=True)``. A point is the
best of ``repeat`` runs of ``Method.explain`` alone (in the protocol's row blocks for a
``rows_independent`` method; inputs validated, the method prepared and the forest's view
built beforehand, as the runner does; two runs once a run is longer than ``LONG_RUN``, one
past ``VERY_LONG_RUN``; a short point more than ``SUSPECT`` times its prediction is timed
again after ``RETRY_PAUSE`` and keeps the better try, the first in ``first_seconds``), on
one numba thread unless asked otherwise. Sizes ascend; a point
whose predicted time (the last point's time times the size ratio to the power of the larger
of the stated and the last measured slope) exceeds ``budget`` is skipped, and so is every
larger one of that axis, with the reason in the table (the second point of an axis may take
up to ``SECOND_POINT`` budgets: two points make an exponent); so is a point whose forest
would take longer than ``fit_budget`` to grow.

Each point has the best wall time and the best CPU time (``time.process_time``) of its
runs. The exponent of a method on an axis is the order k of the part of its CPU time that
grows with the size: t ≈ a + c x^k fitted over all the axis's points (:func:`growth_fit`; a
is the time that does not grow, the call's overhead and the other axes' work, which bends a
plain log-log slope towards 0 wherever it is not negligible), where the axis has at least
four points and grows by at least ``FLOOR_FACTOR``; elsewhere the least-squares slope of
log CPU time against log size over the points at or above the axis's noise floor
(``floor``, and ``FLOOR_FACTOR`` times the axis's fastest point), or over every point when
fewer than two are above. Beside it, the order the method states
(:attr:`harness.core.method.Method.complexity`) and whether they agree within
``tolerance``, judged where the sizes that carry the growth span at least ``MIN_SPAN``
times (over a narrower span the noise alone moves the slope by more) and, for a slope over
every point, only when it is above the statement (below, it is a lower bound: the slope of
a + c x^k lies between 0 and k). A cost stated to grow with the depth is judged on that
axis only where the trees' leaves grow no faster than their depth: capping the depth of
trees grown on 1000 rows grows their leaves about as 2^depth (4 to about 470 per tree), and
with them the memory a walk step reads, so the time per operation changes along the axis
and a stated order in the depth (the operations at a fixed tree size) is not what the slope
measures; the curves show it. On the n axis, the methods that read the training rows get
forests grown on those rows, whose trees grow with n (52 to 240 leaves per tree from 100 to
10^5 rows): there the slope is judged against the stated order plus the exponent of that
growth (a cost per row at most proportional to a tree's size,
:func:`_tree_growth_allowance`). CPU time because the machine may be shared: another process
holding the core inflates the wall time of some points and bends the slope (on this 2-core
machine at load 8, wall-time slopes were off by up to 0.6), not the CPU time.

The stated exponents count operations; two memory effects bend the measured curves where
the operation count does not change: rows of p ≥ 1000 features span many cache lines, so
that every walk step reads a new one (the out-of-bag walks then grow with p although their
walks do not), and trees deeper than about 8 outgrow the caches, so that a walk step costs
more (local MDI, one thread, 1000 rows, 100 trees: 0.23-0.28 ms per 10^5 row-tree steps up
to max_depth 8, 0.40 ms at max_depth 12, mean leaf depth 10.2), which steepens the path
walks' depth exponents (1.4-2 against 1) where that axis is judged. On the p axis a cost
can also be a sum of terms of different orders: walks that do not grow with p plus an
(n, p) output, shifts or row coding (TreeSHAP, Sobol-MDA, local MDI, Saabas, mda_bc,
mda_ik, MDI). Such a method states both, ``(0, 1)``: the slope of a sum of power laws lies
between their exponents at every size (:mod:`harness.core.complexity`), and its growth is
judged against that range.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import pandas as pd
from scipy.optimize import nnls
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor

from harness.core import registry
from harness.core.complexity import Stated, outside_range, stated_label, stated_range
from harness.core.method import Method
from harness.forest.compact import leaf_depths
from harness.forest.view import forest_view
from harness.run.inputs import validate_explain_inputs
from harness.run.protocol import missing_capability, row_block

AXES = ("n", "p", "trees", "depth")
BASE = {"n": 1000, "p": 10, "trees": 100, "depth": 8}
SIZES: dict[str, tuple[int, ...]] = {
    "n": (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000),
    "p": (5, 10, 30, 100, 300, 1_000, 3_000, 10_000),
    "trees": (10, 30, 100, 300, 1_000),
    "depth": (2, 3, 4, 6, 8, 12),
}
#: Parameters that fix a method's amount of work where its default adapts it to the data
#: (SAGE samples until its values converge: here a fixed number of permutations, with a
#: threshold never reached) or is needlessly large for a bench (``rs``/``srs`` grow their own
#: trees; ``loco`` refits (p + 1) x n_folds forests; ``shaff`` projects 2 p + 2 n_subsets
#: subsets, still linear in p).
FIXED_WORK: dict[str, dict[str, Any]] = {
    "sage": {"thresh": 1e-9, "max_permutations": 64, "batch_size": 32},
    "tree_sage": {"thresh": 1e-9, "max_permutations": 32, "batch_size": 32},
    "shaff": {"n_subsets": 32},
    "rs": {"n_trees": 50},
    "srs": {"n_trees": 50},
    "loco": {"n_folds": 2},
}
DATASET = "make_friedman1(n_samples=n, n_features=p, noise=1.0)"
MODEL = ("RandomForestRegressor(n_estimators=trees, max_depth=depth, max_features='sqrt', "
         "bootstrap=True)")
#: seconds: a run this long is timed twice, and one past VERY_LONG_RUN once (single runs of
#: 0.3-1.3 s of loco's refits varied by up to 50 % between bench runs on an idle machine)
LONG_RUN = 0.25
VERY_LONG_RUN = 2.0
BUDGET = 1.0  # seconds: largest predicted time of one timed point
FIT_BUDGET = 30.0  # seconds: largest predicted time to grow one point's forest
FLOOR = 0.001  # seconds: points below are left out of the exponent fits
#: ... and so are points below this multiple of the fastest point of their axis: the time
#: that does not grow with the size (the call's overhead, the other axes' work) hides the
#: exponent there, which is the order of the growing part
FLOOR_FACTOR = 2.0
SUSPECT = 2.0  # a single long run this many times its prediction is run once more
#: seconds between a short point's two tries, where the first is SUSPECT times its
#: prediction (:func:`_time_explain`)
RETRY_PAUSE = 2.0
SECOND_POINT = 5.0  # the second point of an axis may take up to this many budgets
TOLERANCE = 0.35  # largest distance of a fitted slope from the stated range
#: ... over sizes spanning at least this ratio (two neighbours of the n, p and trees grids,
#: 3 to 3.3x apart): a 25 % error in a time (a busy core) moves the slope by
#: log(1.25) / log(span), 0.2 at a span of 3, 0.32 at 2 (p = 5 and 10 only, where the
#: budget stopped an axis, were read as disagreements), 0.41 at the 1.7x that the depth
#: axis spans above its noise floor (mean leaf depths 5.9 to 10.2: trees of 1000 rows stop
#: deepening near 10)
MIN_SPAN = 3.0
#: leaves per tree growing by less than this over an n axis count as a fixed tree size
LEAF_GROWTH_SEEN = 1.05
MAX_SLOPE = 3.0  # cap of the slope used to predict the next point's time
#: exponents tried by the growth fit t = a + c x^k (step 0.01), and the fewest points it
#: takes (three parameters: with three points it would pass through them, noise and all)
GROWTH_EXPONENTS = np.round(np.arange(-0.5, 6.0 + 1e-9, 0.01), 2)
GROWTH_MIN_POINTS = 4
#: the time the exponents are fitted on: the process's CPU time, which other processes
#: holding the core do not inflate as they do the wall time (on one thread it is the work)
TIME = "cpu_seconds"
QUICK = {"budget": 0.25, "fit_budget": 8.0, "repeat": 2}
POINT_COLUMNS = ("method", "axis", "size", "x", "seconds", "cpu_seconds", "runs", "status",
                 "reason", "predicted_seconds", "mean_depth", "mean_leaves", "fit_seconds",
                 "first_seconds")
#: ``stated`` is the highest stated exponent (the order that dominates the growth, which the
#: bench predicts with), ``stated_low`` the lowest (equal unless the cost is a sum of terms);
#: ``difference`` is the fitted slope's signed distance from that range
EXPONENT_COLUMNS = ("method", "axis", "exponent", "stated_low", "stated", "difference",
                    "agrees", "n_points", "x_min", "x_max", "note")


@dataclass
class Point:
    """A forest and the rows of one size of one axis."""

    X_train: np.ndarray
    y_train: np.ndarray
    model: Any
    fit_seconds: float
    X_rows: np.ndarray | None = None  # rows the non-training methods read (default: train)
    y_rows: np.ndarray | None = None
    shape: dict[str, float] = field(default_factory=dict)

    def rows(self, method: Method) -> tuple[np.ndarray, np.ndarray]:
        if method.rows == "train" or self.X_rows is None:
            return self.X_train, self.y_train
        return self.X_rows, self.y_rows


def synthetic(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Friedman #1 rows: X ~ U(0, 1)^p, y = 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5
    + N(0, 1) (Friedman 1991); features beyond the fifth are irrelevant."""
    return make_friedman1(n_samples=n, n_features=p, noise=1.0, random_state=seed)


def scaling_forest(trees: int, depth: int, jobs: int = 1, warm_start: bool = False):
    """The (unfitted) forest of every scaling point: ``trees`` regression trees of depth at
    most ``depth`` trying sqrt(p) features per split, on bootstrap samples."""
    return RandomForestRegressor(n_estimators=trees, max_depth=depth, max_features="sqrt",
                                 bootstrap=True, random_state=0, n_jobs=jobs,
                                 warm_start=warm_start)


def _shape(model) -> dict[str, float]:
    """Mean leaf depth and mean number of leaves per tree (what the depth axis grows), read
    from the forest's view."""
    packed = forest_view(model).packed
    tree, depth = leaf_depths(packed)
    leaves = np.bincount(tree, minlength=packed.n_trees)
    mean_depth = np.bincount(tree, depth, packed.n_trees) / leaves
    return {"mean_depth": float(mean_depth.mean()), "mean_leaves": float(leaves.mean())}


def _prepared(model, methods: list[Method], fit_seconds: float,
              X: np.ndarray, y: np.ndarray) -> Point:
    """The fitted forest with the view forms every method reads built (never timed), its
    predictions on one thread (as the bench's other timings)."""
    model.set_params(n_jobs=1)
    view = forest_view(model).build("packed", "paths")
    for method in methods:
        if not missing_capability(method, model):
            type(method).share(model)
    del view
    return Point(X, y, model, fit_seconds, shape=_shape(model))


class _Points:
    """The forests of one axis, grown lazily in ascending size (the trees axis grows one
    forest by warm start). ``kind`` "train" is the n axis's forest grown on the n rows."""

    def __init__(self, axis: str, methods: list[Method], jobs: int) -> None:
        self.axis, self.methods, self.jobs = axis, methods, jobs
        self.cache: dict[tuple[int, str], Point] = {}
        self.grower = None
        self.base: Point | None = None
        self.last_fit: dict[str, tuple[int, float]] = {}

    def predicted_fit(self, size: int, kind: str) -> float:
        if (size, kind) in self.cache or kind not in self.last_fit:
            return 0.0
        last_size, seconds = self.last_fit[kind]
        return seconds * (size / last_size) ** 1.2

    def get(self, size: int, kind: str) -> Point:
        key = (size, kind)
        if key not in self.cache:
            # keep only the forests of this size: the next sizes need new ones
            self.cache = {k: v for k, v in self.cache.items() if k[0] == size}
            self.cache[key] = self._make(size, kind)
        return self.cache[key]

    def _make(self, size: int, kind: str) -> Point:
        settings = {**BASE, self.axis: size}
        if self.axis == "n" and kind == "rows":  # the base forest explains n fresh rows
            if self.base is None:
                self.base = self._make(BASE["n"], "train")
            X_rows, y_rows = synthetic(size, settings["p"], seed=1)
            base = self.base
            return Point(base.X_train, base.y_train, base.model, base.fit_seconds, X_rows,
                         y_rows, base.shape)
        n_train = size if self.axis == "n" and kind == "train" else BASE["n"]
        X, y = synthetic(n_train, settings["p"])
        start = time.perf_counter()
        if self.axis == "trees":
            if self.grower is None:
                self.grower = scaling_forest(size, settings["depth"], self.jobs, warm_start=True)
            self.grower.set_params(n_estimators=size, n_jobs=self.jobs)
            model = copy.deepcopy(self.grower.fit(X, y))
            model.set_params(warm_start=False)
        else:
            model = scaling_forest(settings["trees"], settings["depth"], self.jobs).fit(X, y)
        seconds = time.perf_counter() - start
        self.last_fit[kind] = (size, seconds)
        return _prepared(model, self.methods, seconds, X, y)


def _kind(axis: str, method: Method) -> str:
    return "train" if axis == "n" and method.rows == "train" else "rows"


def _slope(x: np.ndarray, t: np.ndarray) -> float:
    return float(np.polyfit(np.log(x), np.log(t), 1)[0])


def _time_explain(method: Method, point: Point, repeat: int,
                  predicted: float = math.nan) -> tuple[float, float, int, float]:
    """Best wall and best CPU seconds of ``method.explain`` over up to ``repeat`` runs, in
    the row blocks the protocol gives a ``rows_independent`` method (what users run), the
    number of runs, and the first try's best wall seconds where the point was timed twice
    (NaN otherwise).

    A short point (best under ``LONG_RUN``) whose best is more than ``SUSPECT`` times its
    prediction is timed again after ``RETRY_PAUSE``, and keeps the better try: a neighbour
    on this shared host slows a core for longer than one try's runs (local MDI at p = 10^4,
    1000 rows: 0.110 s, CPU time alike, in one full bench, against 0.022-0.025 s in six
    runs alone, which read its p exponent as 1.58 against a stated 0 to 1).
    """
    X, y = point.rows(method)
    data = validate_explain_inputs(point.model, X, y)
    reason = missing_capability(method, point.model) or method.skip(point.model, data)
    if reason:
        raise _Skipped(reason)
    block_rows = (row_block(point.model, X.shape[1], method) if method.rows_independent
                  else None)
    best, best_cpu, runs = _best_of(method, point.model, data, block_rows, repeat, predicted)
    first = math.nan
    if best < LONG_RUN and best > SUSPECT * predicted:
        time.sleep(RETRY_PAUSE)
        first = best
        again, again_cpu, more = _best_of(method, point.model, data, block_rows, repeat,
                                          predicted)
        best, best_cpu, runs = min(best, again), min(best_cpu, again_cpu), runs + more
    return best, best_cpu, runs, first


def _best_of(method: Method, model, data, block_rows: int | None, repeat: int,
             predicted: float) -> tuple[float, float, int]:
    """Best wall and CPU seconds of up to ``repeat`` runs of one try, and its runs."""
    best, best_cpu, runs = math.inf, math.inf, 0
    for _ in range(repeat):
        cpu = time.process_time()
        result = method.explain(model, data, np.random.default_rng(0), block_rows=block_rows)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best, runs = min(best, result.time_explain), runs + 1
        # a long run is timed twice (a very long one once), unless the first is far above
        # its prediction: a compilation of a new specialisation, or another process
        # holding the core, once more
        long = (result.time_explain > VERY_LONG_RUN
                or (result.time_explain > LONG_RUN and runs >= 2))
        if long and not (runs == 1 and best > SUSPECT * predicted):
            break
    return best, best_cpu, runs


class _Skipped(Exception):
    """The method declines this point (its reason)."""


def _predict(history: list[tuple[float, float]], size: float, stated: float | None,
             floor: float) -> float:
    """Time of the next point: the last one scaled by the size ratio to the power of the
    larger of the stated exponent and the last measured slope (when both its points are
    above the floor), capped at MAX_SLOPE."""
    last_x, last_t = history[-1]
    slopes = [stated if stated is not None else 1.0]
    if len(history) >= 2 and min(history[-2][1], last_t) >= floor:
        slopes.append(_slope(np.array([history[-2][0], last_x]),
                             np.array([history[-2][1], last_t])))
    return last_t * (size / last_x) ** min(max(slopes), MAX_SLOPE)


def short_span(x_min: float, x_max: float) -> bool:
    """Whether sizes from ``x_min`` to ``x_max`` span too little to judge an exponent
    (:data:`MIN_SPAN`)."""
    return x_max < MIN_SPAN * x_min


def growth_fit(x: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """(k, a, c) of t ≈ a + c x^k with a, c ≥ 0, least relative squared error: for each k of
    :data:`GROWTH_EXPONENTS`, (a, c) by nonnegative least squares on the rows scaled by
    1 / t; the k of the smallest error (the first on a tie). ``a`` is the part of the time
    that does not grow with the size (the call's overhead, the other axes' work), ``c x^k``
    the part that does, whose order k the method states."""
    x, t = np.asarray(x, dtype=float), np.asarray(t, dtype=float)
    best: tuple[float, float, float, float] | None = None
    ones = np.ones_like(t)
    for k in GROWTH_EXPONENTS:
        design = np.column_stack([ones, x ** k]) / t[:, None]
        (a, c), error = nnls(design, ones)
        if best is None or error < best[0] - 1e-12:
            best = (error, float(k), float(a), float(c))
    return best[1], best[2], best[3]


def _growing_points(ok: pd.DataFrame) -> tuple[float, pd.DataFrame] | None:
    """The growth fit's k and the points where its growing part c x^k is at least its flat
    part a, when the axis has at least :data:`GROWTH_MIN_POINTS` points, grows by at least
    :data:`FLOOR_FACTOR` and two such points; None otherwise."""
    seconds = ok[TIME].to_numpy(float)
    if len(ok) < GROWTH_MIN_POINTS or seconds.max() < FLOOR_FACTOR * seconds.min():
        return None
    x = ok["x"].to_numpy(float)
    k, a, c = growth_fit(x, seconds)
    growing = ok[c * x ** k >= a]
    return (k, growing) if growing["x"].nunique() >= 2 else None


def _leaf_growth(timed: pd.DataFrame) -> float:
    """How many times the mean leaves per tree grow from the smallest to the largest size
    of the points (NaN where the points do not say)."""
    ordered = timed.sort_values("x")
    leaves = pd.to_numeric(ordered["mean_leaves"], errors="coerce").to_numpy(float)
    return float(leaves[-1] / leaves[0]) if len(leaves) >= 2 and leaves[0] > 0 else math.nan


def _tree_growth_allowance(axis: str, leaf_growth: float, x_min: float,
                           x_max: float) -> float:
    """How far above its stated order in n a method's slope may be where its forests are
    grown on the n rows (``rows = "train"``): the stated order counts the operations at a
    fixed forest, but these trees grow with n (52 to 240 leaves from 100 to 10^5 rows at
    the base depth), and a cost per row at most proportional to a tree's nodes (a projected
    descent, O(V) with V up to the nodes) then grows by up to the leaves' factor. The
    allowance is that factor's exponent in n, log(leaf growth) / log(x_max / x_min), over
    the judged points; 0 on the other axes and where the leaves do not grow (a forest
    fixed while n grows). ``leaf_growth`` is :func:`_leaf_growth` of the judged points."""
    if axis != "n" or not x_max > x_min or not leaf_growth > LEAF_GROWTH_SEEN:
        return 0.0
    return math.log(leaf_growth) / math.log(x_max / x_min)


def fit_exponents(points: pd.DataFrame, stated: dict[str, dict[str, Stated]],
                  floor: float = FLOOR, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """The exponent of the growing part of each (method, axis)'s CPU time.

    Where the axis has at least :data:`GROWTH_MIN_POINTS` timed points and grows by at least
    ``FLOOR_FACTOR``, the k of :func:`growth_fit`'s t ≈ a + c x^k over all of them (the
    flat a and the growing c x^k fitted together, so that neither bends the other's
    order), judged over the sizes where c x^k ≥ a. Otherwise (a flat axis, too few points,
    or a growing part that never reaches the flat one) the least-squares slope of log CPU
    seconds on log size over the points at or above the noise floor (``floor``, and
    ``FLOOR_FACTOR`` times the axis's fastest point), over every timed point when fewer
    than two are above (a flat curve: the exponent is then near 0). ``stated`` maps a
    method to its stated orders; an exponent agrees when within ``tolerance`` of the stated
    range (one exponent, or the lowest to the highest of a sum's terms:
    :mod:`harness.core.complexity`), judged where its sizes span at least ``MIN_SPAN``."""
    rows = []
    for (method, axis), group in points.groupby(["method", "axis"], sort=False):
        ok = group[group["status"] == "ok"]
        level = max(floor, FLOOR_FACTOR * ok[TIME].min()) if len(ok) else floor
        timed = ok[ok[TIME] >= level]
        claim = stated_range(stated.get(method, {}).get(axis))
        low, high = (math.nan, math.nan) if claim is None else claim
        row = {"method": method, "axis": axis, "exponent": math.nan, "stated_low": low,
               "stated": high, "difference": math.nan,
               "agrees": None, "n_points": len(timed), "x_min": math.nan, "x_max": math.nan,
               "note": ""}
        growth, every_point = _growing_points(ok), False
        if growth is not None:
            exponent, timed = growth
            row.update(n_points=len(timed), note=f"growth fit a + c x^k over {len(ok)} points")
        else:
            if len(timed) < 2:  # all but one below the floor: the slope of the overheads
                timed, every_point = ok, True
                if len(timed) >= 2:
                    row["note"] = (f"fitted over every point: fewer than 2 at or above the "
                                   f"noise floor ({1e3 * level:.3g} ms)")
            exponent = (_slope(timed["x"].to_numpy(float), timed[TIME].to_numpy(float))
                        if len(timed) >= 2 and timed["x"].nunique() >= 2 else math.nan)
        if math.isnan(exponent):
            reasons = group["reason"].dropna()
            row["note"] = (f"{len(timed)} point(s) timed"
                           + (f"; {reasons.iloc[0]}" if len(reasons) else ""))
        else:
            row.update(exponent=exponent, x_min=float(timed["x"].min()),
                       x_max=float(timed["x"].max()))
            if claim is not None:
                leaves = _leaf_growth(timed)
                allowance = _tree_growth_allowance(axis, leaves, row["x_min"], row["x_max"])
                row["difference"] = outside_range(exponent, low, high + allowance)
                if allowance > 0:
                    note = (f"the trees, grown on the n rows, grow {leaves:.2g}x "
                            f"in leaves: judged against {stated_label(low, high)}, + "
                            f"{allowance:.2f} for a cost per row up to the tree's size")
                    row["note"] = f"{row['note']}; {note}" if row["note"] else note
                unjudged = None
                if short_span(row["x_min"], row["x_max"]):  # noise alone moves the slope
                    unjudged = (f"not judged: sizes {row['x_min']:g} to {row['x_max']:g} span "
                                f"less than {MIN_SPAN:g}x")
                elif axis == "depth" and high > 0 and leaves > row["x_max"] / row["x_min"]:
                    unjudged = (f"not judged: the leaves per tree grow {leaves:.0f}x while the "
                                f"depth grows {row['x_max'] / row['x_min']:.1f}x, so the cost "
                                f"of a step grows with the trees' size (caches), which an "
                                f"order in the depth alone does not state")
                elif every_point and row["difference"] < -tolerance:
                    # the slope of a flat part plus a growing one lies between 0 and the
                    # growing part's order: over every point it is only a lower bound
                    unjudged = ("not judged: below the stated order over points where the "
                                "time that does not grow may dominate (a lower bound)")
                if unjudged:
                    row["note"] = f"{row['note']}; {unjudged}" if row["note"] else unjudged
                else:
                    row["agrees"] = bool(abs(row["difference"]) <= tolerance)
        if claim is None and not row["note"]:
            row["note"] = "no power law stated on this axis"
        rows.append(row)
    return pd.DataFrame(rows, columns=list(EXPONENT_COLUMNS))


def scaling_methods(names: list[str] | None = None) -> list[Method]:
    """Every registered method (or those named), with :data:`FIXED_WORK` applied."""
    chosen = registry.method_names() if not names else names
    return [registry.make_method(name, **FIXED_WORK.get(name, {})) for name in chosen]


def run_scaling(methods: list[str] | None = None, axes: tuple[str, ...] = AXES,
                sizes: dict[str, tuple[int, ...]] | None = None, budget: float = BUDGET,
                fit_budget: float = FIT_BUDGET, repeat: int = 3, floor: float = FLOOR,
                jobs: int = 2, on_step: Callable[[str], None] | None = None) -> dict:
    """Time every method along each axis (see the module docstring).

    Parameters
    ----------
    methods : list of str, optional
        Registered method names (default: all).
    axes, sizes
        Axes to walk and their sizes (default: :data:`AXES`, :data:`SIZES`).
    budget : float
        Largest predicted seconds of one timed point; larger points are skipped.
    fit_budget : float
        Largest predicted seconds to grow one point's forest (with ``jobs`` processes).
    repeat : int
        Timed runs per point, the fastest kept.
    floor : float
        Points faster than this are left out of the exponent fits.

    Returns
    -------
    dict
        ``settings`` (base point, sizes, budgets, data and model, threads), ``points`` (a
        DataFrame with :data:`POINT_COLUMNS`), ``exponents`` (:data:`EXPONENT_COLUMNS`) and
        ``wall_seconds``.
    """
    say = on_step or (lambda text: None)
    sizes = {**SIZES, **(sizes or {})}
    start = time.perf_counter()
    instances = scaling_methods(methods)
    rows: list[dict] = []
    ready = []
    for method in instances:
        missing = method.missing_packages()
        if missing:
            rows += [_row(method, axis, size, "not installed", f"needs {', '.join(missing)}")
                     for axis in axes for size in sizes[axis]]
            continue
        say(f"preparing {method.name}")
        method.prepare()  # compile its kernels once, untimed
        ready.append(method)
    for axis in axes:
        forests = _Points(axis, ready, jobs)
        history: dict[str, list[tuple[float, float]]] = {m.name: [] for m in ready}
        stopped: dict[str, str] = {}
        for size in sizes[axis]:
            for method in ready:
                key = method.name
                if key in stopped:
                    rows.append(_row(method, axis, size, "skipped", stopped[key]))
                    continue
                kind = _kind(axis, method)
                fit = forests.predicted_fit(size, kind)
                if fit > fit_budget:
                    stopped[key] = (f"its forest is predicted to take {fit:.3g} s to grow "
                                    f"> fit budget {fit_budget:g} s")
                    rows.append(_row(method, axis, size, "skipped", stopped[key]))
                    continue
                predicted = math.nan
                if history[key]:  # predicted from the nominal sizes, before growing a forest
                    claim = stated_range(method.complexity.get(axis))
                    predicted = _predict(history[key], size,
                                         None if claim is None else claim[1], floor)
                    # a second point is worth more than a budget: without it, no exponent
                    second = len(history[key]) < 2 and predicted <= SECOND_POINT * budget
                    if predicted > budget and not second:
                        stopped[key] = (f"predicted {predicted:.3g} s > budget {budget:g} s "
                                        "(and every larger size)")
                        rows.append(_row(method, axis, size, "skipped", stopped[key],
                                         predicted=predicted))
                        continue
                point = forests.get(size, kind)
                x = point.shape["mean_depth"] if axis == "depth" else float(size)
                say(f"{axis} = {size}: {key}")
                row = _row(method, axis, size, "ok", None, x=x, predicted=predicted,
                           point=point)
                try:
                    (row["seconds"], row["cpu_seconds"], row["runs"],
                     row["first_seconds"]) = _time_explain(method, point, repeat, predicted)
                    history[key].append((size, row["seconds"]))
                except _Skipped as exc:
                    row.update(status="skipped", reason=str(exc))
                except Exception as exc:  # noqa: BLE001 (a failing method is a row)
                    row.update(status="error", reason=f"{type(exc).__name__}: {exc}"[:300])
                    stopped[key] = "an earlier size failed"
                rows.append(row)
    points = pd.DataFrame(rows, columns=list(POINT_COLUMNS))
    stated = {m.name: dict(m.complexity) for m in instances}
    return {"settings": {"base": BASE, "sizes": {a: list(sizes[a]) for a in axes},
                         "budget_seconds": budget, "fit_budget_seconds": fit_budget,
                         "repeat": repeat, "floor_seconds": floor,
                         "floor_factor": FLOOR_FACTOR, "tolerance": TOLERANCE,
                         "min_span": MIN_SPAN,
                         "dataset": DATASET, "model": MODEL, "fixed_work": FIXED_WORK,
                         "threads": numba.get_num_threads()},
            "points": points, "exponents": fit_exponents(points, stated, floor),
            "stated": stated, "wall_seconds": time.perf_counter() - start}


def _row(method: Method, axis: str, size: int, status: str, reason: str | None,
         x: float = math.nan, predicted: float = math.nan, point: Point | None = None) -> dict:
    shape = point.shape if point is not None else {}
    return {"method": method.name, "axis": axis, "size": size, "x": x, "seconds": math.nan,
            "cpu_seconds": math.nan, "runs": 0, "status": status, "reason": reason,
            "predicted_seconds": predicted,
            "mean_depth": shape.get("mean_depth", math.nan),
            "mean_leaves": shape.get("mean_leaves", math.nan),
            "fit_seconds": point.fit_seconds if point is not None else math.nan,
            "first_seconds": math.nan}


def scaling_record(result: dict) -> dict:
    """The JSON form of :func:`run_scaling`'s result (tables as lists of records)."""
    def records(frame: pd.DataFrame) -> list[dict]:
        return [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in row.items()} for row in frame.to_dict(orient="records")]

    return {"settings": result["settings"], "wall_seconds": result["wall_seconds"],
            "stated": result["stated"], "exponents": records(result["exponents"]),
            "points": records(result["points"])}
