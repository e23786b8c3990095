"""Values outside the range of what their method estimates (``Method.value_range``).

A total Sobol index or a Shapley effect normalised by Var(Y) lies in [0, 1], an MDI or the
limit of a permutation importance is >= 0: an estimate outside the range of its population
quantity is noise or bias, and the report says so beside it, with its distance to the bound
in standard errors when the method returned them.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from harness.core import registry
from harness.core.errors import HarnessError
from harness.run.results import RunResults


def declared_range(method_name: str) -> tuple[float | None, float | None]:
    """``value_range`` of the registered method class (unbounded for an unknown method)."""
    try:
        return tuple(registry.get_method_class(method_name).value_range)
    except HarnessError:
        return None, None


def _number(x: float) -> str:
    return f"{x:.3g}".replace("-", "−")


def _interval(low: float | None, high: float | None) -> str:
    return (("(−∞" if low is None else f"[{_number(low)}") + ", "
            + ("∞)" if high is None else f"{_number(high)}]"))


def outside_range(values: np.ndarray, low: float | None, high: float | None) -> np.ndarray:
    """Where ``values`` leave [low, high] by more than rounding (1e-9 of the largest |value|)."""
    values = np.asarray(values, dtype=float)
    tolerance = 1e-9 * np.abs(values).max(initial=0.0)
    below = values < low - tolerance if low is not None else np.zeros(values.shape, bool)
    above = values > high + tolerance if high is not None else np.zeros(values.shape, bool)
    return below | above


def _distance(value: float, std: float | None, low: float | None, high: float | None) -> str:
    """How far outside, in std: within ~2 std of the bound, noise can explain it."""
    if std is None or not np.isfinite(std) or std <= 0:
        return ""
    below = low is not None and value < low
    bound = low if below else high
    return (f", {abs(value - bound) / std:.1f} std {'below' if below else 'above'} "
            f"{_number(bound)}")


def range_notes(results: RunResults, cells: pd.DataFrame) -> list[str]:
    """A sentence for every (cell, feature) whose value lies outside the range its method
    declares (for a local method: how many explained samples do, and the farthest value)."""
    notes = []
    for _, cell in cells.iterrows():
        low, high = declared_range(cell["method_name"])
        if low is None and high is None:
            continue
        arrays = results.arrays(cell["key"])
        values = np.asarray(arrays["values"], dtype=float)
        outside = outside_range(values, low, high)
        who = f"{cell['method']} ({cell['model']}, seed {cell['seed']})"
        why = f"outside {_interval(low, high)} ({cell['explains']})"
        names = results.feature_names(cell["key"])
        if values.ndim == 1:
            std = arrays["std"]
            for j in np.flatnonzero(outside):
                spread = None if std is None else float(np.asarray(std)[j])
                notes.append(f"{who}: {names[j]} = {_number(values[j])}"
                             + ("" if spread is None else f" ± {_number(spread)}")
                             + f" {cell['unit']}{_distance(values[j], spread, low, high)}, "
                             f"{why}.")
            continue
        for j in np.flatnonzero(outside.any(axis=tuple(a for a in range(values.ndim)
                                                        if a != 1))):
            column, hits = values[:, j], outside[:, j]
            worst = column[hits]
            samples = int(hits.reshape(len(column), -1).any(axis=1).sum())
            notes.append(f"{who}: {names[j]} in {samples} of {len(column)} explained samples "
                         f"(farthest {_number(worst[np.argmax(np.abs(worst))])} "
                         f"{cell['unit']}), {why}.")
    return notes


#: Range notes shown open under a dataset's importances; more are collapsed
SHOWN_NOTES = 5


def range_html(notes: list[str]) -> list[str]:
    """The notes as HTML paragraphs (class ``range-note``), after one line on how to read them."""
    if not notes:
        return []
    shown = [f'<p class="range-note">{html.escape(note)}</p>' for note in notes]
    if len(shown) > SHOWN_NOTES:  # the first ones open, the rest one click away
        shown[SHOWN_NOTES:] = [f"<details><summary>{len(shown) - SHOWN_NOTES} more values "
                               "outside their range</summary>" + "".join(shown[SHOWN_NOTES:])
                               + "</details>"]
    return ['<p class="note">Values outside the range of the population quantity their method '
            "estimates (every seed checked): such an estimate is noise (within about 2 std of "
            "the bound) or bias. ± : the std the method returned.</p>", *shown]
