"""Geurts 2016 slides (seed 004): the pages ``geurts-xor``, ``geurts-masking`` and
``geurts2016-srs`` at quick scale, and the exact computations behind them against
independent routes (closed forms, enumeration, simulation)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from harness.datasets.xor import xor_population
from harness.oracle.exact_mdi import expected_mdi
from harness.reports.targets import geurts_subspace_theory as theory
from harness.reports.targets.geurts_masking import (
    binary_entropy,
    expected_plugin_mi_exact,
    masking_population,
    plugin_mi,
    strongly_relevant,
)
from harness.reports.targets.geurts_xor import alpha_crossing
from harness.reports.targets.published import by_target
from harness.reports.targets.verdict import VERDICTS
from tests._support.gallery_pages import page_records, page_rows, quick_gallery

PAGES = ["geurts-xor", "geurts-masking", "geurts2016-srs"]


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), PAGES)


def _summary(gallery, name):
    return json.loads((gallery / f"{name}.json").read_text())


@pytest.mark.parametrize("name", PAGES)
def test_each_page_judges_exactly_its_catalogue_results(gallery, name):
    summary = _summary(gallery, name)
    assert set(summary["results"]) == {r.key for r in by_target()[name]}
    assert set(summary["results"].values()) <= set(VERDICTS)
    assert summary["assumptions"] and summary["scale"].startswith("quick")


# --- geurts-xor ---------------------------------------------------------------------------

def test_xor_page(gallery):
    text = (gallery / "geurts-xor.md").read_text()
    records = {row["label"]: row for row in page_records(text)}
    assert float(records["Imp(X3)"]["ours"]) > float(records["Imp(X1)"]["ours"])
    assert float(records["Imp(X3), forests"]["ours"]) > float(records["Imp(X1), forests"]["ours"])
    assert float(records["Imp(X1), depth 1, forests"]["ours"]) == 0.0  # X1 alone: no information
    assert records["I(X1; Y \\| X2)"]["published"] == "1"
    # both errata are flagged on the page
    assert "the signs are wrong" in text and "X3 ⊥⊥ X1" in text
    assert _summary(gallery, "geurts-xor")["results"]["geurts.xor-alpha"] == "reproduced"


def test_xor_alpha_crossing_is_one_half():
    """Thm 1 on the XOR family: Imp(X1) = 1/6 + α/3, Imp(X3) = 2/3 − 2α/3 (α = H(ε))."""
    assert alpha_crossing() == pytest.approx(0.5, abs=1e-10)


def test_xor_x3_is_independent_of_x1_in_the_slides_table():
    X, _, prob = xor_population(0.05)
    joint = np.zeros((2, 2))
    np.add.at(joint, (X[:, 0], X[:, 2]), prob)
    np.testing.assert_allclose(joint, np.outer(joint.sum(1), joint.sum(0)), atol=1e-15)


# --- geurts-masking -----------------------------------------------------------------------

@pytest.mark.parametrize("rule", ["paper", "sklearn"])
@pytest.mark.parametrize("delta", [0.05, 0.2])
def test_masking_closed_forms(rule, delta):
    """p = 2: K = 1 gives Thm 1 (½ + ½h(δ), ½ − ½h(δ)); K = 2 masks X2 completely; with an
    irrelevant X3 the root draws {X2, X3} with probability 1/3: Imp(X2) = (1 − h(δ))/3."""
    h = binary_entropy(delta)
    X, y, prob = masking_population(delta)
    np.testing.assert_allclose(expected_mdi(X, y, prob, max_features=1, rule=rule),
                               [0.5 + h / 2, 0.5 - h / 2], atol=1e-12)
    np.testing.assert_allclose(expected_mdi(X, y, prob, max_features=2, rule=rule), [1, 0],
                               atol=1e-12)
    X, y, prob = masking_population(delta, n_irrelevant=1)
    imp = expected_mdi(X, y, prob, max_features=2, rule=rule)
    np.testing.assert_allclose(imp, [1 - (1 - h) / 3, (1 - h) / 3, 0], atol=1e-12)


def test_strong_relevance_of_the_slides_examples():
    np.testing.assert_array_equal(strongly_relevant(*masking_population(0.1)), [True, False])
    np.testing.assert_array_equal(strongly_relevant(*xor_population(0.05)), [True, True, False])


def test_plugin_mi_expectation_exact_enumeration_against_simulation():
    """Two routes to E[Î] at N = 12 (2 × 2, non-uniform): every table weighted by its
    multinomial probability, and 200 000 simulated tables (4 standard errors)."""
    px, py = np.array([0.6, 0.4]), np.array([0.3, 0.7])
    exact = expected_plugin_mi_exact(12, px, py)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(12, np.outer(px, py).ravel(), size=200_000).reshape(-1, 2, 2)
    values = plugin_mi(counts)
    assert abs(values.mean() - exact) < 4 * values.std(ddof=1) / np.sqrt(len(values))


def test_plugin_mi_bias_approaches_the_formula_from_above():
    """N·E[Î] → 1/(2 ln 2) for 2 × 2 (Miller 1955), the exact values decreasing towards it."""
    half = np.array([0.5, 0.5])
    scaled = [n * expected_plugin_mi_exact(n, half, half) for n in (20, 40, 80)]
    limit = 1 / (2 * math.log(2))
    assert scaled[0] > scaled[1] > scaled[2] > limit
    assert scaled[2] - limit < (scaled[0] - limit) / 2  # the gap shrinks like 1/N


def test_masking_page(gallery):
    text = (gallery / "geurts-masking.md").read_text()
    results = _summary(gallery, "geurts-masking")["results"]
    assert results["geurts.masking"] == "reproduced"
    assert results["geurts.mi-bias"] in ("reproduced", "reproduced within Monte-Carlo error")
    assert "Erratum" in text and "½ H(Y) + ½ ε" in text


# --- geurts2016-srs -----------------------------------------------------------------------

def test_rs_arithmetic_closed_forms():
    """C(p−2, q−2)/C(p, q) = q(q−1)/(p(p−1)); C(p−r, q)/C(p, q) = Π_{i<q} (p−r−i)/(p−i)."""
    p, q = 10_000, 50
    assert theory.with_conditioning(p, q, 1) == Fraction(q * (q - 1), p * (p - 1))
    assert math.floor(1 / theory.with_conditioning(p, q, 1)) == 40_812
    product = Fraction(1)
    for i in range(q):
        product *= Fraction(p - 10 - i, p - i)
    assert theory.none_relevant(p, q, 10) == product
    with pytest.raises(ValueError, match="1 <= q <= p"):
        theory.with_conditioning(10, 20, 1)


@pytest.mark.parametrize("scenario", ["chaining SRS", "clique RS", "clique SRS"])
def test_exact_convergence_against_simulation(scenario):
    """The Markov-chain expectations against a direct simulation of the same idealised trees
    (p = 24, q = 8, k = 3; 1000 runs, 4 standard errors)."""
    p, q, k = 24, 8, 3
    rng = np.random.default_rng(1)
    clique = scenario.startswith("clique")
    alpha = 1.0 if scenario.endswith("SRS") else 0.0
    times = []
    for _ in range(1000):
        found = np.zeros(k, dtype=bool)
        t = 0
        while not found.all():
            t += 1
            r = np.flatnonzero(found)[: int(alpha * q)]
            drawn = np.zeros(p, dtype=bool)
            drawn[r] = True
            drawn[rng.choice(np.flatnonzero(~drawn), q - r.size, replace=False)] = True
            held = drawn[:k]
            if clique and held.all():
                found[rng.integers(k)] = True
            elif not clique:
                prefix = np.argmin(np.append(held, False))
                found[:prefix] = True
        times.append(t)
    times = np.asarray(times, dtype=float)
    exact = float(theory.EXACT[scenario](p, q, k, **({} if alpha == 0 else {"alpha": alpha})))
    assert abs(times.mean() - exact) < 4 * times.std(ddof=1) / np.sqrt(len(times)), (
        times.mean(), exact)


def test_srs_page(gallery):
    text = (gallery / "geurts2016-srs.md").read_text()
    summary = _summary(gallery, "geurts2016-srs")
    assert summary["results"]["geurts.rs-arithmetic"] == "reproduced"
    assert summary["results"]["geurts.mixed"] == "reproduced"
    rows = {row[0]: row for row in page_rows(text)}
    assert rows["mean trees to draw them together, 1/P"][4] == "reproduced"
    # the diagnosis is on the page, with both F rules run
    assert "F recomputed (before)" in text and "step 2.3" in text
    assert (gallery / "geurts2016-srs.png").stat().st_size > 10_000
    # the gaps printed are SRS − RS of the printed means
    for label, row in rows.items():
        if label.startswith("p = ") and "SRS − RS" in label:
            gap, rs, srs = (float(v) for v in
                            row[2].replace("(RS", "").replace("SRS", "").replace(")", "")
                            .replace(",", "").split())
            assert gap == pytest.approx(srs - rs, abs=2e-3)
