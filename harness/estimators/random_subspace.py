"""Random-subspace feature selection, RS and SRS (Sutera et al., AISTATS 2018; seed 004, part 3).

Memory-constrained setting: no tree may see more than q features. RS grows each of T trees
on q features drawn at random; SRS (sequential random subspace) draws min(αq, |F|) of them
from F, the features already found relevant, and the rest from the others, so relevant
features that only show their effect jointly get found in O(p/q) instead of O((p/q)^k)
trees. The practical rule of the slides: a random probe (a permuted copy of a drawn
feature) joins every tree; a feature qualifies when it was sampled more than L times and beat
the probe's MDI (in the same tree) in at least a fraction β of the trees that sampled it
(L = 5, β = 0.95 in the experiments). Without the probe, a feature qualifies once it got a
non-zero MDI (the rule of the algorithm as first stated).

How F follows the rule (``update``). The slides' algorithm (seed 004, "Sequential Random
Subspace", step 2.3) *adds* to F, after each tree, the features that qualify; nothing leaves
F (``update="add"``, the default). ``update="recompute"`` makes F the set of features that
qualify *now*, so a feature drops out when its share falls below β: that was this module's
rule before issue 20, and it is what made SRS select 1-2 features on Madelon-like data. SRS
draws the members of F into nearly every tree, together, so correlated members (Madelon's
copies and linear combinations) mask one another, their shares fall below β and F collapses
to the one or two features that dominate their trees (the geurts2016-srs page shows both).

Importances: ``importances`` is Σ_trees MDI / T, the slides' Imp_{q,T}. Under SRS the
members of F are sampled in most trees and the others in about q/p of them, so this sum also
counts how often a feature was drawn; ``importance_per_draw`` (Σ MDI over the trees that drew
the feature / their number) ranks features on the same footing whatever their sampling rate.

Trees are scikit-learn extremely randomized trees (threshold randomization, no bootstrap),
with K = ``max_features`` candidate features per node among the q; importances are the
per-tree MDI (``feature_importances_``) accumulated over the trees and divided by T.

Tree seeds come from ``RandomState(seed).randint(2**31 - 1, size=T)``, as scikit-learn's
forests draw them, and the columns of a tree keep their original order: with q = p and no
probe, RS grows exactly the trees of ``ExtraTreesClassifier(random_state=seed,
bootstrap=False)``, which the tests use as an oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.tree import ExtraTreeClassifier, ExtraTreeRegressor

from harness.core.errors import InvalidParameterError

#: how F follows the probe rule (see the module docstring)
UPDATES = ("add", "recompute")


@dataclass
class SubspaceSettings:
    """What RS/SRS need besides the data (see the module docstring)."""

    n_trees: int
    q: int
    max_features: int | float | str | None = None  # None: all of the tree's q columns
    alpha: float = 0.0
    min_sampled: int = 5
    beta: float = 0.95
    probe: bool = True
    criterion: str | None = None
    update: str = "add"  # "add": F only grows (slides' step 2.3); "recompute": see module doc

    def __post_init__(self) -> None:
        if self.update not in UPDATES:
            raise InvalidParameterError(
                f"update must be one of {sorted(UPDATES)}; got {self.update!r}")


@dataclass
class SubspaceResult:
    """Accumulated importances, the relevant set F and the per-feature bookkeeping."""

    importances: np.ndarray  # (p,): Σ_trees MDI / T
    selected: np.ndarray  # bool (p,)
    sampled: np.ndarray  # times each feature was among a tree's q
    beat_probe: np.ndarray  # times it beat the probe
    #: (columns, probe source column or -1, fitted tree) per tree, when kept
    trees: list = field(default_factory=list)
    n_trees: int = 0  # T, set when the growth ends

    @property
    def importance_per_draw(self) -> np.ndarray:
        """Σ MDI over the trees that drew each feature / their number (0 if never drawn).

        Only meaningful once ``importances`` holds Σ MDI / T (after the growth)."""
        total = self.importances * self.n_trees
        return np.divide(total, self.sampled, out=np.zeros(total.shape),
                         where=self.sampled > 0)


def qualifies(result: SubspaceResult, settings: SubspaceSettings, nonzero: np.ndarray
              ) -> np.ndarray:
    """The features that meet the rule now: sampled more than L times and ahead of the
    probe in at least β of their trees (seed 004, "Practical implementation"), or, without
    a probe, a non-zero MDI in some tree."""
    if not settings.probe:
        return nonzero
    share = np.divide(result.beat_probe, result.sampled,
                      out=np.zeros(result.sampled.shape), where=result.sampled > 0)
    return (result.sampled > settings.min_sampled) & (share >= settings.beta)


def _relevant(result: SubspaceResult, settings: SubspaceSettings, nonzero: np.ndarray
              ) -> np.ndarray:
    now = qualifies(result, settings, nonzero)
    return result.selected | now if settings.update == "add" else now


def _draw_columns(rng: np.random.Generator, p: int, settings: SubspaceSettings,
                  selected: np.ndarray) -> np.ndarray:
    from_selected = np.zeros(0, dtype=np.int64)
    n_from_selected = min(int(settings.alpha * settings.q), int(selected.sum()))
    if n_from_selected > 0:
        from_selected = rng.choice(np.flatnonzero(selected), n_from_selected, replace=False)
    rest = np.setdiff1d(np.arange(p), from_selected)
    others = rng.choice(rest, settings.q - from_selected.size, replace=False)
    return np.sort(np.concatenate([from_selected, others]))


def grow_subspace_trees(
    X: np.ndarray,
    y: np.ndarray,
    classification: bool,
    settings: SubspaceSettings,
    seed: int,
    keep_trees: bool = False,
    on_tree: Callable[[int, SubspaceResult, tuple], None] | None = None,
    sample_weight: np.ndarray | None = None,
) -> SubspaceResult:
    """Grow T trees by RS (``alpha = 0``) or SRS and accumulate their MDI.

    ``on_tree(t, result, grown)`` is called after each tree with the running sums
    (importances not yet divided by T) and ``grown = (columns, probe source or -1, tree)``,
    e.g. to record convergence curves.

    ``sample_weight`` (rows that are the support of an explicit distribution, weighted by
    their probabilities) is given to every tree's fit, so that its impurities, and hence its
    MDI, are those of the distribution; a probe column is then drawn from its source's
    weighted marginal, independently of the rest of the row (a permutation would pair the
    values with other rows' weights and change that marginal).
    """
    n, p = X.shape
    tree_class = ExtraTreeClassifier if classification else ExtraTreeRegressor
    tree_seeds = np.random.RandomState(seed).randint(np.iinfo(np.int32).max,
                                                     size=settings.n_trees)
    rng = np.random.default_rng([seed, 0x5E1EC7])
    result = SubspaceResult(np.zeros(p), np.zeros(p, dtype=bool), np.zeros(p, dtype=np.int64),
                            np.zeros(p, dtype=np.int64))
    nonzero = np.zeros(p, dtype=bool)
    extra = {} if settings.criterion is None else {"criterion": settings.criterion}
    # a weighted support's probe draws: the rows' probabilities, computed once
    probe_p = None if sample_weight is None else sample_weight / sample_weight.sum()
    for t in range(settings.n_trees):
        columns = _draw_columns(rng, p, settings, result.selected)
        inputs = X[:, columns]
        probe_source = -1
        if settings.probe:
            probe_source = int(columns[rng.integers(columns.size)])
            probe_rows = (rng.permutation(n) if probe_p is None
                          else rng.choice(n, size=n, p=probe_p))
            inputs = np.column_stack([inputs, X[probe_rows, probe_source]])
        tree = tree_class(max_features=settings.max_features, random_state=tree_seeds[t],
                          **extra).fit(inputs, y, sample_weight=sample_weight)
        mdi = tree.tree_.compute_feature_importances(normalize=False)
        result.importances[columns] += mdi[:columns.size]
        result.sampled[columns] += 1
        nonzero[columns] |= mdi[:columns.size] > 0
        if settings.probe:
            result.beat_probe[columns] += mdi[:columns.size] > mdi[-1]
        result.selected = _relevant(result, settings, nonzero)
        grown = (columns, probe_source, tree)
        if keep_trees:
            result.trees.append(grown)
        if on_tree is not None:
            on_tree(t, result, grown)
    result.importances /= settings.n_trees
    result.n_trees = settings.n_trees
    return result


def predict_subspace(result: SubspaceResult, X: np.ndarray, classification: bool,
                     seed: int = 0) -> np.ndarray:
    """Mean of the kept trees' ``predict_proba`` (classifiers) or ``predict``.

    A tree grown with a probe gets, as its last column, a permutation (drawn from ``seed``)
    of the probe's source column of ``X``: noise with the same marginal, as in training.
    """
    rng = np.random.default_rng(seed)
    total = None
    for columns, probe_source, tree in result.trees:
        inputs = X[:, columns]
        if probe_source >= 0:
            inputs = np.column_stack([inputs, X[rng.permutation(len(X)), probe_source]])
        out = tree.predict_proba(inputs) if classification else tree.predict(inputs)
        total = out if total is None else total + out
    return total / len(result.trees)


@dataclass
class GrowthCurve:
    """What :func:`grow_with_curve` records after every ``step`` trees."""

    n_trees: list[int] = field(default_factory=list)
    importances: list[np.ndarray] = field(default_factory=list)  # Σ MDI / trees so far
    n_selected: list[int] = field(default_factory=list)
    sampled: list[np.ndarray] = field(default_factory=list)  # times each feature was drawn
    held_out_score: list[float] = field(default_factory=list)  # accuracy, or R²


def grow_with_curve(X: np.ndarray, y: np.ndarray, classification: bool,
                    settings: SubspaceSettings, seed: int, step: int,
                    held_out: np.ndarray,
                    sample_weight: np.ndarray | None = None
                    ) -> tuple[SubspaceResult, GrowthCurve]:
    """Grow on the rows not in ``held_out`` and record the convergence curve of seed 004
    ("Experiments: protocol"): after every ``step`` trees, the accumulated importances so
    far, the size of F and the score of the trees grown so far on the ``held_out`` rows
    (accuracy of the summed ``predict_proba`` votes, or R² of the mean prediction; NaN
    without held-out rows). A tree's probe column on the held-out rows is a permutation of
    its source column, as in training. ``sample_weight`` weights the rows grown on
    (:func:`grow_subspace_trees`); it cannot go with held-out rows, which would take part of
    the distribution's support away.
    """
    if sample_weight is not None and len(held_out):
        raise ValueError("weighted rows (an explicit distribution's support) are grown on "
                         "whole: hold no rows out.")
    learn = np.setdiff1d(np.arange(len(y)), held_out)
    X_test, y_test = X[held_out], y[held_out]
    vote_rng = np.random.default_rng([seed, 7])
    curve = GrowthCurve()
    votes: np.ndarray | float = 0.0
    classes = np.unique(y[learn]) if classification else None  # every tree's class columns

    def record(t: int, result: SubspaceResult, grown: tuple) -> None:
        nonlocal votes
        columns, probe_source, tree = grown
        if len(held_out):
            inputs = X_test[:, columns]
            if probe_source >= 0:
                inputs = np.column_stack(
                    [inputs, X_test[vote_rng.permutation(len(held_out)), probe_source]])
            votes = votes + (tree.predict_proba(inputs) if classification
                             else tree.predict(inputs))
        if (t + 1) % step and t + 1 != settings.n_trees:
            return
        curve.n_trees.append(t + 1)
        curve.importances.append(result.importances / (t + 1))
        curve.n_selected.append(int(result.selected.sum()))
        curve.sampled.append(result.sampled.copy())
        curve.held_out_score.append(_held_out_score(votes, y_test, t + 1, classes))

    result = grow_subspace_trees(X[learn], y[learn], classification, settings, seed,
                                 on_tree=record, sample_weight=sample_weight)
    return result, curve


def _held_out_score(votes, y_test: np.ndarray, n_trees: int,
                    classes: np.ndarray | None) -> float:
    if len(y_test) == 0:
        return float("nan")
    if classes is not None:
        return float(np.mean(classes[votes.argmax(axis=1)] == y_test))
    prediction = votes / n_trees
    return float(1.0 - np.sum((y_test - prediction) ** 2)
                 / np.sum((y_test - y_test.mean()) ** 2))
