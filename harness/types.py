"""The records exchanged between datasets, methods, the runner and the reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Task = Literal["classification", "regression"]
Scope = Literal["global", "local"]


def global_view(values: np.ndarray, scope: str) -> np.ndarray:
    """Per-feature summary: the values of a global method, mean_i |v_ij| for a local one.

    For local values of shape (n, p, n_classes) the absolute values are summed over classes
    first. This is the usual global reading of local importances (e.g. mean |SHAP|).
    """
    values = np.asarray(values, dtype=float)
    if scope != "local":
        return values
    magnitude = np.abs(values)
    return (magnitude.sum(axis=2) if magnitude.ndim == 3 else magnitude).mean(axis=0)


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


@dataclass
class GroundTruth:
    """What is known exactly about a dataset: the relevant set and named exact quantities."""

    relevant: np.ndarray  # bool, shape (p,)
    quantities: dict[str, TruthVector] = field(default_factory=dict)

    @classmethod
    def from_sobol(cls, relevant: np.ndarray, first: np.ndarray, total: np.ndarray
                   ) -> GroundTruth:
        """Truth of a regression model with exact first-order and total Sobol indices.

        Both are fractions of Var(Y) (noise included): S_j = Var(E[Y|X_j]) / Var(Y) and
        ST_j = E[Var(m(X)|X_-j)] / Var(Y) (Sobol 1993; Bénard et al. 2022, the target of
        Sobol-MDA).
        """
        unit = "fraction of Var(Y)"
        return cls(relevant=np.asarray(relevant, dtype=bool), quantities={
            "sobol_first": TruthVector(
                np.asarray(first, dtype=float), unit=unit,
                description="First-order Sobol index Var(E[Y|X_j]) / Var(Y) (Sobol 1993)"),
            "sobol_total": TruthVector(
                np.asarray(total, dtype=float), unit=unit,
                description="Total Sobol index E[Var(m(X)|X_-j)] / Var(Y) (Sobol 1993; "
                            "Benard et al. 2022)",
                compares_to=("sobol_mda",)),
        })


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
        return global_view(self.values, self.scope)

    def to_frame(self):
        """Tidy per-feature table (global view) as a pandas DataFrame."""
        import pandas as pd

        frame = pd.DataFrame({"feature": self.feature_names, "value": self.global_view()})
        if self.std is not None and self.scope == "global":
            frame["std"] = self.std
        return frame
