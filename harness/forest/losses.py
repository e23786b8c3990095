"""Losses of the permutation and projection importances, compiled once.

A prediction is a row of the forest's output space: the regression value (1 entry) or the
class-probability vector. Targets are the regression value or the class index (as a float).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from harness.forest.inbag import class_codes

SQUARED_ERROR, MISCLASSIFICATION, BRIER, LOG_LOSS = 0, 1, 2, 3
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


@njit(cache=True)
def loss_value(code, target, prediction):
    """Loss of one prediction row against one target (see the module docstring)."""
    if code == SQUARED_ERROR:
        diff = target - prediction[0]
        return diff * diff
    label = int(target)
    if code == MISCLASSIFICATION:
        # argmax, ties (within TIE_MARGIN) to the first class as predict() does
        best = 0
        for k in range(1, prediction.size):
            if prediction[k] > prediction[best] + TIE_MARGIN:
                best = k
        return 0.0 if best == label else 1.0
    if code == BRIER:
        total = 0.0
        for k in range(prediction.size):
            diff = prediction[k] - (1.0 if k == label else 0.0)
            total += diff * diff
        return total
    return -math.log(max(prediction[label], _LOG_FLOOR))


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


@njit(cache=True)
def row_loss_increases(code, targets, base, shift, n_oob, rows):
    """loss(base_i + shift_ij / n_oob_i) − loss(base_i) for each row i of ``rows`` and every
    feature j, (len(rows), p), without (n, p, n_values) temporaries: the ensemble-level OOB
    increases of ``mda_ik`` and ``sobol_mda`` (``shift`` summed over each row's OOB trees),
    and, with ``n_oob`` all ones, the held-out increases of ``mda_test``."""
    p, n_values = shift.shape[1], shift.shape[2]
    out = np.empty((rows.size, p))
    moved = np.empty(n_values)
    for r in range(rows.size):
        i = rows[r]
        base_loss = loss_value(code, targets[i], base[i])
        for j in range(p):
            for c in range(n_values):
                moved[c] = base[i, c] + shift[i, j, c] / n_oob[i]
            out[r, j] = loss_value(code, targets[i], moved) - base_loss
    return out


def target_codes(classes: np.ndarray | None, y: np.ndarray) -> np.ndarray:
    """Targets for the kernels: float y (``classes`` None), or the class index in ``classes``."""
    if classes is not None:
        return class_codes(classes, np.asarray(y)).astype(np.float64)
    return np.asarray(y, dtype=np.float64)
