"""Stated orders of cost (:attr:`harness.core.method.Method.complexity`) read as ranges.

A method states, per size axis, the exponent k of time ∝ size^k, or, where its cost is a sum
of terms of different orders in that size, the tuple of their exponents: e.g. ``(0, 1)`` on
p for a walk that does not grow with p plus an (n, p) output. For a sum of positive terms
t(x) = Σ a_i x^{k_i}, the log-log slope d log t / d log x = Σ k_i a_i x^{k_i} / t is a
weighted mean of the k_i, so it lies in [min k_i, max k_i] at every size; so does the
least-squares slope of log t on log x over any sizes, a positively weighted mean of the
secant slopes between pairs of points (each within the range by the mean value theorem).
The bench (:mod:`harness.bench.scaling`) and the tests judge a fitted slope against that
range.
"""

from __future__ import annotations

import math

#: one exponent, the exponents of a sum of terms, or None (no power law on that axis)
Stated = float | tuple[float, ...] | None


def stated_range(claim: Stated) -> tuple[float, float] | None:
    """(lowest, highest) exponent of a stated order; None when none is stated.

    >>> stated_range(1), stated_range((0, 1)), stated_range(None)
    ((1.0, 1.0), (0.0, 1.0), None)
    """
    if claim is None:
        return None
    exponents = tuple(claim) if isinstance(claim, (tuple, list)) else (claim,)
    if not exponents or not all(isinstance(k, (int, float)) and math.isfinite(k)
                                for k in exponents):
        raise ValueError(f"a stated order is a finite exponent or a non-empty tuple of "
                         f"them; got {claim!r}.")
    return float(min(exponents)), float(max(exponents))


def outside_range(slope: float, low: float, high: float) -> float:
    """Signed distance of a fitted slope from [low, high]: 0 inside, slope - high above,
    slope - low below."""
    if slope > high:
        return slope - high
    return slope - low if slope < low else 0.0


def stated_label(low: float, high: float) -> str:
    """'1' for one exponent, '0 to 1' for a range (NaN bounds: '')."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"{high:g}" if low == high else f"{low:g} to {high:g}"
