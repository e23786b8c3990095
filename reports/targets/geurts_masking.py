"""``geurts-masking``: masking at K = 2, strongly relevant variables never masked, and the
bias of the plug-in mutual information (seed 004, part 2).

Three results of the slides (``harness/reports/targets/published.py``):

* "Non-totally randomized trees (K > 1, D = p)": I(X1; Y) = H(Y), I(X1; Y) ≈ I(X2; Y),
  I(X1; Y | X2) = ε, I(X2; Y | X1) = 0; at K = 1 both variables share the information, at
  K = 2 Imp(X1) = I(X1; Y) and Imp(X2) = 0 (X2 is masked), and adding an irrelevant X3 at
  K = 2 gives Imp(X2) > 0. The slides do not give the model; we use the simplest one that
  meets every condition: X1 a fair bit, Y = X1, X2 = X1 flipped with probability δ, so
  ε = H(X1 | X2) = h(δ) (the binary entropy). δ is not given: the page shows δ = 0.01 ... 0.2.
* "Strongly relevant features can not be masked (K > 1, D = p)": ∀K, X strongly relevant ⇒
  Imp_K(X) > 0; checked exactly for every K on the masking model, the XOR example of the
  slides, LED and random strictly positive binary tables, under the slides' multiway trees
  (``rule="paper"``, the theorem's setting) and scikit-learn's splitter.
* "Non asymptotic setting: finite number of samples": I(Y; X) = 0 ⇒ E{Î(Y; X)} =
  (|Y| − 1)(|X| − 1) / (2 N_t log 2), the plug-in estimator's bias in bits (natural log of 2;
  Miller 1955). It is the first-order term of an expansion in 1/N_t; we read the formula as
  that term and estimate it from simulations over N with a fit a/N + b/N² (Comparison of a
  with the formula's coefficient, standard errors from the replicates).

Exact values come from :func:`harness.oracle.exact_mdi.expected_mdi`; forests are
scikit-learn's ``ExtraTreesClassifier(criterion="entropy", bootstrap=False)`` fitted on the
support rows with their probabilities as sample weights (per-tree MDI, mean ± s.e.).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import gammaln
from sklearn.ensemble import ExtraTreesClassifier

from harness.datasets.led import led_population
from harness.datasets.xor import xor_population
from harness.oracle.exact_mdi import expected_mdi
from harness.oracle.finite_table import DiscreteDistribution
from harness.reports.base import save_figure, subplots
from harness.reports.targets.base import Target, TargetContext, TargetPage
from harness.reports.targets.verdict import (
    Comparison,
    claim,
    judge,
    page_verdict,
    worst_line,
)

DELTAS = (0.01, 0.05, 0.1, 0.2)
#: an exact formula has no printing tolerance: compare it to 12 decimals
EXACT_DECIMALS = 12
#: positive means larger than this (bits): exact values of a zero importance are ~1e-16
POSITIVE = 1e-12
N_TREES = {True: 300, False: 3000}
MI_REPLICATES = {True: 20_000, False: 400_000}
MI_SIZES = (50, 100, 200, 500, 1000, 2000, 5000)
#: (|X|, |Y|, P(X), P(Y)): independent X and Y; None is uniform
MI_CASES = ((2, 2, None, None), (3, 2, (0.5, 0.3, 0.2), (0.7, 0.3)), (3, 3, None, None),
            (5, 4, None, None))
#: the fit a/N + b/N² uses the sizes with at least this many rows per cell on average,
#: fixed before any run: the expansion in 1/N needs every cell well populated
MIN_PER_CELL = 10


def binary_entropy(delta: float) -> float:
    return 0.0 if delta in (0.0, 1.0) else float(
        -delta * math.log2(delta) - (1 - delta) * math.log2(1 - delta))


def masking_population(delta: float, n_irrelevant: int = 0):
    """Rows (X1, X2[, X3...]), Y = X1, X2 = X1 flipped with probability δ, extra fair bits."""
    X, prob = [], []
    for x1, x2, *rest in itertools.product((0, 1), repeat=2 + n_irrelevant):
        X.append((x1, x2, *rest))
        prob.append((delta if x1 != x2 else 1 - delta) / 2 / 2**n_irrelevant)
    X = np.asarray(X, dtype=np.int64)
    return X, X[:, 0].copy(), np.asarray(prob)


def forest_mdi(X, y, prob, max_features: int, n_trees: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over trees of the per-tree unnormalised MDI (bits)."""
    keep = prob > 0
    forest = ExtraTreesClassifier(n_estimators=n_trees, criterion="entropy",
                                  max_features=max_features, bootstrap=False,
                                  random_state=seed)
    forest.fit(X[keep].astype(float), y[keep], sample_weight=prob[keep])
    per_tree = np.array([tree.tree_.compute_feature_importances(normalize=False)
                         for tree in forest.estimators_])
    return per_tree.mean(axis=0), per_tree.std(axis=0, ddof=1) / np.sqrt(n_trees)


def strongly_relevant(X, y, prob) -> np.ndarray:
    """X_m strongly relevant: I(X_m; Y | V \\ {X_m}) > 0 (Kohavi and John 1997)."""
    population = DiscreteDistribution(X, y, prob)
    p = X.shape[1]
    return np.array([population.conditional_mutual_information(
        m, [j for j in range(p) if j != m]) > POSITIVE for m in range(p)])


def random_positive_tables(n_tables: int, p: int = 4, seed: int = 0):
    """Strictly positive distributions over p binary inputs and a binary Y: random P(x),
    P(Y = 1 | x) a random function of x with noise (drawn, then fixed)."""
    rng = np.random.default_rng(seed)
    X = ((np.arange(2**p)[:, None] >> np.arange(p)) & 1).astype(np.int64)
    for _ in range(n_tables):
        px = rng.dirichlet(np.ones(2**p))
        py1 = np.clip(rng.integers(0, 2, 2**p) + rng.normal(0, 0.15, 2**p), 0.05, 0.95)
        yield (np.vstack([X, X]), np.repeat([0, 1], 2**p),
               np.concatenate([px * (1 - py1), px * py1]))


def plugin_mi(counts: np.ndarray) -> np.ndarray:
    """Plug-in mutual information (bits) of each contingency table in ``counts`` (r, a, b)."""
    n = counts.sum(axis=(1, 2), keepdims=True)
    joint = counts / n
    px = joint.sum(axis=2, keepdims=True)
    py = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (px * py)), 0.0)
    return terms.sum(axis=(1, 2))


def expected_plugin_mi_exact(n: int, px, py) -> float:
    """E[Î] for N = n independent draws, exactly, by enumerating every contingency table
    (multinomial law); practical for small tables and n (the tests' oracle)."""
    cells = np.outer(px, py).ravel()
    m = len(cells)
    # every composition of n into m parts, from the positions of m - 1 bars among n + m - 1
    bars = np.array(list(itertools.combinations(range(n + m - 1), m - 1))).reshape(-1, m - 1)
    bounds = np.column_stack([np.full(len(bars), -1), bars, np.full(len(bars), n + m - 1)])
    counts = np.diff(bounds, axis=1) - 1
    with np.errstate(divide="ignore"):
        log_cells = np.where(cells > 0, np.log(cells), -np.inf)
    log_pmf = (gammaln(n + 1) - gammaln(counts + 1).sum(axis=1)
               + np.where(counts > 0, counts * log_cells, 0.0).sum(axis=1))
    values = plugin_mi(counts.reshape(-1, len(px), len(py)))
    return float(np.sum(np.exp(log_pmf) * values))


def mi_bias_table(replicates: int, seed: int = 20) -> pd.DataFrame:
    """Simulated mean plug-in MI (independent X, Y) with its s.e., and the formula."""
    rng = np.random.default_rng(seed)
    rows = []
    for nx, ny, px, py in MI_CASES:
        px = np.full(nx, 1 / nx) if px is None else np.asarray(px)
        py = np.full(ny, 1 / ny) if py is None else np.asarray(py)
        cells = np.outer(px, py).ravel()
        for n in MI_SIZES:
            counts = rng.multinomial(n, cells, size=replicates).reshape(-1, nx, ny)
            values = plugin_mi(counts)
            rows.append({"|X|": nx, "|Y|": ny, "marginals": "uniform" if len(set(px)) == 1
                         and len(set(py)) == 1 else "non-uniform", "N": n,
                         "simulated E[Î]": values.mean(),
                         "se": values.std(ddof=1) / np.sqrt(replicates),
                         "formula": (nx - 1) * (ny - 1) / (2 * n * math.log(2))})
    table = pd.DataFrame(rows)
    table["simulated / formula"] = table["simulated E[Î]"] / table["formula"]
    return table


def first_order_fit(part: pd.DataFrame) -> tuple[float, float]:
    """Weighted least squares of E[Î](N) = a/N + b/N² over the sizes with at least
    ``MIN_PER_CELL`` rows per cell; returns a and its standard error."""
    cells = int(part["|X|"].iloc[0] * part["|Y|"].iloc[0])
    part = part[part["N"] >= MIN_PER_CELL * cells]
    n = part["N"].to_numpy(float)
    design = np.column_stack([1 / n, 1 / n**2]) / part["se"].to_numpy()[:, None]
    target = part["simulated E[Î]"].to_numpy() / part["se"].to_numpy()
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    covariance = np.linalg.inv(design.T @ design)
    return float(coef[0]), float(np.sqrt(covariance[0, 0]))


class GeurtsMasking(Target):
    """Masking at K = 2, strongly relevant variables never masked, plug-in MI bias (seed 004).
    See the module docstring."""

    name = "geurts-masking"
    title = "Masking (K = 2), strong relevance and the bias of the empirical mutual information"
    source = ("seed 004 (Geurts, slides), 'Non-totally randomized trees (K > 1, D = p)', "
              "'Strongly relevant features can not be masked', 'Non asymptotic setting: "
              "finite number of samples'")

    def run(self, context: TargetContext) -> TargetPage:
        quick = context.quick
        masking = self._masking(N_TREES[quick])
        strong = self._strong()
        mi = mi_bias_table(MI_REPLICATES[quick])
        fits = []
        for (nx, ny, marginals), part in mi.groupby(["|X|", "|Y|", "marginals"], sort=False):
            a, se = first_order_fit(part)
            fits.append(Comparison(f"N·E[Î] → (|Y|−1)(|X|−1)/(2 ln 2), |X| = {nx}, |Y| = {ny}, "
                                   f"{marginals}", (nx - 1) * (ny - 1) / (2 * math.log(2)),
                                   a, EXACT_DECIMALS, ours_se=se))
        judged_mi = judge(fits)

        k2 = masking[(masking["K"] == 2) & (masking["p"] == 2)]
        k2x3 = masking[(masking["K"] == 2) & (masking["p"] == 3)]
        masked = bool((k2["exact Imp(X2)"].abs() <= POSITIVE).all()
                      and np.allclose(k2["exact Imp(X1)"], 1.0, atol=1e-12)
                      and (k2["forest Imp(X2)"] == 0).all())
        unmasked = bool((k2x3["exact Imp(X2)"] > POSITIVE).all()
                        and (k2x3["forest Imp(X2)"] - 2.58 * k2x3["forest se(X2)"] > 0).all())
        paper = strong[strong["rule"] == "paper"]
        never = bool((paper["min Imp of a strongly relevant"] > POSITIVE).all())
        checks = {
            "K = 2: Imp(X1) = I(X1; Y) and Imp(X2) = 0 (exact, both rules, every δ; forests)":
                masked,
            "K = 2 with an irrelevant X3: Imp(X2) > 0 (exact, both rules; forests, 2.58 s.e.)":
                unmasked,
            "∀K: strongly relevant ⇒ Imp_K > 0 (exact, slides' multiway trees, every model)":
                never,
        }
        results = {"geurts.masking": claim(all(checks.values())),
                   "geurts.mi-bias": page_verdict(judged_mi["verdict"])}
        claims_table = pd.DataFrame(
            [{"label": what, "published": "holds", "ours": "holds" if ok else "does not hold",
              "verdict": claim(ok)} for what, ok in checks.items()])
        table = pd.concat([claims_table, judged_mi[["label", "published", "ours",
                                                    "standard_error", "tolerance",
                                                    "verdict"]]], ignore_index=True)
        figure = self._mi_figure(mi, context.gallery)
        notes = self._notes(masking, strong, mi)
        return TargetPage(
            table=table, figures=[figure], notes=notes, results=results,
            verdict=page_verdict(results.values()), worst=worst_line(judged_mi, "bits"),
            scale=(f"{'quick: ' if quick else ''}{N_TREES[quick]} trees per forest, "
                   f"{MI_REPLICATES[quick]} samples per N for the MI bias"),
            assumptions=[
                "masking model (not given by the slides): Y = X1 a fair bit, X2 = X1 flipped "
                "with probability δ (ε = h(δ)); δ ∈ {0.01, 0.05, 0.1, 0.2} shown, the claims "
                "hold for every δ",
                "strong relevance checked on: the masking model (p = 2 and with an irrelevant "
                "X3), the slides' XOR table (ε = 0.05), LED (7 segments, noise-free) and 5 "
                "random strictly positive tables (4 binary inputs)",
                "the theorem is judged under the slides' multiway trees (rule 'paper'); "
                "scikit-learn's splitter is shown beside it",
                "MI bias: the formula read as the first-order term in 1/N (Miller 1955); "
                "'log 2' the natural log (bits); a/N + b/N² fitted where N ≥ "
                f"{MIN_PER_CELL} rows per cell",
            ])

    @staticmethod
    def _masking(n_trees: int) -> pd.DataFrame:
        rows = []
        for delta in DELTAS:
            eps = binary_entropy(delta)
            for n_irrelevant, k in ((0, 1), (0, 2), (1, 2)):
                X, y, prob = masking_population(delta, n_irrelevant)
                forest, se = forest_mdi(X, y, prob, k, n_trees, seed=int(1000 * delta) + k)
                for rule in ("paper", "sklearn"):
                    exact = expected_mdi(X, y, prob, max_features=k, rule=rule)
                    rows.append({"δ": delta, "ε = h(δ)": eps, "p": 2 + n_irrelevant, "K": k,
                                 "rule": rule, "exact Imp(X1)": exact[0],
                                 "exact Imp(X2)": exact[1], "forest Imp(X1)": forest[0],
                                 "forest Imp(X2)": forest[1], "forest se(X2)": se[1]})
        return pd.DataFrame(rows)

    @staticmethod
    def _strong() -> pd.DataFrame:
        models = {"masking δ = 0.1": masking_population(0.1),
                  "masking δ = 0.1 + irrelevant X3": masking_population(0.1, 1),
                  "XOR ε = 0.05": xor_population(0.05),
                  "LED": led_population(0.0)}
        for i, table in enumerate(random_positive_tables(5)):
            models[f"random positive table {i}"] = table
        rows = []
        for name, (X, y, prob) in models.items():
            strong = strongly_relevant(X, y, prob)
            for rule in ("paper", "sklearn"):
                for k in range(1, X.shape[1] + 1):
                    imp = expected_mdi(X, y, prob, max_features=k, rule=rule)
                    rows.append({"model": name, "rule": rule, "K": k,
                                 "strongly relevant": int(strong.sum()),
                                 "min Imp of a strongly relevant":
                                     float(imp[strong].min()) if strong.any() else np.nan,
                                 "weakly relevant at 0": int(np.sum(~strong & (imp <= POSITIVE)))})
        return pd.DataFrame(rows)

    @staticmethod
    def _notes(masking: pd.DataFrame, strong: pd.DataFrame, mi: pd.DataFrame) -> list[str]:
        k1 = masking[(masking["K"] == 1) & (masking["rule"] == "paper")]
        k2x3 = masking[(masking["K"] == 2) & (masking["p"] == 3)]
        notes = [
            "Erratum (slides, 'Non-totally randomized trees'): at K = 1 with p = 2, Thm 1 gives "
            "Imp(X1) = ½ I(X1; Y) + ½ I(X1; Y | X2) = ½ H(Y) + ½ ε, not ½ I(X1; Y) + ε; and "
            "the second '≈ ½ I(X2; Y)' is Imp(X2), printed Imp(X1). Exact K = 1 values: "
            + "; ".join(f"δ={row['δ']}: Imp(X1) = {row['exact Imp(X1)']:.4f} = ½ + ½·"
                        f"{row['ε = h(δ)']:.4f}, Imp(X2) = {row['exact Imp(X2)']:.4f}"
                        for _, row in k1.iterrows()) + ".",
            "K = 2 with an irrelevant X3: Imp(X2) = (1 − h(δ))/3 exactly (the root draws "
            "{X2, X3} with probability 1/3 and splits on X2): "
            + "; ".join(f"δ={row['δ']}: exact {row['exact Imp(X2)']:.4f} (both rules), "
                        f"scikit-learn forest {row['forest Imp(X2)']:.4f} ± "
                        f"{row['forest se(X2)']:.4f}"
                        for _, row in k2x3[k2x3["rule"] == "sklearn"].iterrows()) + ".",
            "Strongly relevant never masked: smallest exact Imp_K of a strongly relevant "
            "variable over every K, per model and rule: "
            + "; ".join(f"{model} ({rule}): {part['min Imp of a strongly relevant'].min():.4g}"
                        for (model, rule), part in strong.groupby(["model", "rule"],
                                                                  sort=False)) + ".",
            "Weakly relevant variables can be masked: cases (model, rule, K) with a weakly "
            "relevant variable at exactly 0: "
            + str(int((strong["weakly relevant at 0"] > 0).sum())) + ".",
            "MI bias by N (simulated E[Î] / formula): " + "; ".join(
                f"|X|={nx},|Y|={ny} {marg}: " + ", ".join(
                    f"N={row['N']}: {row['simulated / formula']:.3f}"
                    for _, row in part.iterrows())
                for (nx, ny, marg), part in mi.groupby(["|X|", "|Y|", "marginals"],
                                                       sort=False))
            + ". At finite N the formula is the first-order term: the ratio tends to 1 as N "
            "grows (the second-order term is positive: the formula underestimates the bias "
            "of small nodes).",
        ]
        return notes

    def _mi_figure(self, mi: pd.DataFrame, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        fig, ax = subplots(figsize=(6.5, 4))
        for (nx, ny, marg), part in mi.groupby(["|X|", "|Y|", "marginals"], sort=False):
            line = ax.errorbar(part["N"], part["simulated E[Î]"] * part["N"],
                               yerr=2 * part["se"] * part["N"], fmt="o", ms=4,
                               label=f"|X| = {nx}, |Y| = {ny}, {marg}")
            ax.axhline((nx - 1) * (ny - 1) / (2 * math.log(2)), color=line[0].get_color(),
                       ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("N (rows in the node)", fontsize=9)
        ax.set_ylabel("N · E[Î(Y; X)] (bits), ± 2 s.e.", fontsize=9)
        ax.set_title("dashed: the slides' formula × N", fontsize=9)
        ax.tick_params(labelsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{self.name}.png"
        save_figure(fig, path)
        return path
