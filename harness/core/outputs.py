"""Which output of a classifier an additive local decomposition explains.

Sutera et al. 2021 (Sec. 6) decompose the probability of the predicted class; the DESIGN makes
that the default and offers every class or one fixed class as parameters.
"""

from __future__ import annotations

import numpy as np

from harness.core.params import Interval, Options, Param

OUTPUT_PARAM = Param(
    "predicted_class",
    (Options({"predicted_class", "all_classes"}), Interval(int, 0, None, "left")),
    "classifiers: 'predicted_class' (Sutera et al. 2021), 'all_classes', or a class index",
)


def select_output(
    values: np.ndarray, base: np.ndarray, proba: np.ndarray, output, classes
) -> tuple[np.ndarray, np.ndarray, str]:
    """Reduce (n, p, C) contributions and (n, C) base values to the requested output.

    Parameters
    ----------
    values : ndarray of shape (n, p, C)
    base : ndarray of shape (n, C)
    proba : ndarray of shape (n, C)
        The model's class probabilities, used to find the predicted class.
    output : {"predicted_class", "all_classes"} or int
    classes : array-like
        The model's ``classes_`` (for messages and labels).

    Returns
    -------
    values, base, explains
    """
    n = values.shape[0]
    if output == "all_classes":
        return values, base, "class probabilities (all classes)"
    if output == "predicted_class":
        cls = np.argmax(proba, axis=1)
        rows = np.arange(n)
        return values[rows, :, cls], base[rows, cls], "predicted-class probability"
    if output >= values.shape[2]:
        raise ValueError(
            f"output={output} is not a class index of this model: it has {values.shape[2]} "
            f"classes {list(classes)} (indices 0..{values.shape[2] - 1})."
        )
    return values[:, :, output], base[:, output], f"probability of class {classes[output]!r}"


def check_output(output, model) -> str | None:
    """Reason to skip when ``output`` is a class index the classifier does not have."""
    classes = getattr(model, "classes_", None)
    if classes is not None and isinstance(output, int) and output >= len(classes):
        return (f"output={output} is not a class index: the model has {len(classes)} classes "
                f"(indices 0..{len(classes) - 1}).")
    return None
