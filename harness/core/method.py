"""The Method contract: one small class per importance measure.

A method declares its ``name``, ``scope``, ``family``, the tasks it supports, the optional
packages it needs and its parameters (with defaults and constraints). It implements
``_explain(model, data, rng)`` and may implement ``skip(model, data)``. The base class
validates parameters, times ``_explain`` alone and stamps the result.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harness.core.params import Param, validate_params
from harness.core.spec import format_spec
from harness.core.types import Importances, Scope, Task


@dataclass
class ExplainData:
    """The rows a method explains (and, for methods that need them, the targets).

    Built by :func:`harness.run.inputs.validate_explain_inputs`, so a method may rely on:
    ``X`` is float64 of shape (n, p), n >= 1, finite except for NaN cells, which appear only
    when the model routes missing values (its forest view's ``routes_missing``: every kernel
    then routes a NaN as the model does; a method that cannot must skip), its columns in the
    order the model was fitted on, and ``feature_names`` names them in that order (checked
    against the model's names wherever both sides have names); ``y`` is None (for methods
    that do not need it), n finite float64 values for a regressor, or n labels among
    ``model.classes_`` (in its dtype) for a classifier; ``sample_weight`` is None or n
    finite, non-negative float64 values with a positive sum. ``n_outputs`` is the model's
    number of outputs (k > 1 for a multi-output regressor, whose ``y`` is then (n, k)).
    """

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str]
    task: Task
    sample_weight: np.ndarray | None = None  # probabilities of an explicit distribution
    #: Optional callback that sampling methods call with their estimated progress in [0, 1].
    progress: Callable[[float], None] | None = None
    n_outputs: int = 1


#: What a method may need from a model beyond its splits and leaf values, and which models
#: have it (the forest view's ``capabilities``). A method lists its needs in ``model_needs``;
#: the explain protocol skips, with this text as the reason, a model that lacks one.
MODEL_CAPABILITIES: dict[str, str] = {
    "node_impurity": "node impurities i(t) (scikit-learn trees, forests and "
                     "GradientBoosting; boosting libraries store split gains only)",
    "inbag": "each tree's in-bag rows, so that out-of-bag rows exist (scikit-learn forests "
             "grown with bootstrap=True; not single trees, boosting, or LightGBM's bagging, "
             "which keeps none)",
}


class Method:
    """Base class of importance methods (see DESIGN.md, "Contracts")."""

    name: ClassVar[str] = ""
    scope: ClassVar[Scope] = "global"
    family: ClassVar[str] = ""
    tasks: ClassVar[tuple[str, ...]] = ("classification", "regression")
    requires: ClassVar[tuple[str, ...]] = ()
    #: Keys of :data:`MODEL_CAPABILITIES` the method needs from the model.
    model_needs: ClassVar[tuple[str, ...]] = ()
    needs_y: ClassVar[bool] = False
    #: Whether the method explains multi-output regressors exactly (else it skips them).
    multi_output: ClassVar[bool] = False
    #: Which rows the runner gives the method: None for the run's ``explain_on`` rows (capped
    #: by ``max_explain``), "train" for every training row in fit order (the OOB methods),
    #: "test" for every held-out row.
    rows: ClassVar[str | None] = None
    parameters: ClassVar[dict[str, Param]] = {}
    summary: ClassVar[str] = ""
    #: pip names of ``requires`` entries whose import name differs (sage: sage-importance)
    distributions: ClassVar[dict[str, str]] = {}
    #: What the values are in and what they explain, for an ``_explain`` that returns a plain
    #: array (the base class then builds the :class:`Importances`).
    unit: ClassVar[str] = ""
    explains: ClassVar[str] = ""
    #: The range (low, high; None: unbounded) of the population quantity the method estimates,
    #: in the method's own units: e.g. (0, 1) for a total Sobol index or a Shapley effect
    #: normalised by Var(Y). Estimates outside it are noise or bias, and the report flags them.
    value_range: ClassVar[tuple[float | None, float | None]] = (None, None)
    #: Raised by one whenever a change makes the method compute something else for the same
    #: parameters: it enters the cell key (:attr:`harness.run.cells.Cell.key`), so a store
    #: never hands back a result the earlier code computed as if it were the new one's.
    version: ClassVar[int] = 1
    #: The stated order of the method's cost, machine-readable: the exponent k of each size
    #: axis in time ∝ size^k (``n`` rows read, ``p`` features, ``trees`` in the forest,
    #: ``depth`` of its trees), the others at ``python -m harness bench --scaling``'s base
    #: point and sample counts fixed; the order of the term that dominates the growth (the
    #: bench fits it above a noise floor); None where the cost is no power of that size
    #: (e.g. 2^depth leaves). The class docstring's "Complexity" paragraph gives the full
    #: order and its source.
    complexity: ClassVar[dict[str, float | None]] = {}

    def __init__(self, **params: Any) -> None:
        self.params = validate_params(self.name, self.parameters, params)

    def __repr__(self) -> str:
        changed = {
            k: v for k, v in self.params.items() if v != self.parameters[k].default
        }
        return format_spec(self.name, changed)

    @classmethod
    def missing_packages(cls) -> list[str]:
        """Optional packages this method needs that cannot be imported here."""
        return [pkg for pkg in cls.requires if importlib.util.find_spec(pkg) is None]

    @classmethod
    def install_hint(cls) -> str:
        """``pip install ...`` for the missing optional packages."""
        names = [cls.distributions.get(pkg, pkg) for pkg in cls.missing_packages()]
        return f"pip install {' '.join(names)}"

    @classmethod
    def prepare(cls) -> None:
        """One-off work that must not be timed as explain: import the optional packages,
        compile kernels. The runner calls it once before forking cells; ``explain`` too."""
        for package in cls.requires:
            importlib.import_module(package)

    @classmethod
    def share(cls, model: Any) -> None:
        """Work on a fitted model that every cell of this method on it can reuse (e.g. the
        in-bag counts). The runner calls it once per model before forking cells."""

    def skip(self, model: Any, data: ExplainData) -> str | None:
        """Reason not to run on this cell, or None. Subclasses extend; call super()."""
        if data.task not in self.tasks:
            return f"{self.name} supports {', '.join(self.tasks)} only; this is {data.task}."
        if data.n_outputs > 1 and not self.multi_output:
            return (f"{self.name} explains single-output models only (its estimate is "
                    f"defined for one output); this is a multi-output model with "
                    f"{data.n_outputs} outputs: fit one model per output to use it.")
        if self.needs_y and data.y is None:
            return f"{self.name} needs the targets y of the explained rows; none were given."
        return None

    def explain(self, model: Any, data: ExplainData, rng: np.random.Generator) -> Importances:
        """Run the method; only this call is timed.

        ``_explain`` may return an :class:`Importances`, or just the values as an array: the
        base class then fills in ``scope`` (the class's), ``feature_names`` (the data's),
        ``unit`` and ``explains`` (the class's). Either way the result must have the class's
        scope and the data's feature names, or :class:`TypeError` says what is wrong with the
        method (a result under the wrong names would be a silently wrong answer).
        """
        start = time.perf_counter()
        result = self._explain(model, data, rng)
        elapsed = time.perf_counter() - start
        result = self._as_importances(result, data)
        result.time_explain = elapsed
        result.method = repr(self)
        return result

    def _as_importances(self, result: Any, data: ExplainData) -> Importances:
        if not isinstance(result, Importances):
            if not (self.unit and self.explains):
                raise TypeError(
                    f"{type(self).__name__}._explain returned {type(result).__name__}; a "
                    "method that returns plain values must declare the class attributes "
                    "'unit' and 'explains' (or return an Importances).")
            return Importances(np.asarray(result, dtype=float), self.scope,
                               list(data.feature_names), self.unit, self.explains)
        if result.scope != self.scope:
            raise TypeError(f"{type(self).__name__} is declared {self.scope!r} but returned "
                            f"{result.scope!r} importances.")
        if list(result.feature_names) != list(data.feature_names):
            raise TypeError(f"{type(self).__name__} returned values for features "
                            f"{list(result.feature_names)}; expected {list(data.feature_names)}.")
        return result

    def _explain(
        self, model: Any, data: ExplainData, rng: np.random.Generator
    ) -> Importances:  # pragma: no cover - interface
        raise NotImplementedError
