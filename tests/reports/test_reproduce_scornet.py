"""The Scornet pages at quick scale (``scornet-mdi-bias``, ``scornet-mdi-lemmas``,
``scornet-mda``): closed forms derived here, independently of the pages' code."""

from __future__ import annotations

import json
from statistics import NormalDist

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from harness.datasets.scornet_sqrt import sqrt_weights_truth
from harness.reports.targets.base import VERDICTS
from harness.reports.targets.scornet_mdi_lemmas import cart_mdi, multiplicative_tree_mdi
from tests._support.gallery_pages import cell_timestamps, page_records, quick_gallery

TARGETS = ["scornet-mdi-bias", "scornet-mdi-lemmas", "scornet-mda"]
EARLY_READINGS = ("early-stopped, leaves", "early-stopped, depth")


def _rows(gallery, name: str) -> list[dict[str, str]]:
    return page_records((gallery / f"{name}.md").read_text())


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), TARGETS)


def test_pages_figures_and_index(gallery):
    index = (gallery / "index.md").read_text()
    for name in TARGETS:
        text = (gallery / f"{name}.md").read_text()
        assert "Scale: quick:" in text
        assert any(f"**Verdict: {verdict}.**" in text for verdict in VERDICTS)
        assert f"[{name}]({name}.md)" in index
        assert "## Assumptions" in text
        assert (gallery / f"{name}.png").stat().st_size > 10_000


# ----------------------------------------------------------------------------- MDI bias
def test_scornet_dataset_truth():
    truth = sqrt_weights_truth(3, 0.0, 3.0)
    np.testing.assert_allclose(truth.quantities["mdi_limit"].values, [1.0, 2.0, 3.0])
    assert truth.var_y == pytest.approx(9.0)
    correlated = sqrt_weights_truth(3, 0.5, 12.0)
    assert "mdi_limit" not in correlated.quantities  # no known limit with correlation
    shapley = correlated.quantities["shapley_effect"].values * correlated.var_y
    assert shapley.sum() == pytest.approx(6 + 2 * np.sqrt(2) * 0.5)  # efficiency: V[m(X)]
    assert np.all(np.diff(shapley) > 0)  # the true ranking X3 > X2 > X1 survives rho = 0.5


def test_scornet_quick_claims(gallery):
    """Bounds at quick scale (20 trees, 3 data sets at n = 100 and 10 000 for σ² = 3). At
    n = 10 000 the standard errors are ≈ 0.03 for MDI(X1) and ≈ 0.1 for Σ MDI: the fully
    grown MDI(X1) (≈ 2.1) is far above the early-stopped one (≈ 1.2) and above its limit 1;
    the fully grown Σ MDI equals the in-bag variance of Y (R_n = 0), within 0.5 of
    V[Y] = 9; the early-stopped Σ MDI sits near V[m(X)] = 6, more than 2 below 9. At
    σ² = 12 and n = 3000 every forest ranks X3 > X2 > X1 (100 % over 40 full-scale runs).
    The fully grown MDI_j − j were 1.08, 0.97, 0.95 over 10 full-scale runs (≈ σ²/3 each);
    ± 25 % leaves > 3 standard errors of a 3-run mean."""
    rows = _rows(gallery, "scornet-mdi-bias")
    value = {(r["quantity"], r["trees"], r["n"]): float(r["ours"]) for r in rows}
    for early in EARLY_READINGS:
        for n in ("100", "10000"):
            assert value["MDI(X1)", "fully grown", n] > value["MDI(X1)", early, n]
        assert value["MDI(X1)", early, "10000"] < 1.4
        # early stopping leaves the noise out: Σ MDI well below V[Y] = 9 (near V[m] = 6)
        assert abs(value["Σ_j MDI(X_j)", early, "10000"] - 6.0) < 1.0
    assert value["MDI(X1)", "fully grown", "10000"] > 1.6
    assert abs(value["Σ_j MDI(X_j)", "fully grown", "10000"] - 9.0) < 0.5
    for kind in (*EARLY_READINGS, "fully grown"):
        assert value["correct ranking (fraction)", kind, "3000"] == 1.0
    for j in (1, 2, 3):  # the noise σ² = 3 shared equitably: each MDI gets ≈ σ²/3 = 1 more
        assert 0.75 < value[f"MDI(X{j})", "fully grown", "10000"] - j < 1.25
    text = (gallery / "scornet-mdi-bias.md").read_text()
    assert "Claim 'fully grown MDI(X1) is positively biased (σ² = 3)': holds" in text


def test_scornet_bias_verdict_follows_the_numbers(gallery):
    """Both readings of 'early-stopped' (⌊n^0.6⌋ leaves; depth ⌊0.6 log2 n⌋) are judged at
    n = 10 000 against V[m_j] = j (j = 1, 2, 3) and V[m(X)] = 6 by the rule, re-applied here:
    z* = Φ⁻¹(1 − 0.01 / (2m)) over the m judged rows; a gap beyond z*·se is 'deviates', one
    within it is not (issue 20: +0.19 at z = 12 cannot pass). The result's verdict is the
    worst over both readings: 'deviates' as soon as one judged row deviates."""
    rows = _rows(gallery, "scornet-mdi-bias")
    judged = [r for r in rows if r["verdict"] != "trend (not judged)"]
    assert {r["trees"] for r in judged} >= set(EARLY_READINGS)
    z_star = NormalDist().inv_cdf(1 - 0.01 / (2 * len(judged)))
    limits = {"MDI(X1)": 1.0, "MDI(X2)": 2.0, "MDI(X3)": 3.0, "Σ_j MDI(X_j)": 6.0}
    for early in EARLY_READINGS:
        for quantity, limit in limits.items():
            row = next(r for r in judged if (r["quantity"], r["trees"], r["n"])
                       == (quantity, early, "10000"))
            gap, se = abs(float(row["ours"]) - limit), float(row["ours_se"])
            assert row["verdict"] == ("deviates" if gap > z_star * se + 1e-9
                                      else "reproduced within Monte-Carlo error"), row
    leaves_x1 = next(r for r in judged if (r["quantity"], r["trees"], r["n"])
                     == ("MDI(X1)", "early-stopped, leaves", "10000"))
    assert float(leaves_x1["ours"]) - 1.0 > 0.05  # the finite-n bias of ⌊n^0.6⌋-leaf forests
    results = json.loads((gallery / "scornet-mdi-bias.json").read_text())["results"]
    assert set(results) == {"scornet.mdi-bias", "scornet.sigma12"}
    if any(r["verdict"] == "deviates" for r in judged):
        assert results["scornet.mdi-bias"] == "deviates"
    text = (gallery / "scornet-mdi-bias.md").read_text()
    for early in EARLY_READINGS:  # both readings listed among the assumptions
        assert "'Early-stopped', reading" in text and f"('{early}')" in text


# ----------------------------------------------------------------------------- MDI lemmas
def test_cart_mdi_matches_scikit_learn_unnormalised_importances():
    """Our CART (used for the lemmas' empirical trees) against scikit-learn's tree of the same
    depth: MDI_j = Σ over nodes split on j of (n_t/n)·(impurity decrease)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(400, 3))
    y = 3 * X[:, 0] + np.sin(6 * X[:, 1]) + 0.3 * rng.standard_normal(400)
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).tree_
    expected = np.zeros(3)
    for node in range(tree.node_count):
        left, right = tree.children_left[node], tree.children_right[node]
        if left < 0:
            continue
        decrease = (tree.weighted_n_node_samples[node] * tree.impurity[node]
                    - tree.weighted_n_node_samples[left] * tree.impurity[left]
                    - tree.weighted_n_node_samples[right] * tree.impurity[right])
        expected[tree.feature[node]] += decrease / 400
    np.testing.assert_allclose(cart_mdi(X, y, 3), expected, rtol=1e-9, atol=1e-12)


def test_multiplicative_theoretical_trees_by_hand():
    """m = 4 x1 x2 (α = 1, d = 2): root split on X1 at 1/2 decreases V by 1/4 (means α and
    2α... of 2x1 on the halves differ by 1); T2's X1 splits at level 1 decrease by 1/32 and
    9/32. The sum of all MDIs tends to V[m] = 16(1/9 − 1/16) = 7/9."""
    from fractions import Fraction

    t1 = multiplicative_tree_mdi(Fraction(1), 2, (0, 1), 0)
    t2 = multiplicative_tree_mdi(Fraction(1), 2, (1, 0), 0)
    assert t1[0] == Fraction(1, 4) and t2[0] == Fraction(10, 32)
    deep = multiplicative_tree_mdi(Fraction(1), 12, (0, 1), 0)
    assert 7 / 9 - 2e-3 < float(sum(deep)) <= 7 / 9
    with pytest.raises(ValueError, match="not an optimal split"):
        multiplicative_tree_mdi(Fraction(1), 2, (0, 0), 0)  # X1 twice: not optimal on the right


def test_lemma_rows_exact_and_estimated(gallery):
    """Exact rows equal the lemmas' formulas (α²/16; (1 − 4^−β)/3 = Var(2C) of the square
    centres C, enumerated here); empirical rows agree within 4 standard errors plus the
    finite-n bias bound measured at n = 5000 (0.012 at α = 2, scaling as α²)."""
    rows = _rows(gallery, "scornet-mdi-lemmas")
    exact = [r for r in rows if r["estimate"].startswith("exact")]
    assert len(exact) == 2 * 4 + 6
    for row in exact:
        setting = float(row["setting"].split("= ")[1])
        if row["lemma"] == "α²/16":
            expected = setting**2 / 16
        else:
            h = 2.0 ** -setting
            centres = (np.arange(2 ** int(setting)) + 0.5) * h
            expected = float(np.var(2 * centres))
        assert float(row["ours"]) == pytest.approx(expected, rel=1e-3, abs=1e-9)
        assert row["verdict"] == "reproduced"
    for row in rows:
        if row["estimate"].startswith("empirical") and row["lemma"] == "α²/16":
            alpha = float(row["setting"].split("= ")[1])
            bias = 0.012 * (alpha / 2) ** 2 * 2  # n = 8000 at quick scale: ≤ 2x the n=5000 bias
            assert abs(float(row["ours"]) - alpha**2 / 16) <= 4 * float(row["ours_se"]) + bias
    text = (gallery / "scornet-mdi-lemmas.md").read_text()
    assert "Claim 'MDI computed with a single tree is ill-defined': holds" in text


# ----------------------------------------------------------------------------- MDA
def test_mda_toy_and_limits(gallery):
    """Toy: 16.4 − 13.7 = 2.7 reproduced, the errors not determined by the text. Limits on
    Friedman #1 (p = 6, noise 1) derived here: V[Y] ST_4 = Var(10 X4) = 100/12, V[Y] ST_5 =
    25/12, V[Y] ST_3 = Var(20 (X3 − 1/2)²) = 400/180, X6 irrelevant (0); Train-Test and
    Breiman-Cutler → twice these, Ishwaran-Kogalur → these."""
    rows = _rows(gallery, "scornet-mda")
    toy = [r for r in rows if r["part"] == "toy"]
    assert toy[0]["verdict"] == "reproduced" and float(toy[0]["ours"]) == pytest.approx(2.7)
    assert toy[1]["verdict"] == "not determined by the text"
    expected = {"X3": 400 / 180, "X4": 100 / 12, "X5": 25 / 12, "X6": 0.0}
    seen = 0
    for row in rows:
        if row["part"] != "limits":
            continue
        variable = row["quantity"].split(", ")[1]
        factor = 1.0 if row["quantity"].startswith("Ishwaran") else 2.0
        if variable in expected:
            assert float(row["published_value"]) == pytest.approx(factor * expected[variable],
                                                                  rel=1e-3, abs=1e-9)
            seen += 1
        if variable == "X6" and row["quantity"].endswith("n = 1200"):
            # an irrelevant feature: MDA mean within 4.5 standard errors of 0 (3 data sets)
            assert abs(float(row["ours"])) <= 4.5 * float(row["ours_se"]) + 0.05
    assert seen == 3 * 2 * 2 * 4
    summary = (gallery / "scornet-mda.json").read_text()
    assert '"scornet.mda-toy": "not determined by the text"' in summary


def _decomposition_by_monte_carlo(rho: float, j: int, draws: int = 200_000, seed: int = 0):
    """The proposition's terms for m(X) = Σ_k √k X_k, X ~ N(0, Σ), corr(X1, X2) = rho, from
    their definitions (not from a closed form): with X_j', X_j'' two draws of X_j given
    X_-j and X_m', X_m'' two independent draws of X_j's marginal,
    E[V(m | X_-j)] = ½ E[(m(X_j', ·) − m(X_j'', ·))²], E[V(m(X_πj) | X_-j)] likewise with the
    marginal draws, MDA_3 = E[(m(X_j', ·) − m(X_m', ·))·(m(X_j'', ·) − m(X_m'', ·))].
    Returns {term: (mean, standard error)}."""
    rng = np.random.default_rng(seed)
    sigma = np.eye(3)
    sigma[0, 1] = sigma[1, 0] = rho
    X = rng.multivariate_normal(np.zeros(3), sigma, size=draws)
    rest = [k for k in range(3) if k != j]
    weights = np.linalg.solve(sigma[np.ix_(rest, rest)], sigma[rest, j])
    mean = X[:, rest] @ weights
    sd = np.sqrt(sigma[j, j] - sigma[j, rest] @ weights)
    coef = np.sqrt([1.0, 2.0, 3.0])

    def m(xj):
        Z = X.copy()
        Z[:, j] = xj
        return Z @ coef

    c1, c2 = (m(mean + sd * rng.standard_normal(draws)) for _ in range(2))
    g1, g2 = (m(np.sqrt(sigma[j, j]) * rng.standard_normal(draws)) for _ in range(2))
    samples = {"V[Y] ST": 0.5 * (c1 - c2) ** 2, "V[Y] ST_mg": 0.5 * (g1 - g2) ** 2,
               "MDA3": (c1 - g1) * (c2 - g2), "total": (m(X[:, j]) - g1) ** 2}
    return {k: (v.mean(), v.std() / np.sqrt(draws)) for k, v in samples.items()}


def test_mda_dependent_decomposition(gallery):
    """The dependent-input proposition's rows: the exact terms on the page agree with their
    Monte-Carlo values from the definitions (within 5 se), their sum with E[(m(X) −
    m(X_πj))²] (the theorem's limit), the limits are (i)–(ii) ST + ST_mg + MDA3 and (iii)
    ST + MDA3; the judged rows follow the rule (z* over the judged rows); the page reports
    scornet.mda-dependent."""
    rows = _rows(gallery, "scornet-mda")
    terms = {r["quantity"]: float(r["published_value"]) for r in rows
             if r["part"] == "dependent: terms"}
    assert len(terms) == 2 * 3 * 3
    oracle = {}
    for rho in (0.5, 0.8):
        for j in range(3):
            mc = _decomposition_by_monte_carlo(rho, j)
            for name in ("V[Y] ST", "V[Y] ST_mg", "MDA3"):
                value, se = mc[name]
                page = terms[f"ρ = {rho}, X{j + 1}: {name}"]
                assert abs(page - value) <= 5 * se + 1e-3, (rho, j, name, page, value, se)
            parts = sum(mc[name][0] for name in ("V[Y] ST", "V[Y] ST_mg", "MDA3"))
            assert abs(parts - mc["total"][0]) <= 5 * (mc["total"][1] + mc["MDA3"][1]) + 1e-3
            oracle[rho, f"X{j + 1}"] = mc
    dependent = [r for r in rows if r["part"] == "dependent"]
    assert len(dependent) == 2 * 2 * 3 * 3  # ρ, forest reading, method, variable (one n)
    judged = [r for r in dependent if r["verdict"] != "trend (not judged)"]
    z_star = NormalDist().inv_cdf(1 - 0.01 / (2 * len(judged)))
    for row in dependent:
        method, rho, variable = row["quantity"].split(", ")[:3]
        mc = oracle[float(rho.split("= ")[1]), variable]
        names = ("V[Y] ST", "MDA3") if method == "Ishwaran-Kogalur" else (
            "V[Y] ST", "V[Y] ST_mg", "MDA3")
        limit = sum(mc[name][0] for name in names)
        assert abs(float(row["published_value"]) - limit) <= 0.02, row
    for row in judged:
        gap = abs(float(row["ours"]) - float(row["published_value"]))
        assert row["verdict"] == ("deviates" if gap > z_star * float(row["ours_se"]) + 1e-9
                                  else "reproduced within Monte-Carlo error"), row
    results = json.loads((gallery / "scornet-mda.json").read_text())["results"]
    assert set(results) == {"scornet.mda-toy", "scornet.mda-dependent", "scornet.mda-limits"}
    if any(r["verdict"] == "deviates" for r in judged):
        assert results["scornet.mda-dependent"] == "deviates"
    assert (gallery / "scornet-mda-dependent.png").stat().st_size > 10_000


def test_rerun_reuses_every_stored_cell(gallery):
    """The bias page runs its grid in parts: a rerun must find every part in its store."""
    for name in ("scornet-mdi-bias",):
        store = gallery / "runs" / f"{name}-quick"
        created = cell_timestamps(store)
        assert created
        quick_gallery(gallery, [name])
        assert cell_timestamps(store) == created
