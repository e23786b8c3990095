"""Losses of the permutation and projection importances, compiled once.

A prediction is a row of the forest's output space (:meth:`ForestView.output`): the regression
value (1 entry), the class-probability vector, or, for a boosted classifier, its margins (one
column, the log-odds of the second class, for a binary model; one per class otherwise).
Targets are the regression value or the class index (as a float).

A classification loss is always scored on class probabilities: for a view whose ``link`` is
not the identity, :meth:`Loss.linked` gives the loss whose kernel code also carries the link
(``code = loss + LINK_STRIDE * link``), and :func:`loss_value` maps the margins to
probabilities first, as the model's ``predict_proba`` does (logistic: ``[1 - expit(m),
expit(m)]``, scikit-learn's ``HalfBinomialLoss.predict_proba``; softmax: ``exp(m_k - max m) /
Σ exp(m_j - max m)``). Every kernel that takes a loss code therefore scores a boosted model's
shifted outputs exactly like ``predict_proba`` on the permuted rows, without knowing the link.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from harness.forest.inbag import class_codes

SQUARED_ERROR, MISCLASSIFICATION, BRIER, LOG_LOSS = 0, 1, 2, 3
IDENTITY, LOGISTIC, SOFTMAX = 0, 1, 2
LINKS = {"identity": IDENTITY, "logistic": LOGISTIC, "softmax": SOFTMAX}
LINK_STRIDE = 4  # a loss code is loss + LINK_STRIDE * link
_LOG_FLOOR = 1e-15  # a tree's leaf often gives a class probability 0: clip as log_loss does
# Averaged probabilities that tie exactly (0.5/0.5 is common) differ by rounding depending on
# the summation order; classes within this margin count as tied and the first one wins, so
# that the predicted class does not depend on how the average was computed.
TIE_MARGIN = 1e-9


@dataclass(frozen=True)
class Loss:
    """A named loss: its kernel code, the task it applies to, and its unit."""

    name: str
    code: int
    task: str
    unit: str

    def linked(self, link: str) -> Loss:
        """This loss scored on ``link(output)`` (the view's link; see the module docstring).

        Raises
        ------
        ValueError
            If ``link`` is unknown, or not the identity for a regression loss.
        """
        if link not in LINKS:
            raise ValueError(f"link must be one of {', '.join(LINKS)}; got {link!r}.")
        if link == "identity":
            return self
        if self.task != "classification":
            raise ValueError(f"The {link} link applies to classification losses; "
                             f"{self.name} is a {self.task} loss.")
        return Loss(self.name, self.code % LINK_STRIDE + LINK_STRIDE * LINKS[link], self.task,
                    self.unit)


LOSSES = {
    "squared_error": Loss("squared_error", SQUARED_ERROR, "regression",
                          "squared error (units of y squared)"),
    "misclassification": Loss("misclassification", MISCLASSIFICATION, "classification",
                              "misclassification rate"),
    "brier": Loss("brier", BRIER, "classification", "Brier score (sum over classes)"),
    "log_loss": Loss("log_loss", LOG_LOSS, "classification", "log-loss (nats)"),
}
DEFAULT_LOSS = {"regression": "squared_error", "classification": "misclassification"}


def resolve_loss(name: str, task: str) -> Loss:
    """The loss called ``name`` (``"auto"``: the task's default, Breiman's for classification)."""
    return LOSSES[DEFAULT_LOSS[task] if name == "auto" else name]


def loss_mismatch(name: str, task: str) -> str | None:
    """Reason why loss ``name`` does not apply to ``task``, or None."""
    if name == "auto" or LOSSES[name].task == task:
        return None
    allowed = ", ".join(n for n, loss in LOSSES.items() if loss.task == task)
    return f"loss={name} applies to {LOSSES[name].task}; for {task} use auto, {allowed}."


def apply_link(link: str, output: np.ndarray) -> np.ndarray:
    """Class probabilities (n, C) from a view's output (n, n_values) (NumPy form of what
    :func:`loss_value` applies; ``"identity"`` returns ``output``)."""
    output = np.asarray(output, dtype=np.float64)
    if link == "identity":
        return output
    if link == "logistic":
        positive = 1.0 / (1.0 + np.exp(-output[:, 0]))
        return np.column_stack((1.0 - positive, positive))
    if link == "softmax":
        shifted = np.exp(output - output.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)
    raise ValueError(f"link must be one of {', '.join(LINKS)}; got {link!r}.")


@njit(cache=True)
def _expit(m):
    if m >= 0.0:
        return 1.0 / (1.0 + math.exp(-m))
    z = math.exp(m)
    return z / (1.0 + z)


@njit(cache=True)
def _probability(link, prediction, k, top, total):
    """Probability of class k: ``prediction`` itself (identity), or its logistic/softmax
    image (``top`` the largest margin, ``total`` Σ exp(m_j - top), for softmax)."""
    if link == LOGISTIC:
        positive = _expit(prediction[0])
        return positive if k == 1 else 1.0 - positive
    if link == SOFTMAX:
        return math.exp(prediction[k] - top) / total
    return prediction[k]


@njit(cache=True)
def loss_value(code, target, prediction):
    """Loss of one prediction row against one target (see the module docstring)."""
    link = code // LINK_STRIDE
    code = code % LINK_STRIDE
    if code == SQUARED_ERROR:
        diff = target - prediction[0]
        return diff * diff
    label = int(target)
    n_classes = 2 if link == LOGISTIC else prediction.size
    top, total = 0.0, 1.0
    if link == SOFTMAX:
        top = prediction[0]  # the largest margin, written out (ndarray.max compiles slowly)
        for k in range(1, prediction.size):
            top = max(top, prediction[k])
        total = 0.0
        for k in range(n_classes):
            total += math.exp(prediction[k] - top)
    if code == MISCLASSIFICATION:
        # argmax, ties (within TIE_MARGIN) to the first class as a forest's predict() does (a
        # boosted binary model's predict() sends an exact 0 margin to the second class)
        best, best_p = 0, _probability(link, prediction, np.int64(0), top, total)
        for k in range(1, n_classes):
            p_k = _probability(link, prediction, k, top, total)
            if p_k > best_p + TIE_MARGIN:
                best, best_p = k, p_k
        return 0.0 if best == label else 1.0
    if code == BRIER:
        out = 0.0
        for k in range(n_classes):
            diff = _probability(link, prediction, k, top, total) - (1.0 if k == label else 0.0)
            out += diff * diff
        return out
    return -math.log(max(_probability(link, prediction, label, top, total), _LOG_FLOOR))


@njit(cache=True)
def loss_rows(code, targets, predictions):
    """Loss of every row: ``predictions`` (n, n_values) -> (n,)."""
    out = np.empty(targets.size)
    for i in range(targets.size):
        out[i] = loss_value(code, targets[i], predictions[i])
    return out


@njit(cache=True)
def loss_table(code, targets, predictions):
    """Loss of every row and feature: ``predictions`` (n, p, n_values) -> (n, p)."""
    n, p = predictions.shape[0], predictions.shape[1]
    out = np.empty((n, p))
    for i in range(n):
        for j in range(p):
            out[i, j] = loss_value(code, targets[i], predictions[i, j])
    return out


#: Increases that :func:`row_loss_moments` holds at a time for an (n, p, n_values) shift
#: (256 kB).
BLOCK_VALUES = 1 << 15


@njit(cache=True)
def _increase_rows(code, targets, base, shift, n_oob, rows, feature_major, base_loss, first,
                   block):
    """``block[b, j]``: the loss increase of row ``rows[first + b]`` when its output moves
    by its shift for feature j, for the first ``block.shape[0]`` rows from ``first``
    (:func:`row_loss_increases`). The element is written in the loop, not returned by a
    helper: a helper, inlined or not, made these loops 25 times slower (numba 0.68)."""
    moved = np.empty(shift.shape[2])
    for b in range(block.shape[0]):
        i = rows[first + b]
        for j in range(block.shape[1]):
            shifted = False
            for c in range(moved.size):
                moved_by = shift[j, i, c] if feature_major else shift[i, j, c]
                moved[c] = base[i, c] + moved_by / n_oob[i]
                shifted |= moved_by != 0.0
            # no shift leaves the loss as it is: 0 exactly, without the loss's cost (most
            # (row, feature) pairs when p is large: a row's trees split on a few of the p)
            block[b, j] = (loss_value(code, targets[i], moved) - base_loss[first + b]
                           if shifted else 0.0)


@njit(cache=True)
def _base_losses(code, targets, base, rows):
    """Loss of each row of ``rows`` at its unshifted output ``base``."""
    out = np.empty(rows.size)
    for r in range(rows.size):
        out[r] = loss_value(code, targets[rows[r]], base[rows[r]])
    return out


@njit(cache=True)
def row_loss_increases(code, targets, base, shift, n_oob, rows, feature_major):
    """loss(base_i + shift_ij / n_oob_i) − loss(base_i) for each row i of ``rows`` and every
    feature j, (len(rows), p), without (n, p, n_values) temporaries: the held-out increases
    of ``mda_test`` (``n_oob`` all ones), and the terms of :func:`row_loss_moments`
    (``shift`` summed over each row's OOB trees). ``shift`` is (n, p, n_values), or
    (p, n, n_values) if ``feature_major`` (as the MDA permutation pass writes it), read in
    place."""
    p = shift.shape[0] if feature_major else shift.shape[1]
    out = np.empty((rows.size, p))
    _increase_rows(code, targets, base, shift, n_oob, rows, feature_major,
                   _base_losses(code, targets, base, rows), np.int64(0), out)
    return out


@njit(cache=True)
def row_loss_moments(code, targets, base, shift, n_oob, rows, feature_major, scale):
    """``(mean, squares)`` over ``rows`` of :func:`row_loss_increases` divided by
    ``scale``, without its (len(rows), p) array: per feature j, the mean of the scaled
    increases and the sum of their squared deviations from it (the ensemble-level OOB
    increases of ``mda_ik`` and ``sobol_mda`` and their standard errors).

    Both sums run row after row in the order of ``rows``. For p >= 2 these are the bits of
    ``(increase / scale).mean(axis=0)`` and of ``(increase / scale).var(axis=0, ddof=d) *
    (len(rows) - d)``: NumPy reduces a C-ordered (rows, p) array along axis 0 by adding its
    rows in order (it sums pairwise only along a contiguous axis, which axis 0 is when
    p = 1), and its ``var`` subtracts that mean and squares before the same sum. No row
    leaves NaN means (0 / 0).

    A feature-major shift is read feature after feature, each feature's increases held in
    one column; an (n, p, n_values) shift in blocks of :data:`BLOCK_VALUES` increases,
    computed twice when the rows take more than one block (for the mean, then the
    deviations; at large p most are an exact 0 that costs a read). At n = 1000, p = 10^4
    (an 80 MB shift), ``mda_ik`` had spent 0.08 s in its (1000, 10^4) increases, each row's
    p features read at a stride of 8 kB, and 0.03 s in NumPy's mean and std with their
    80 MB temporaries: it grew as p^1.4 from p = 3000 on in the bench's scaling (AMD EPYC).
    """
    p = shift.shape[0] if feature_major else shift.shape[1]
    base_loss = _base_losses(code, targets, base, rows)
    mean = np.empty(p)
    squares = np.empty(p)
    if feature_major:
        column = np.empty((rows.size, 1))
        for j in range(p):
            # column j of the increases: the block of rows over a one-feature view
            _increase_rows(code, targets, base, shift[j:j + 1], n_oob, rows, feature_major,
                           base_loss, np.int64(0), column)
            total = 0.0
            for r in range(rows.size):
                column[r, 0] /= scale
                total += column[r, 0]
            mean[j] = total / np.float64(rows.size)
            spread = 0.0
            for r in range(rows.size):
                deviation = column[r, 0] - mean[j]
                spread += deviation * deviation
            squares[j] = spread
        return mean, squares
    block = np.empty((max(1, min(rows.size, BLOCK_VALUES // max(p, 1))), p))
    one_block = rows.size <= block.shape[0]  # then the deviations reuse it as it is
    mean[:] = 0.0
    squares[:] = 0.0
    for deviations in (False, True):  # the mean first, then the deviations from it
        for first in range(0, rows.size, block.shape[0]):
            m = min(block.shape[0], rows.size - first)
            if not (deviations and one_block):
                _increase_rows(code, targets, base, shift, n_oob, rows, feature_major,
                               base_loss, first, block[:m])
            for b in range(m):
                for j in range(p):
                    if deviations:
                        deviation = block[b, j] / scale - mean[j]
                        squares[j] += deviation * deviation
                    else:
                        mean[j] += block[b, j] / scale
        if not deviations:
            mean /= np.float64(rows.size)
    return mean, squares


def oob_increase_summary(code: int, targets: np.ndarray, base: np.ndarray, shift: np.ndarray,
                         n_oob: np.ndarray, feature_major: bool, scale: float = 1.0,
                         ) -> tuple[np.ndarray, np.ndarray | None, int]:
    """``(mean, std, n_rows)`` of the ensemble-level OOB loss increases divided by
    ``scale`` over the rows with at least one out-of-bag tree (:func:`row_loss_moments`):
    their mean per feature, its standard error (``None`` for fewer than 2 rows) and how
    many rows there are."""
    rows = np.flatnonzero(n_oob > 0)
    mean, squares = row_loss_moments(code, targets, base, shift, n_oob, rows, feature_major,
                                     float(scale))
    n_rows = int(rows.size)
    std = np.sqrt(squares / (n_rows - 1)) / np.sqrt(n_rows) if n_rows > 1 else None
    return mean, std, n_rows


def target_codes(classes: np.ndarray | None, y: np.ndarray) -> np.ndarray:
    """Targets for the kernels: float y (``classes`` None), or the class index in ``classes``."""
    if classes is not None:
        return class_codes(classes, np.asarray(y)).astype(np.float64)
    return np.asarray(y, dtype=np.float64)
