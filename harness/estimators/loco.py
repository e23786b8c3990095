"""Leave-one-covariate-out (LOCO) with K-fold cross-fitting and influence-function errors.

Notation. Rows ``i = 1..n`` with targets ``y_i`` are split into K folds ``H_1..H_K`` (of
sizes ``n_k``); ``f_k`` is the model spec refitted on the rows outside ``H_k`` on every
column, ``f_{k,-g}`` the same spec refitted on those rows without the columns of group g.
With the harness loss L (:mod:`harness.forest.losses`) and a row i of fold k(i)::

    d_ig = L(y_i, f_{k,-g}(x_i,-g)) - L(y_i, f_k(x_i))                               (1)
    D_kg = (1 / n_k) sum_{i in H_k} d_ig
    psi_g = (1 / K) sum_k D_kg                                                       (2)
    se_g^2 = (1 / n) (1 / K) sum_k (1 / n_k) sum_{i in H_k} (d_ig - D_kg)^2          (3)

(2) is the cross-fitted estimator of the difference of predictiveness of Williamson, Gilbert,
Simon & Carone (2021, JASA, "A general framework for inference on algorithm-agnostic variable
importance", Sec. 3 and their cross-fitting procedure), with predictiveness V(f) = -E L(Y,
f(X)), i.e. the LOCO importance of Lei, G'Sell, Rinaldo, Tibshirani & Wasserman (2018, JASA,
Sec. 6) taken as a mean excess loss. Its influence function at a row is the centred excess
loss ``d_ig - psi_g`` (the refits' own estimation error is second order under cross-fitting,
Williamson et al. 2021, Thm 1), whence the variance estimator (3), centred per fold as in the
authors' ``vimp::cv_vim``. At the null (psi_g = 0) that influence function degenerates and
(3) is conservative at best; read a value within about two standard errors of 0 as "not
distinguishable from 0", not as a test.

Normalised by the loss of the best constant prediction on the same rows, L0 (Var(Y) with
ddof=0 for squared error, sum_k p_k (1 - p_k) for Brier, the entropy of the class
frequencies for log-loss, 1 - max_k p_k for misclassification)::

    psi_g / L0,  with row influence  (d_ig - D_kg) / L0 - (psi_g / L0) (l0_i - L0) / L0   (4)

(delta method; l0_i is row i's loss under the constant prediction). For squared error the
population value of (2) is E[(m(X) - m_{-g}(X_{-g}))^2] = E[Var(m(X) | X_{-g})], so psi_g /
Var(Y) is the total Sobol index ST_g of the group (Sobol 1993; the quantity Sobol-MDA targets,
Benard, Da Veiga & Scornet 2022), also for dependent inputs. In general psi_g / L0 is in [0, 1]
in the population: m_{-g} is no worse than a constant, and m no worse than m_{-g}.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold

from harness.core.errors import BadInputError
from harness.core.params import Constraint
from harness.forest.losses import (
    MISCLASSIFICATION,
    SQUARED_ERROR,
    Loss,
    loss_rows,
)


class FeatureGroups(Constraint):
    """A list of disjoint, non-empty lists of distinct feature names."""

    def is_satisfied_by(self, value: Any) -> bool:
        if not isinstance(value, (list, tuple)) or not value:
            return False
        seen: set[str] = set()
        for group in value:
            if (not isinstance(group, (list, tuple)) or not group
                    or not all(isinstance(name, str) for name in group)
                    or len(set(group)) != len(group) or seen & set(group)):
                return False
            seen |= set(group)
        return True

    def describe(self) -> str:
        return "a list of disjoint, non-empty lists of distinct feature names"


@dataclass(frozen=True)
class Group:
    """Columns left out together, and the label the result gives them."""

    label: str
    columns: tuple[int, ...]


def resolve_groups(groups: Sequence[Sequence[str]] | None,
                   feature_names: Sequence[str]) -> list[Group]:
    """The groups to leave out, in feature order of their first column.

    ``None``: each feature alone. Otherwise each listed group (disjoint, by feature name);
    a feature in no listed group is left out alone.

    Raises
    ------
    BadInputError
        For a name that is not a feature, or a feature listed in two groups.
    """
    names = list(feature_names)
    index = {name: j for j, name in enumerate(names)}
    owner: dict[int, int] = {}
    for g, group in enumerate(groups or ()):
        for name in group:
            if name not in index:
                raise BadInputError(
                    f"groups names {name!r}, which is not a feature; expected names among "
                    f"{names}.")
            j = index[name]
            if j in owner and owner[j] != g:
                raise BadInputError(
                    f"groups must be disjoint; {name!r} is in group {owner[j]} "
                    f"({list(groups[owner[j]])}) and in group {g} ({list(group)}).")
            owner[j] = g
    found: dict[int, list[int]] = {}
    for j in range(len(names)):
        found.setdefault(owner.get(j, -1 - j), []).append(j)  # -1-j: a singleton
    return [Group("+".join(names[j] for j in columns), tuple(columns))
            for columns in found.values()]


def fold_rows(y: np.ndarray, n_folds: int, classification: bool,
              seed: int) -> list[np.ndarray]:
    """Held-out rows of each of ``n_folds`` shuffled folds (stratified by class when every
    class has at least ``n_folds`` rows, so that each refit sees every class)."""
    if len(y) < 2 * n_folds:
        raise BadInputError(f"loco with n_folds={n_folds} needs at least {2 * n_folds} rows "
                            f"(two per fold); got {len(y)}.")
    splitter = KFold(n_folds, shuffle=True, random_state=seed)
    if classification and np.unique(y, return_counts=True)[1].min() >= n_folds:
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    return [held_out for _, held_out in splitter.split(np.zeros((len(y), 1)), y)]


def predictions(fitted: Any, X: np.ndarray, classes: np.ndarray | None) -> np.ndarray:
    """Rows of the harness's output space: (n, 1) predictions of a regressor, or a
    classifier's ``predict_proba`` in the columns of ``classes`` (a class the refit never saw
    gets probability 0)."""
    if classes is None:
        return np.asarray(fitted.predict(X), dtype=np.float64).reshape(len(X), 1)
    proba = np.asarray(fitted.predict_proba(X), dtype=np.float64)
    out = np.zeros((len(X), len(classes)))
    where = {c: k for k, c in enumerate(np.asarray(classes).tolist())}
    for col, label in enumerate(np.asarray(fitted.classes_).tolist()):
        out[:, where[label]] = proba[:, col]
    return out


def constant_losses(code: int, targets: np.ndarray, n_values: int) -> np.ndarray:
    """Each row's loss under the best constant prediction on these rows (l0_i of Eq. 4):
    the mean of y for squared error, the class frequencies for Brier and log-loss, the most
    frequent class for misclassification."""
    if code == SQUARED_ERROR:
        prediction = np.array([targets.mean()])
    else:
        prediction = np.bincount(targets.astype(np.int64), minlength=n_values) / len(targets)
        if code == MISCLASSIFICATION:
            prediction = (prediction == prediction.max()).astype(float)
            prediction[np.argmax(prediction) + 1:] = 0.0  # ties: the first class wins
    return loss_rows(code, targets, np.tile(prediction, (len(targets), 1)))


@dataclass
class LOCOResult:
    """Eq. (2)-(4) per group, with the row-level excess losses d_ig of Eq. (1)."""

    groups: list[Group]
    values: np.ndarray  # psi_g (or psi_g / L0)
    std: np.ndarray  # se_g
    excess: np.ndarray  # (n, G): d_ig
    folds: list[np.ndarray]
    null_loss: float  # L0


def _refit_losses(model: Any, X: np.ndarray, targets: np.ndarray, y: np.ndarray,
                  train: np.ndarray, held_out: np.ndarray, columns: np.ndarray,
                  classes: np.ndarray | None, code: int) -> np.ndarray:
    """Row losses on ``held_out`` of ``model``'s spec refitted on ``train`` x ``columns``."""
    fitted = clone(model).fit(X[np.ix_(train, columns)], y[train])
    prediction = predictions(fitted, X[np.ix_(held_out, columns)], classes)
    return loss_rows(code, targets[held_out], prediction)


def loco(model: Any, X: np.ndarray, y: np.ndarray, targets: np.ndarray, loss: Loss,
         groups: list[Group], folds: list[np.ndarray], classes: np.ndarray | None,
         normalise: bool = False, n_jobs: int = 1,
         progress: Callable[[float], None] | None = None) -> LOCOResult:
    """Cross-fitted LOCO of every group (module docstring, Eq. 1-4).

    Parameters
    ----------
    model : scikit-learn compatible estimator
        Its spec is refitted (``sklearn.base.clone``: same hyperparameters, same
        ``random_state``); it is not modified.
    X, y : ndarray
        The rows (float64) and targets as the model's ``fit`` takes them.
    targets : ndarray
        y for the harness's losses (:func:`harness.forest.losses.target_codes`).
    loss : Loss
    groups : list of Group
    folds : list of ndarray
        Held-out rows of each fold (a partition of the rows).
    classes : ndarray or None
        A classifier's classes (the columns of its probabilities); None for a regressor.
    normalise : bool
        Divide by L0, the loss of the best constant prediction (Eq. 4).
    n_jobs : int
        Refits run in this many threads (joblib); 1 runs them in turn.
    progress : callable, optional
        Called with the fraction of refits done.
    """
    n, p = X.shape
    everything = np.arange(p)
    tasks = []
    for k, held_out in enumerate(folds):
        train = np.setdiff1d(np.arange(n), held_out)
        tasks.append((k, -1, train, held_out, everything))
        tasks.extend((k, g, train, held_out, np.setdiff1d(everything, group.columns))
                     for g, group in enumerate(groups))
    losses = np.empty((n, len(groups) + 1))  # column 0: the full model, then each group

    def run(task):
        k, g, train, held_out, columns = task
        return held_out, g, _refit_losses(model, X, targets, y, train, held_out, columns,
                                          classes, loss.code)

    if n_jobs == 1:
        results = map(run, tasks)
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator_unordered")(
            delayed(run)(task) for task in tasks)
    for done, (held_out, g, row_losses) in enumerate(results, start=1):
        losses[held_out, g + 1] = row_losses
        if progress is not None:
            progress(done / len(tasks))
    excess = losses[:, 1:] - losses[:, :1]
    fold_means = np.array([excess[held_out].mean(axis=0) for held_out in folds])  # D_kg
    values = fold_means.mean(axis=0)
    influence = np.empty_like(excess)
    for k, held_out in enumerate(folds):
        influence[held_out] = excess[held_out] - fold_means[k]
    n_values = 1 if classes is None else len(classes)
    null_rows = constant_losses(loss.code, targets, n_values)
    null_loss = float(null_rows.mean())
    if normalise:
        if not null_loss > 0:
            raise BadInputError(f"loco cannot normalise by the loss of a constant prediction: "
                                f"it is {null_loss} on these rows (y is constant).")
        values = values / null_loss
        influence = (influence / null_loss
                     - np.outer((null_rows - null_loss) / null_loss, values))
    # Eq. (3): the mean over folds of the mean squared influence within the fold
    variance = np.mean([np.mean(influence[held_out] ** 2, axis=0) for held_out in folds],
                       axis=0)
    return LOCOResult(groups, values, np.sqrt(variance / n), excess, folds, null_loss)
