"""Which output of a classifier (or of a multi-output regressor) an additive local
decomposition explains.

Sutera et al. 2021 (Sec. 6) decompose the probability of the predicted class; the DESIGN makes
that the default and offers every class or one fixed class as parameters.

A boosted classifier is explained in its margin (raw score before the link; the forest view's
``output_unit`` is ``"margin"``): a binary one has a single margin column, the log-odds of
its second class, which every ``output`` explains (``output=0`` explains the log-odds of the
first class, its negation); a multi-class one has one margin per class, and the predicted
class is the argmax of the margins (the argmax of the softmax probabilities).

A multi-output regressor (scikit-learn, y of shape (n, k)) has k prediction columns: an index
explains one output's prediction, and every other value of ``output`` (the default included:
a regression has no predicted class) explains all k at once, values (n, p, k) and base values
(n, k), as ``"all_classes"`` does for a classifier. A multi-output classifier has one block of
class probabilities per output: by default each output's predicted class is explained,
(n, p, k); an index explains output j's predicted class; ``"all_classes"`` every column
(:func:`select_multi_output`). A single-output regressor has one prediction, which every
``output`` explains.
"""

from __future__ import annotations

import numpy as np

from harness.core.params import Interval, Options, Param

OUTPUT_PARAM = Param(
    "predicted_class",
    (Options({"predicted_class", "all_classes"}), Interval(int, 0, None, "left")),
    "classifiers: 'predicted_class' (Sutera et al. 2021), 'all_classes', or a class index; "
    "multi-output regressors: an output index, else all outputs; multi-output classifiers: "
    "each output's predicted class, an output index (its predicted class), or 'all_classes'",
)

#: ``Importances.unit`` of a local decomposition, by the forest view's ``output_unit``
OUTPUT_UNITS = {"probability": "class probability", "margin": "margin (raw score)",
                "prediction": "prediction"}


def explains_of(output, classes, output_unit: str = "probability") -> str:
    """What a decomposition of ``output`` explains (``Importances.explains``)."""
    if output_unit == "margin":
        if len(classes) == 2:
            return f"margin (log-odds) of class {classes[0 if output == 0 else 1]!r}"
        if output == "all_classes":
            return "margins (raw scores) of all classes"
        if output == "predicted_class":
            return "predicted-class margin (raw score)"
        return f"margin (raw score) of class {classes[output]!r}"
    if output == "all_classes":
        return "class probabilities (all classes)"
    if output == "predicted_class":
        return "predicted-class probability"
    return f"probability of class {classes[output]!r}"


def select_output(
    values: np.ndarray, base: np.ndarray, proba: np.ndarray, output, classes,
    output_unit: str = "probability",
) -> tuple[np.ndarray, np.ndarray, str]:
    """Reduce (n, p, C) contributions and (n, C) base values to the requested output.

    Parameters
    ----------
    values : ndarray of shape (n, p, C)
    base : ndarray of shape (n, C)
    proba : ndarray of shape (n, C)
        The model's class probabilities (or margins), used to find the predicted class.
    output : {"predicted_class", "all_classes"} or int
    classes : array-like
        The model's classes in output order (for messages and labels).
    output_unit : {"probability", "margin"}
        What the C columns are (the forest view's ``output_unit``). A binary margin model has
        C = 1 column for its 2 classes (see the module docstring).

    Returns
    -------
    values, base, explains
    """
    n = values.shape[0]
    n_classes = len(classes) if output_unit == "margin" else values.shape[2]
    if isinstance(output, int) and output >= n_classes:
        raise ValueError(
            f"output={output} is not a class index of this model: it has {n_classes} "
            f"classes {list(classes)} (indices 0..{n_classes - 1})."
        )
    explains = explains_of(output, classes, output_unit)
    if output_unit == "margin" and values.shape[2] == 1:  # binary: the one margin column
        sign = -1.0 if output == 0 else 1.0
        return sign * values[:, :, 0], sign * base[:, 0], explains
    if output == "all_classes":
        return values, base, explains
    if output == "predicted_class":
        cls = np.argmax(proba, axis=1)
        rows = np.arange(n)
        return values[rows, :, cls], base[rows, cls], explains
    return values[:, :, output], base[:, output], explains


def multi_output_explains(output, n_outputs: int, per_output_classes=None) -> str:
    """What a decomposition of a multi-output model's ``output`` explains (see
    :func:`select_multi_output`)."""
    if per_output_classes is None:
        if isinstance(output, int):
            return f"prediction of output {output} (of {n_outputs})"
        return f"predictions of all {n_outputs} outputs"
    if isinstance(output, int):
        return f"predicted-class probability of output {output} (of {n_outputs})"
    if output == "all_classes":
        blocks = "; ".join(f"output {j}: {list(np.asarray(classes).tolist())}"
                           for j, classes in enumerate(per_output_classes))
        return (f"class probabilities of all {n_outputs} outputs (columns: each output's "
                f"classes in turn, {blocks})")
    return f"predicted-class probability of each of the {n_outputs} outputs"


def select_multi_output(
    values: np.ndarray, base: np.ndarray, output, n_outputs: int, per_output_classes=None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Reduce a multi-output model's (n, p, m) contributions and (n, m) base values to
    ``output``.

    A regressor's m = k columns are its outputs: an output index gives that output's
    (n, p) values and (n,) base, anything else all k outputs. A classifier's m columns are
    every output's classes in turn (``per_output_classes``, one array per output):
    ``"predicted_class"`` gives, for each output, the probability of the class it predicts
    (the largest of its block of base + Σ values), (n, p, k) and (n, k); an output index
    that of output j alone, (n, p) and (n,); ``"all_classes"`` every column.

    Raises
    ------
    ValueError
        If ``output`` is an index the model does not have.
    """
    if isinstance(output, int) and output >= n_outputs:
        raise ValueError(f"output={output} is not an output index of this model: it has "
                         f"{n_outputs} outputs (indices 0..{n_outputs - 1}).")
    explains = multi_output_explains(output, n_outputs, per_output_classes)
    if per_output_classes is None:
        if isinstance(output, int):
            return values[:, :, output], base[:, output], explains
        return values, base, explains
    if output == "all_classes":
        return values, base, explains
    prediction = base + values.sum(axis=1)
    rows = np.arange(values.shape[0])
    starts = np.cumsum([0] + [len(classes) for classes in per_output_classes])
    chosen = [output] if isinstance(output, int) else range(n_outputs)
    columns = np.stack([starts[j] + np.argmax(prediction[:, starts[j]:starts[j + 1]], axis=1)
                        for j in chosen], axis=1)
    picked_values = np.take_along_axis(values, columns[:, None, :], axis=2)
    picked_base = base[rows[:, None], columns]
    if isinstance(output, int):
        return picked_values[:, :, 0], picked_base[:, 0], explains
    return picked_values, picked_base, explains


def check_output(output, model) -> str | None:
    """Reason to skip when ``output`` is a class index the classifier does not have, or an
    output index a multi-output model does not have.

    ``model`` is a forest view (its ``classes``, ``n_outputs``) or a model with ``classes_``."""
    n_outputs = getattr(model, "n_outputs", 1)
    if n_outputs > 1 and isinstance(output, int) and output >= n_outputs:
        return (f"output={output} is not an output index: the model has {n_outputs} outputs "
                f"(indices 0..{n_outputs - 1}).")
    classes = getattr(model, "classes", None)
    if classes is None:
        classes = getattr(model, "classes_", None)
    if classes is not None and isinstance(output, int) and output >= len(classes):
        return (f"output={output} is not a class index: the model has {len(classes)} classes "
                f"(indices 0..{len(classes) - 1}).")
    return None
