"""The one verdict rule of the reproduction gallery, applied by code to every published number.

A page compares published numbers with ours. Each number gets a verdict from the rule below
(:func:`judge`), and the page's verdict is the worst of its numbers' and claims' verdicts
(:func:`page_verdict`). No page chooses its own threshold: the tolerance follows from how
precisely the number was printed and from the Monte-Carlo standard errors, and the z bound from
how many numbers the page compares (:func:`z_bound`). :data:`RULE` is the text of the rule;
``reports/gallery/index.md`` prints it.

The rule, for a published value ``a`` printed with ``d`` decimals and our value ``b``:

- *printing tolerance* ``h``: half a unit of the last printed digit, ``0.5·10^-d`` (a full unit,
  ``10^-d``, where the source truncates instead of rounding);
- *Monte-Carlo standard error* ``s = sqrt(s_ours² + s_published²)``: ``s_ours`` is the standard
  error of our estimate (0 for an exact value), ``s_published`` the standard error of the
  published estimate where it is itself a Monte-Carlo average (estimated from our own
  replicates, scaled to the paper's number of replicates; 0 where the published value is exact);
- **reproduced** when ``|a − b| ≤ h``;
- **reproduced within Monte-Carlo error** when ``|a − b| ≤ h + z*·s``, with ``z*`` the
  two-sided normal quantile that keeps the chance of a false "deviates" on a page below 1 %
  when the page compares ``m`` numbers (Bonferroni: ``z* = Φ⁻¹(1 − 0.01 / (2m))``; 2.58 for
  one number, 3.29 for 10, 3.72 for 50);
- **deviates** otherwise.

A qualitative claim of a source ("X1 and X4 rank first") is *reproduced* when it holds on our
numbers and *deviates* when it does not; where it holds on some of our Monte-Carlo replicates
only, the page reports the fraction and the claim is judged on the mean. A result whose
computation needs a parameter the source does not give is *not determined by the text*: the page
names the parameter and shows the result over a range of it, and does not pick the value that
matches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

import pandas as pd

REPRODUCED = "reproduced"
WITHIN_MC = "reproduced within Monte-Carlo error"
DEVIATES = "deviates"
UNDETERMINED = "not determined by the text"
#: every verdict, best first; a page's verdict is the worst of its parts'
VERDICTS = (REPRODUCED, WITHIN_MC, UNDETERMINED, DEVIATES)
#: chance of a false "deviates" on a page whose numbers all agree in distribution
PAGE_FALSE_ALARM = 0.01

RULE = """\
**The verdict rule** (one for the whole gallery, applied by `harness/reports/targets/verdict.py`).
For a published value *a* printed with *d* decimals and our value *b*:

- printing tolerance *h* = 0.5·10⁻ᵈ (10⁻ᵈ where the source truncates);
- Monte-Carlo standard error *s* = √(*s*_ours² + *s*_published²): *s*_ours is the standard error
  of our estimate (0 for an exact value); *s*_published that of the published estimate where it
  is itself a Monte-Carlo average, estimated from our replicates scaled to the paper's number of
  replicates (0 where the published value is exact);
- **reproduced** when |*a* − *b*| ≤ *h*; **reproduced within Monte-Carlo error** when
  |*a* − *b*| ≤ *h* + *z*\\*·*s*; **deviates** otherwise. *z*\\* = Φ⁻¹(1 − 0.01 / (2*m*)) for a
  page comparing *m* numbers (Bonferroni: a page whose numbers all agree is called "deviates"
  with probability below 1 %): 2.58 for one number, 3.29 for 10, 3.72 for 50;
- a qualitative claim is **reproduced** when it holds on our numbers (on the mean of our
  replicates, the fraction of replicates where it holds shown beside it) and **deviates**
  otherwise;
- a result that needs a parameter the source does not give is **not determined by the text**:
  its page names the parameter and shows the result over a range of it;
- a page's verdict is the worst of its numbers' and claims' verdicts, in the order
  reproduced < reproduced within Monte-Carlo error < not determined by the text < deviates.
"""


@dataclass(frozen=True)
class Comparison:
    """One published number next to ours.

    Parameters
    ----------
    label
        What the number is (``"X1, K = 3"``).
    published
        The value as printed.
    ours
        Our value (an exact value, or the mean of our Monte-Carlo replicates).
    decimals
        Decimals printed by the source (``0.412`` has 3); negative for numbers printed to
        tens, hundreds, ...
    ours_se
        Standard error of ``ours`` (0 for an exact value).
    published_se
        Standard error of the published value where it is itself a Monte-Carlo estimate
        (0 where it is exact).
    truncated
        True where the source truncates to ``decimals`` instead of rounding.
    """

    label: str
    published: float
    ours: float
    decimals: int
    ours_se: float = 0.0
    published_se: float = 0.0
    truncated: bool = False

    def __post_init__(self) -> None:
        for name in ("ours_se", "published_se"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} of {self.label!r} must be a finite number >= 0; "
                                 f"got {value!r}")

    @property
    def printing_tolerance(self) -> float:
        return (1.0 if self.truncated else 0.5) * 10.0 ** (-self.decimals)

    @property
    def standard_error(self) -> float:
        return math.hypot(self.ours_se, self.published_se)


def z_bound(n_numbers: int) -> float:
    """The z bound of a page comparing ``n_numbers`` numbers (Bonferroni, 1 % per page)."""
    if n_numbers < 1:
        raise ValueError(f"a page compares at least one number; got {n_numbers}")
    return NormalDist().inv_cdf(1.0 - PAGE_FALSE_ALARM / (2 * n_numbers))


def judge(comparisons: Iterable[Comparison]) -> pd.DataFrame:
    """Apply the rule to every comparison of a page (see the module docstring).

    Returns one row per comparison: label, published, ours, difference (ours − published),
    printing tolerance, standard error, z ((ours − published) beyond the printing tolerance,
    in standard errors), tolerance (h + z*·s) and verdict.
    """
    comparisons = list(comparisons)
    bound = z_bound(len(comparisons))
    rows = []
    for item in comparisons:
        if not (math.isfinite(item.published) and math.isfinite(item.ours)):
            verdict, excess_z = DEVIATES, math.inf
        else:
            gap = abs(item.ours - item.published)
            excess = max(gap - item.printing_tolerance, 0.0)
            s = item.standard_error
            excess_z = excess / s if s > 0 else (0.0 if excess == 0 else math.inf)
            if excess <= 1e-12 * max(1.0, abs(item.published)):
                verdict = REPRODUCED
            elif s > 0 and excess <= bound * s:
                verdict = WITHIN_MC
            else:
                verdict = DEVIATES
        rows.append({"label": item.label, "published": item.published, "ours": item.ours,
                     "difference": item.ours - item.published,
                     "printing_tolerance": item.printing_tolerance,
                     "standard_error": item.standard_error, "z_beyond_printing": excess_z,
                     "tolerance": item.printing_tolerance + bound * item.standard_error,
                     "verdict": verdict})
    return pd.DataFrame(rows)


def claim(holds: bool) -> str:
    """The verdict of a qualitative claim: reproduced when it holds on our numbers."""
    return REPRODUCED if holds else DEVIATES


def page_verdict(verdicts: Iterable[str]) -> str:
    """The worst of ``verdicts`` (order: :data:`VERDICTS`); a page with none is refused."""
    verdicts = list(verdicts)
    unknown = sorted(set(verdicts) - set(VERDICTS))
    if unknown:
        raise ValueError(f"verdicts must be among {VERDICTS}; got {unknown}")
    if not verdicts:
        raise ValueError("a page needs at least one verdict (a number or a claim); got none")
    return max(verdicts, key=VERDICTS.index)


def worst_line(judged: pd.DataFrame, unit: str = "") -> str:
    """One line naming the comparison of ``judged`` (from :func:`judge`) furthest out."""
    if judged.empty:
        raise ValueError("no comparison to summarise")
    ratio = judged["difference"].abs() / judged["tolerance"].where(judged["tolerance"] > 0)
    row = judged.loc[ratio.fillna(math.inf).idxmax()]
    suffix = f" {unit}" if unit else ""
    return (f"{row['label']}: published {row['published']:.4g}, ours {row['ours']:.4g}"
            f"{suffix} (difference {row['difference']:+.3g}, tolerance "
            f"{row['tolerance']:.3g}: {row['verdict']})")
