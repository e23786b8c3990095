"""The records exchanged between datasets, methods, the runner and the reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Literal

import numpy as np

from harness.core.errors import BadInputError

Task = Literal["classification", "regression"]
Scope = Literal["global", "local"]


def global_view(values: np.ndarray, scope: str,
                row_weights: np.ndarray | None = None) -> np.ndarray:
    """Per-feature summary: the values of a global method, mean_i |v_ij| for a local one.

    For local values of shape (n, p, n_classes) the absolute values are summed over classes
    first. This is the usual global reading of local importances (e.g. mean |SHAP|). With
    ``row_weights`` (the explained rows are the support of an explicit distribution) the
    mean is the distribution's: sum_i w_i |v_ij| / sum_i w_i.
    """
    values = np.asarray(values, dtype=float)
    if scope != "local":
        return values
    magnitude = np.abs(values)
    magnitude = magnitude.sum(axis=2) if magnitude.ndim == 3 else magnitude
    if row_weights is None:
        return magnitude.mean(axis=0)
    return np.average(magnitude, axis=0, weights=np.asarray(row_weights, dtype=float))


def standard_error_of_mean(samples: np.ndarray) -> np.ndarray | None:
    """Standard error of the mean over axis 0, ``std(ddof=1) / sqrt(m)`` for m samples
    (trees, rows), the ``std`` of a method that averages them; None for fewer than two."""
    samples = np.asarray(samples, dtype=float)
    if len(samples) < 2:
        return None
    return samples.std(axis=0, ddof=1) / np.sqrt(len(samples))


@dataclass
class TruthVector:
    """One exact population quantity per feature (e.g. Louppe Thm 1 in bits).

    ``values`` has shape (p,) for a global quantity and (n, p) for a local one (one row per
    row of the dataset). ``compares_to`` names the methods whose values are on the same scale,
    so that absolute errors are meaningful; rank comparisons apply to every method.
    """

    values: np.ndarray
    unit: str
    description: str
    compares_to: tuple[str, ...] = ()

    @property
    def scope(self) -> Scope:
        return "local" if np.ndim(self.values) == 2 else "global"


_BENARD_2022 = "Bénard, Da Veiga & Scornet 2022, Biometrika 109(4), 881-900"


def sage_population_truth(thm1_bits: np.ndarray) -> TruthVector:
    """Population SAGE values with cross-entropy loss, in nats, from Thm 1 in bits.

    With the conditional imputation and the Bayes model, v(S) = −H(Y | X_S) + const, whose
    Shapley values are those of I(Y; X_S): Louppe et al. (2013) Thm 1 (Sutera et al. 2021,
    Sec. 5; Covert, Lundberg, Lee 2020). sage's cross-entropy is in nats: bits × ln 2.
    """
    return TruthVector(
        np.asarray(thm1_bits, dtype=float) * math.log(2), unit="nats",
        description="Population SAGE value with cross-entropy loss = Louppe et al. (2013) "
                    "Thm 1 x ln 2 (Sutera et al. 2021, Sec. 5)",
        compares_to=("sage", "tree_sage"))


@dataclass
class GroundTruth:
    """What is known exactly about a dataset: the relevant set and named exact quantities.

    ``var_y`` is ``Var(Y)`` (noise included) when the quantities are normalised by it, so that
    reports can convert fractions of ``Var(Y)`` into squared units of Y and back.
    """

    relevant: np.ndarray  # bool, shape (p,)
    quantities: dict[str, TruthVector] = field(default_factory=dict)
    var_y: float | None = None

    @classmethod
    def from_sobol(
        cls,
        relevant: np.ndarray,
        first: np.ndarray,
        total: np.ndarray,
        *,
        var_y: float,
        shapley: np.ndarray | None = None,
        breiman_limit: np.ndarray | None = None,
        ik_limit: np.ndarray | None = None,
    ) -> GroundTruth:
        """Truth of a regression model with exact Sobol indices and permutation-MDA limits.

        Parameters
        ----------
        relevant : ndarray of bool, shape (p,)
        first, total : ndarrays of shape (p,)
            ``S_j = Var(E[Y|X_j]) / Var(Y)`` and ``ST_j = E[Var(m(X)|X_-j)] / Var(Y)``
            (Sobol 1993; ST_j is the target of Sobol-MDA, Benard et al. 2022).
        var_y : float
            ``Var(Y)``, noise included (> 0).
        shapley : ndarray of shape (p,), optional
            Shapley effects ``Sh_j / Var(Y)`` of the game ``v(U) = Var(E[m(X)|X_U])``
            (Owen 2014; Song, Nelson & Staum 2016); they sum to ``Var(m(X)) / Var(Y)``.
        breiman_limit : ndarray of shape (p,), optional
            ``E[(m(X) - m(X_pi_j))^2]`` in squared units of Y, where ``X_pi_j`` is X with
            component j replaced by an independent copy: the limit of the Breiman-Cutler and
            train/test MDA with squared-error loss, ``V[Y] ST_j + V[Y] ST_mg_j + MDA3_j``
            (Benard et al. 2022, MDA decomposition). Default ``2 var_y total``, the value for
            independent inputs (``ST_mg_j = ST_j``, ``MDA3_j = 0``) only: callers with
            dependent inputs must pass it.
        ik_limit : ndarray of shape (p,), optional
            ``V[Y] ST_j + MDA3_j`` with
            ``MDA3_j = E[(E[m(X)|X_-j] - E[m(X_pi_j)|X_-j])^2]``, the limit of the
            Ishwaran-Kogalur MDA (same reference). Default ``var_y total``, again for
            independent inputs only.

        Returns
        -------
        GroundTruth
            With quantities ``sobol_first``, ``sobol_total``, ``mda_bc_limit``,
            ``mda_ik_limit`` and, when ``shapley`` is given, ``shapley_effect``.
        """
        if not (isinstance(var_y, Real) and math.isfinite(var_y) and var_y > 0):
            raise BadInputError(f"var_y must be a finite float > 0. Got {var_y!r} instead.")
        total = np.asarray(total, dtype=float)
        fraction = "fraction of Var(Y)"
        squared = "squared units of Y"
        quantities = {
            "sobol_first": TruthVector(
                np.asarray(first, dtype=float), unit=fraction,
                description="First-order Sobol index Var(E[Y|X_j]) / Var(Y) (Sobol 1993)"),
            "sobol_total": TruthVector(
                total, unit=fraction,
                description="Total Sobol index E[Var(m(X)|X_-j)] / Var(Y) (Sobol 1993; "
                            "Benard et al. 2022)",
                compares_to=("sobol_mda",)),
        }
        if shapley is not None:
            quantities["shapley_effect"] = TruthVector(
                np.asarray(shapley, dtype=float), unit=fraction,
                description="Shapley effect of the game v(U) = Var(E[m(X)|X_U]), divided by "
                            "Var(Y) (Owen 2014; Song, Nelson & Staum 2016)",
                compares_to=("shaff",))
        quantities["mda_bc_limit"] = TruthVector(
            2.0 * var_y * total if breiman_limit is None
            else np.asarray(breiman_limit, dtype=float),
            unit=squared,
            description="E[(m(X) - m(X_pi_j))^2], X_pi_j = X with X_j replaced by an "
                        "independent copy: V[Y] ST_j + V[Y] ST_mg_j + MDA3_j, to which the "
                        "Breiman-Cutler and train/test MDA with squared loss converge "
                        f"({_BENARD_2022})",
            compares_to=("mda_bc", "mda_test"))
        quantities["mda_ik_limit"] = TruthVector(
            var_y * total if ik_limit is None else np.asarray(ik_limit, dtype=float),
            unit=squared,
            description="V[Y] ST_j + MDA3_j, MDA3_j = E[(E[m(X)|X_-j] - "
                        "E[m(X_pi_j)|X_-j])^2], to which the Ishwaran-Kogalur MDA with squared "
                        f"loss converges ({_BENARD_2022})",
            compares_to=("mda_ik",))
        return cls(relevant=np.asarray(relevant, dtype=bool), quantities=quantities,
                   var_y=float(var_y))


@dataclass
class Dataset:
    """Features, target, task, names and (where known) the ground truth.

    ``sample_weight`` is set when the rows are the support of an explicit finite distribution
    (e.g. the 10 LED digits): the weights are their probabilities, and the model is trained and
    scored on all rows (``population=True``).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    task: Task
    feature_names: list[str]
    truth: GroundTruth | None = None
    params: dict[str, Any] = field(default_factory=dict)
    sample_weight: np.ndarray | None = None
    population: bool = False
    description: str = ""

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


@dataclass
class Importances:
    """What every method returns.

    Attributes
    ----------
    values : ndarray
        Shape (p,) for a global method, (n, p) for a local one, (n, p, n_classes) when a local
        method explains every class.
    scope : {"global", "local"}
    feature_names : list of str
    unit : str
        "bits", "gini", "variance", "class probability", ...
    explains : str
        What is decomposed: "impurity", "predicted-class probability", "class 2", ...
    std : ndarray or None
        Uncertainty of ``values`` where the method estimates one.
    base_values : ndarray or None
        For additive local decompositions, the value that the contributions add to
        (Saabas bias, TreeSHAP expected value), shape (n,) or (n, n_classes).
    sample_index : ndarray or None
        Rows of the given ``X`` that were explained (None: all rows, or a global method).
    row_weights : ndarray or None
        For a local method given weighted rows (``sample_weight`` not all equal: the support
        of an explicit distribution), the weights of the explained rows, which
        :meth:`global_view` averages with; None otherwise.
    time_explain : float
        Wall time of the method's ``explain`` alone, in seconds.
    method : str
        Stable repr of the configured method, e.g. ``treeshap[perturbation=interventional]``.
    """

    values: np.ndarray
    scope: Scope
    feature_names: list[str]
    unit: str
    explains: str
    std: np.ndarray | None = None
    base_values: np.ndarray | None = None
    sample_index: np.ndarray | None = None
    row_weights: np.ndarray | None = None
    time_explain: float = float("nan")
    method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=float)
        expected_ndim = {"global": (1,), "local": (2, 3)}[self.scope]
        if self.values.ndim not in expected_ndim:
            raise ValueError(
                f"A {self.scope} Importances needs values with {expected_ndim} dimensions; "
                f"got shape {self.values.shape}."
            )
        p = self.values.shape[0 if self.scope == "global" else 1]
        if len(self.feature_names) != p:
            raise ValueError(
                f"Importances has {p} features but {len(self.feature_names)} feature names."
            )

    def global_view(self) -> np.ndarray:
        """Per-feature summary; see :func:`global_view`."""
        return global_view(self.values, self.scope, self.row_weights)

    def to_frame(self):
        """Tidy per-feature table (global view) as a pandas DataFrame."""
        import pandas as pd

        frame = pd.DataFrame({"feature": self.feature_names, "value": self.global_view()})
        if self.std is not None and self.scope == "global":
            frame["std"] = self.std
        return frame
