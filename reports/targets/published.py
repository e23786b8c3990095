"""Every published result of the five sources, and the gallery page that reproduces it.

This list is written from the sources (``../shared/seeds``), not from the pages: the index
(``reports/gallery/index.md``) prints one row per entry with the verdict its page gave, so a
result without a page, or a page that forgot one of its results, shows as such instead of being
silently absent (a test checks that every entry names a registered target and that every page
reports a verdict for each of its entries).
"""

from __future__ import annotations

from dataclasses import dataclass

#: seed file -> short citation
SOURCES = {
    "000": "Louppe, Wehenkel, Sutera, Geurts, NeurIPS 2013",
    "001": "Louppe, PhD thesis, ch. 'Variable importances'",
    "002": "Scornet, 'Explainability via tree-based methods' (slides, 2025)",
    "003": "Sutera, Louppe, Huynh-Thu, Wehenkel, Geurts, NeurIPS 2021",
    "004": "Geurts, 'Random forests variable importances' (slides, 2016)",
}


@dataclass(frozen=True)
class PublishedResult:
    """One published result: where it is, what it says, which target reproduces it."""

    key: str
    seed: str
    where: str
    what: str
    target: str


PUBLISHED = (
    # --- Louppe et al. 2013 (seed 000) and the thesis chapter (seed 001) ---
    PublishedResult("louppe.led-thm1", "000", "LED table, Thm 1 column",
                    "MDI of totally randomised trees on LED (Thm 1), 7 values", "louppe2013-led"),
    PublishedResult("louppe.led-k", "000", "LED table, K = 1..7 columns",
                    "MDI of non-totally randomised trees, 49 values", "louppe2013-led"),
    PublishedResult("louppe.led-splitter", "000", "LED table, K ≥ 2 columns",
                    "the K ≥ 2 columns grown under the paper's rule (K drawn among the variables "
                    "unused on the branch), beside scikit-learn's splitter", "louppe2013-led"),
    PublishedResult("louppe.delta-i", "000", "'Variable importances in trees', worked example",
                    "Δi = 0.25 for the split of the example", "louppe2013-theorems"),
    PublishedResult("louppe.thm1-branches", "000", "Thm 1, proof sketch (iii)",
                    "at K = 1 a branch B of size k has probability 1/C(p,k) and X_m is tested "
                    "at the end of 1/(p−k) of them (third level of the decomposition, term by "
                    "term)", "louppe2013-theorems"),
    PublishedResult("louppe.thm2", "000", "Thm 2",
                    "the MDI of all variables sums to I(X1..Xp; Y)", "louppe2013-theorems"),
    PublishedResult("louppe.thm3", "000", "Thm 3",
                    "an irrelevant variable gets exactly 0", "louppe2013-theorems"),
    PublishedResult("louppe.thm5", "000", "Thm 5",
                    "adding irrelevant variables leaves the relevant ones unchanged (LED + 17 "
                    "irrelevant bits, K = 1; exact and by forests)", "louppe2013-theorems"),
    PublishedResult("louppe.degrees", "000", "decomposition by interaction degree",
                    "importances split by the degree of the conditioning set, K = 1 against "
                    "K = 7", "louppe2013-theorems"),
    PublishedResult("louppe.degree-bound", "001", "Sec. 'Theoretical study', bound on each "
                    "degree's term", "each of the p degree terms of Eq. 2 is at most H(Y)/p "
                    "(C(p−1,k)/(C(p,k)(p−k)) = 1/p)", "louppe2013-theorems"),
    PublishedResult("louppe.rf-masking", "000", "'Decomposition', last paragraph",
                    "Theorems 1, 3 and 5 do not apply for Random Forests and variants (K > 1: "
                    "masking)", "louppe2013-theorems"),
    # --- Sutera et al. 2021 (seed 003) ---
    PublishedResult("sutera.table1", "003", "Example 1 / Table 1",
                    "local MDI of the two-variable example (0.091, 0.269, 0.002, 0.180 and "
                    "0.002, 0.243, 0.016, 0.258) and its K = 2 violation of strong monotonicity",
                    "sutera2021-examples"),
    PublishedResult("sutera.table2", "003", "Example 2 / Table 2",
                    "the local MDI value −0.19 of Example 2", "sutera2021-examples"),
    PublishedResult("sutera.eq9", "003", "Eq. 9",
                    "local MDI averaged over the learning set equals global MDI (per tree, "
                    "in-bag counts as weights for bootstrap trees), on every scikit-learn "
                    "forest of the gallery", "sutera2021-examples"),
    PublishedResult("sutera.appendix-f", "003", "Appendix F",
                    "local MDI for regression (variance impurity): its properties",
                    "sutera2021-examples"),
    PublishedResult("sutera.shapley", "003", "Thm 1 (Eq. 7), Thm 2 (Eq. 10), Eq. 13",
                    "global and local MDI of totally randomized trees are the Shapley values of "
                    "I(Y; S) and of v_loc(S; x) = H(Y) − H(Y | S = x_S); efficiency (Eqs. 5, "
                    "12)", "sutera2021-examples"),
    PublishedResult("sutera.local-irrelevance", "003", "Thms 3 and 4",
                    "a variable locally irrelevant at x gets Imp_inf(X_m, x) = 0; irrelevant "
                    "iff locally irrelevant at every x", "sutera2021-examples"),
    PublishedResult("sutera.table3", "003", "Table 3",
                    "the six classification data sets: numbers of samples and features",
                    "sutera2021-table4"),
    PublishedResult("sutera.fig1", "003", "Fig. 1",
                    "global MDI and SAGE on LED for K = 1..7", "sutera2021-fig1"),
    PublishedResult("sutera.fig2", "003", "Fig. 2",
                    "mean correlations between local MDI, Saabas and TreeSHAP against K",
                    "sutera2021-fig2"),
    PublishedResult("sutera.fig3", "003", "Fig. 3",
                    "local importances of drawn samples, LED and digits", "sutera2021-fig3"),
    PublishedResult("sutera.fig4", "003", "Fig. 4 (Appendix D)",
                    "SAGE (mse) and mean |TreeSHAP| (interventional, path-dependent) on LED for "
                    "K = 1..7 reflect the masking effect of K like global MDI",
                    "sutera2021-fig1"),
    PublishedResult("sutera.table4", "003", "Table 4",
                    "mean Pearson and Spearman correlations between the local measures, "
                    "5 data sets", "sutera2021-table4"),
    PublishedResult("sutera.fig7", "003", "Fig. 7",
                    "the correlations of Table 4 by sample, and the claims of Appendix E.2 on it "
                    "(> 90 % of rows >= 0.75 in four data sets, > 80 % in two)",
                    "sutera2021-table4"),
    # --- Scornet slides (seed 002) ---
    PublishedResult("scornet.mdi-lemma-alpha", "002", "MDI lemma (α²/16)",
                    "MDI of the first lemma's model equals α²/16", "scornet-mdi-lemmas"),
    PublishedResult("scornet.mdi-lemma-beta", "002", "MDI lemma (1/3 − 1/3·(1/4)^β)",
                    "MDI of the second lemma's model", "scornet-mdi-lemmas"),
    PublishedResult("scornet.mdi-bias", "002", "MDI bias of fully grown trees",
                    "fully grown trees are biased, early-stopped trees are not",
                    "scornet-mdi-bias"),
    PublishedResult("scornet.sigma12", "002", "σ² = 12 ranking figure",
                    "ranking accuracy of MDI, fully grown against early-stopped, σ² = 12",
                    "scornet-mdi-bias"),
    PublishedResult("scornet.mda-toy", "002", "MDA toy example (2.7)",
                    "the MDA variants on the toy example", "scornet-mda"),
    PublishedResult("scornet.mda-dependent", "002", "MDA decomposition proposition (dependent "
                    "inputs)",
                    "Train-Test and Breiman-Cutler MDA → V[Y]·ST + V[Y]·ST_mg + MDA_3, "
                    "Ishwaran-Kogalur MDA → V[Y]·ST + MDA_3 (Bénard et al. 2022a), and the MDA "
                    "inflated by MDA_3 for dependent inputs", "scornet-mda"),
    PublishedResult("scornet.mda-limits", "002", "MDA limits corollary",
                    "limits of Train-Test, Breiman-Cutler and Ishwaran-Kogalur MDA",
                    "scornet-mda"),
    PublishedResult("scornet.sobol-mda-table", "002", "Sobol-MDA p = 200 table",
                    "top-10 values of BC-MDA, IK-MDA and Sobol-MDA", "benard2022-sobol-mda"),
    PublishedResult("scornet.shaff-linear", "002", "SHAFF linear-case figure",
                    "SHAFF Shapley effects against the theoretical values (red crosses)",
                    "benard2022-shaff"),
    # --- Geurts slides (seed 004) ---
    PublishedResult("geurts.xor", "004", "XOR example",
                    "Imp(X1) = Imp(X2) = 0.262 < Imp(X3) = 0.476", "geurts-xor"),
    PublishedResult("geurts.xor-alpha", "004", "strongly relevant not masked, XOR diagram",
                    "Imp(X1) = Imp(X2) < Imp(X3) when α < 1/2, I(Y; X3) = 1 − α",
                    "geurts-xor"),
    PublishedResult("geurts.masking", "004", "K = 2 masking example",
                    "masking at K = 2; strongly relevant variables are never masked",
                    "geurts-masking"),
    PublishedResult("geurts.mi-bias", "004", "mutual-information bias formula",
                    "the bias of the empirical mutual information", "geurts-masking"),
    PublishedResult("geurts.rs-arithmetic", "004", "random-subspace arithmetic",
                    "2.5·10⁻⁵, T = 40 812, 95 % of trees without a relevant feature",
                    "geurts2016-srs"),
    PublishedResult("geurts.rs-srs", "004", "RS against SRS (Madelon-like data)",
                    "sequential random subspace beats random subspace", "geurts2016-srs"),
    PublishedResult("geurts.srs-convergence", "004",
                    "SRS convergence in specific scenarios (exact computations)",
                    "mean iterations to find k chained / clique variables: RS ≃ (p/q)^k and "
                    "k(ln k + 1)(p/q)^k, SRS ≃ k p/q and (p/q)^k", "geurts2016-srs"),
    PublishedResult("geurts.pruning", "004", "impact of pruning (K = 1, D < p)",
                    "depth-D importances are the first D terms of the decomposition",
                    "geurts-xor"),
    PublishedResult("geurts.mixed", "004", "mixed simulations",
                    "the mixed simulations of the random-subspace slides", "geurts2016-srs"),
)


def by_target() -> dict[str, list[PublishedResult]]:
    """The published results grouped by the target that reproduces them."""
    grouped: dict[str, list[PublishedResult]] = {}
    for result in PUBLISHED:
        grouped.setdefault(result.target, []).append(result)
    return grouped
