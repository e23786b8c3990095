"""The Method contract: one small class per importance measure.

A method declares its ``name``, ``scope``, ``family``, the tasks it supports, the optional
packages it needs and its parameters (with defaults and constraints). It implements
``_explain(model, data, rng)`` and may implement ``skip(model, data)``. The base class
validates parameters, times ``_explain`` alone and stamps the result.

A local method whose values for a row depend on that row alone (``rows_independent``)
implements ``_explain_rows(model, data, context)`` instead, and ``_rows_context`` for what it
draws once from all the rows (e.g. a background sample): the base class can then explain the
rows block by block into one preallocated output (:meth:`Method.explain`, ``block_rows``), so
that the kernels' temporaries and the coding of X are bounded by the block, not by n.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harness.core.blas_threads import one_blas_thread
from harness.core.complexity import Stated
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
    number of outputs (k > 1 for a multi-output model, whose ``y`` is then (n, k)).
    """

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str]
    task: Task
    sample_weight: np.ndarray | None = None  # probabilities of an explicit distribution
    #: Optional callback that sampling methods call with their estimated progress in [0, 1].
    progress: Callable[[float], None] | None = None
    n_outputs: int = 1

    @property
    def weighted(self) -> bool:
        """Whether the rows carry weights that are not all equal (the support of an explicit
        distribution that is not uniform on them)."""
        weights = self.sample_weight
        return weights is not None and weights.min() != weights.max()

    def row_block(self, start: int, stop: int) -> ExplainData:
        """Rows ``start:stop`` (views, not copies), with their targets and weights; no
        progress callback (the caller that splits the rows reports progress)."""
        def part(array: np.ndarray | None) -> np.ndarray | None:
            return None if array is None else array[start:stop]

        return dataclasses.replace(self, X=self.X[start:stop], y=part(self.y),
                                   sample_weight=part(self.sample_weight), progress=None)


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
    #: Whether the method explains multi-output models (regressors and classifiers) exactly
    #: (else it skips them).
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
    #: point and sample counts fixed; where the cost is a sum of terms of different orders in
    #: that size, the tuple of their exponents (e.g. ``(0, 1)``: walks that do not grow with
    #: p plus an (n, p) output), whose range bounds the measured slope at every size
    #: (:mod:`harness.core.complexity`); None where the cost is no power of that size
    #: (e.g. 2^depth leaves). The class docstring's "Complexity" paragraph gives the full
    #: order and its source.
    complexity: ClassVar[dict[str, Stated]] = {}
    #: True when a local method's values of row i are a function of row i alone, given the
    #: ``_rows_context`` drawn once from all rows (and the same numbers whichever other rows
    #: are explained with it, to the bit): such a method implements ``_explain_rows``, and
    #: :meth:`explain` may split the rows into blocks (``block_rows``).
    rows_independent: ClassVar[bool] = False
    #: How a global method treats weighted rows (``sample_weight``: the rows are the support
    #: of an explicit distribution): "honoured" (it draws or averages them with the weights),
    #: "irrelevant" (its values average over no rows, e.g. MDI, read from the model alone),
    #: or None: it treats the rows as equally likely (averages them, or fits trees on them,
    #: unweighted), and :meth:`skip` declines rows whose weights are not all equal (it would
    #: estimate its value for the uniform distribution over the support instead). A local
    #: method's values are per row: weights never change them.
    weighted_rows: ClassVar[str | None] = None

    def block_row_values(self, model: Any, n_features: int) -> int | None:
        """How many float64 values one row of a block takes in a ``rows_independent``
        method's explain (its output and its kernel's per-row buffers), which sizes the
        blocks (:func:`harness.run.protocol.row_block`). Default None: a value per feature
        and model output (every class of a classifier); a method that keeps fewer says so."""
        return None

    def __init__(self, **params: Any) -> None:
        self.params = validate_params(self.name, self.parameters, params)

    def __repr__(self) -> str:
        changed = {
            k: v for k, v in self.params.items() if v != self.parameters[k].default
        }
        return format_spec(self.name, changed)

    @classmethod
    def missing_packages(cls, packages: tuple[str, ...] | None = None) -> list[str]:
        """Those of ``packages`` (default: the class's ``requires``) that cannot be imported
        here."""
        packages = cls.requires if packages is None else packages
        return [pkg for pkg in packages if importlib.util.find_spec(pkg) is None]

    @classmethod
    def install_hint(cls, packages: tuple[str, ...] | None = None) -> str:
        """``pip install ...`` for the missing ones of ``packages`` (default: ``requires``)."""
        names = [cls.distributions.get(pkg, pkg) for pkg in cls.missing_packages(packages)]
        return f"pip install {' '.join(names)}"

    def needed_packages(self) -> tuple[str, ...]:
        """The optional packages this configured method imports: the class's ``requires``,
        and those that its parameters choose (TreeSHAP's ``backend="shap"``). The explain
        protocol raises :class:`~harness.core.errors.NotInstalledError` for any that is
        missing, and imports them all before the timed explain."""
        return self.requires

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
        if self.scope == "global" and self.weighted_rows is None and data.weighted:
            weights = data.sample_weight
            return (f"{self.name} treats the rows as equally likely, and these rows are "
                    f"weighted (the support of an explicit distribution, weights from "
                    f"{weights.min():.3g} to {weights.max():.3g}): it would estimate its "
                    "value for the uniform distribution over them. Give it rows drawn from "
                    "the distribution (e.g. the dataset with n_samples set).")
        return None

    def explain(self, model: Any, data: ExplainData, rng: np.random.Generator,
                block_rows: int | None = None) -> Importances:
        """Run the method, with BLAS on one thread (:mod:`harness.core.blas_threads`); only
        this call is timed.

        ``_explain`` may return an :class:`Importances`, or just the values as an array: the
        base class then fills in ``scope`` (the class's), ``feature_names`` (the data's),
        ``unit`` and ``explains`` (the class's). Either way the result must have the class's
        scope and the data's feature names, or :class:`TypeError` says what is wrong with the
        method (a result under the wrong names would be a silently wrong answer).

        ``block_rows`` (a ``rows_independent`` method only; None: all rows at once) explains
        the rows ``block_rows`` at a time into one output allocated once, after drawing the
        method's ``_rows_context`` from all rows: the same values, bit for bit, with the
        temporaries of one block (the explain protocol sizes the blocks,
        :func:`harness.run.protocol.row_block`). The time covers every block.
        """
        if block_rows is not None and not (isinstance(block_rows, (int, np.integer))
                                           and not isinstance(block_rows, bool)
                                           and block_rows >= 1):
            raise ValueError(f"block_rows must be None or an int >= 1; got {block_rows!r}.")
        with one_blas_thread():  # the kernels' threads do the parallel work
            start = time.perf_counter()
            if (self.rows_independent and block_rows is not None
                    and block_rows < data.X.shape[0]):
                result = self._explain_blocks(model, data, rng, block_rows)
            else:
                result = self._explain(model, data, rng)
            elapsed = time.perf_counter() - start
        result = self._as_importances(result, data)
        result.time_explain = elapsed
        result.method = repr(self)
        return result

    def _explain_blocks(self, model: Any, data: ExplainData, rng: np.random.Generator,
                        block_rows: int) -> Importances:
        """The rows ``block_rows`` at a time, each block's values and base values copied into
        the output, which is allocated once the first block tells its trailing shape."""
        n = data.X.shape[0]
        context = self._rows_context(model, data, rng)
        result = values = base = None
        for begin in range(0, n, block_rows):
            stop = min(n, begin + block_rows)
            part = self._as_importances(
                self._explain_rows(model, data.row_block(begin, stop), context), data)
            if part.scope != "local" or part.std is not None:
                raise TypeError(f"{type(self).__name__} is declared rows_independent, so it "
                                f"must return local values without std; got {part.scope!r} "
                                f"values{'' if part.std is None else ' with std'}.")
            pieces = part.values, part.base_values
            if result is None:  # the first block's record carries unit, explains, extra
                values = np.empty((n, *part.values.shape[1:]))
                if part.base_values is not None:
                    base = np.empty((n, *np.shape(part.base_values)[1:]))
                result = part
            # drop the block's record now: it would keep the block alive during the next one
            part.values, part.base_values, part = values, base, None
            for whole, piece, what in zip((values, base), pieces, ("values", "base_values"),
                                          strict=True):
                if (whole is None) != (piece is None) or (
                        piece is not None and np.shape(piece) != (stop - begin,
                                                                  *whole.shape[1:])):
                    raise TypeError(
                        f"{type(self).__name__} returned {what} of shape "
                        f"{np.shape(piece)} for rows {begin}:{stop}; expected "
                        f"{None if whole is None else (stop - begin, *whole.shape[1:])}.")
                if whole is not None:
                    whole[begin:stop] = piece
            pieces = piece = None
            if data.progress is not None:
                data.progress(stop / n)
        return result

    def _rows_context(self, model: Any, data: ExplainData, rng: np.random.Generator) -> Any:
        """What a ``rows_independent`` method draws once from all the rows before any block
        (e.g. a background sample); passed to every ``_explain_rows``. Default: nothing."""
        return None

    def _explain_rows(self, model: Any, data: ExplainData,
                      context: Any) -> Importances:  # pragma: no cover - interface
        """A ``rows_independent`` method's values of the rows of ``data`` (a block of them)."""
        raise NotImplementedError

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

    def _explain(self, model: Any, data: ExplainData, rng: np.random.Generator) -> Importances:
        """The method's values for ``data``; a ``rows_independent`` method's default is its
        ``_explain_rows`` of every row in one block."""
        if self.rows_independent:
            return self._explain_rows(model, data, self._rows_context(model, data, rng))
        raise NotImplementedError  # pragma: no cover - interface
