"""One view of a fitted tree ensemble: the only form in which methods and kernels see a model.

A :class:`ForestView` holds what the kernels read, whatever library grew the trees: the flat
trees, the packed arrays (:mod:`harness.forest.packed`), the compact form the path walks read
(:mod:`harness.forest.compact`) and the in-bag counts (:mod:`harness.forest.inbag`). Each is
built the first time it is asked for, from what the model's adapter reads (one adapter per
library: :data:`ADAPTERS`), and reused by every later call on the same fitted model.

Views live in a :class:`weakref.WeakKeyDictionary` keyed by the estimator: the user's object is
never modified, nothing is pickled along with it, the view goes when the model goes (it holds
the model weakly), and a model fitted again, in place included, gets a new view (what
:mod:`harness.forest.signature` compares).
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from harness.core.errors import BadInputError
from harness.forest.flat import FlatTree
from harness.forest.lightgbm import LightGBMAdapter
from harness.forest.signature import same_fitted_state
from harness.forest.sklearn import SklearnForestAdapter
from harness.forest.sklearn_boosting import GradientBoostingAdapter, HistGradientBoostingAdapter
from harness.forest.subclass import check_prediction_not_redefined
from harness.forest.xgboost import XGBoostAdapter

if TYPE_CHECKING:
    from harness.forest.compact import PathForest
    from harness.forest.inbag import InBag
    from harness.forest.packed import PackedForest

# The derived forms live in modules that define numba kernels; they are imported where a form
# is first built, so that ``import harness`` (and every CLI start) does not load numba.


class ForestAdapter(Protocol):
    """What a tree library's adapter tells the view about one fitted model.

    Two members are optional (:func:`harness.run.inputs.check_feature_names` reads them
    where present; :class:`harness.forest.boosted.ParsedBoosterAdapter` has both):
    ``booster_feature_names(model)``, the column names a model keeps of its fit outside
    ``feature_names_in_`` (a raw booster's), and ``name_as_fitted(name)``, a column name as
    the library stores it (LightGBM: spaces as underscores).
    """

    library: str
    package: str  # the top-level module of the library's classes
    description: str  # the models it reads, for error messages

    @classmethod
    def accepts(cls, model: Any) -> bool:
        """True if this adapter reads models of ``model``'s type (fitted or not)."""

    @classmethod
    def check(cls, model: Any) -> None:
        """Raise :class:`BadInputError` unless ``model`` is a fitted model it can read."""

    @classmethod
    def describe(cls, model: Any) -> dict[str, Any]:
        """The view's scalar fields (see :class:`ForestView`)."""

    @classmethod
    def flat_trees(cls, model: Any) -> list[FlatTree]:
        """Every tree as a :class:`FlatTree`, in the model's tree order."""

    @classmethod
    def inbag_counts(cls, model: Any) -> np.ndarray:
        """Times each training row was drawn for each tree, (n_training_rows, n_trees)."""

    @classmethod
    def trees_signature(cls, model: Any) -> tuple:
        """The objects a fit creates and the counts an in-place update changes, compared by
        :func:`harness.forest.signature.same_fitted_state` (never the model itself)."""

    @classmethod
    def predict_output(cls, model: Any, X: np.ndarray) -> np.ndarray:
        """The model's own prediction, by its own library (see :func:`predict_output`)."""

    @classmethod
    def encode_rows(cls, model: Any, X: np.ndarray) -> np.ndarray:
        """Rows (n, p) as the float32 C-contiguous coding the flat trees' thresholds are in
        (see :meth:`ForestView.rows`); NaN stays NaN where the model routes missing values."""


#: One adapter per tree library; the first that accepts a model reads it.
ADAPTERS: tuple[type[ForestAdapter], ...] = (
    SklearnForestAdapter, GradientBoostingAdapter, HistGradientBoostingAdapter, XGBoostAdapter,
    LightGBMAdapter,
)


@dataclass(eq=False)
class ForestView:
    """How the harness sees one fitted tree ensemble (built by :func:`forest_view`).

    Attributes
    ----------
    library, kind : str
        Which adapter read the model, and the model's type name.
    classifier : bool
    n_features, n_trees : int
    classes : ndarray or None
        Class labels in output order (single-output classifiers).
    impurity_unit : str
        Unit of the node impurities (bits for entropy).
    bootstrap : bool
        Whether the trees were grown on bootstrap samples (out-of-bag rows exist).
    class_weight : None, str, dict or list of dict
        The model's ``class_weight`` (None: none): the trees may weight rows by class beyond
        the in-bag counts (:func:`harness.forest.inbag.fit_weightings`).
    output_unit : str
        What :meth:`output` (the mean over trees of the tree values) is: ``"probability"``
        (bagged classifiers), ``"prediction"`` (regressors), ``"margin"`` (boosted
        classifiers' raw score, before the link).
    link : {"identity", "logistic", "softmax"}
        Maps :meth:`output` to the model's own ``predict_proba`` / ``predict``. A boosted
        model's trees are summed, scaled and offset by a base score: its adapter writes each
        tree's values so that the *mean* over trees is the model's raw output, which keeps one
        convention for every kernel.
    capabilities : frozenset of str
        What the model exposes beyond its splits and leaf values (see
        :data:`harness.core.method.MODEL_CAPABILITIES`): ``"node_impurity"`` (node impurities
        i(t) that local MDI decomposes), ``"inbag"`` (each tree's in-bag rows, so out-of-bag
        rows exist).
    routes_missing : bool
        Whether the model's own ``predict`` accepts NaN in X (and routes it by each node's
        ``missing_left``); :func:`harness.run.inputs.check_X` allows NaN exactly then.
    n_outputs : int
        Outputs of a multi-output model (scikit-learn, y of shape (n, k)), 1 otherwise. A
        multi-output regressor's trees have one value column per output and :meth:`output` is
        ``predict``, (n, k); a single-output classifier's value columns are its classes.
    output_classes : tuple of ndarray or None
        A multi-output classifier's classes, one array per output (``classes`` is then None):
        its value columns are output 0's classes, then output 1's, ..., and :meth:`output` is
        ``predict_proba``'s per-output arrays side by side.
    trees, packed, paths, inbag
        The derived forms, each built on first use (see the module docstring).
    """

    library: str
    kind: str
    classifier: bool
    n_features: int
    n_trees: int
    classes: np.ndarray | None
    impurity_unit: str
    bootstrap: bool
    output_unit: str
    link: str
    capabilities: frozenset[str]
    _adapter: type[ForestAdapter] = field(repr=False)
    _model: weakref.ref = field(repr=False)
    _signature: tuple = field(repr=False)
    routes_missing: bool = False
    n_outputs: int = 1
    output_classes: tuple[np.ndarray, ...] | None = None
    class_weight: Any = None

    def _source(self) -> Any:
        model = self._model()
        if model is None:  # the view outlived its model (kept by a caller)
            raise BadInputError(f"The {self.kind} this forest view was built from is gone.")
        return model

    @cached_property
    def trees(self) -> list[FlatTree]:
        """Every tree as a :class:`~harness.forest.sklearn.FlatTree`."""
        return self._adapter.flat_trees(self._source())

    @property
    def multi_output(self) -> bool:
        """Whether the model has several outputs (:attr:`n_outputs` > 1)."""
        return self.n_outputs > 1

    @property
    def n_values(self) -> int:
        """Value columns of the trees at most: a classifier's classes (every output's, for a
        multi-output one), a regressor's outputs."""
        if self.output_classes is not None:
            return sum(len(classes) for classes in self.output_classes)
        return len(self.classes) if self.classifier else self.n_outputs

    @cached_property
    def packed(self) -> PackedForest:
        """All trees as contiguous arrays, the form most kernels read.

        A multi-output regressor is packed with the ``classifier`` flag of the kernels, which
        selects their several-column paths (every column, or one column per row): its outputs
        are value columns exactly as a classifier's classes are, so the classifiers' kernels
        explain them unchanged (the single-column regression paths read column 0 only). A
        multi-output classifier's value columns are every output's classes, side by side.
        """
        from harness.forest.packed import pack_trees

        return pack_trees(self.trees, self.n_features, self.classifier or self.multi_output)

    @cached_property
    def paths(self) -> PathForest:
        """The compact form the path walks read (int32 ids, float32 thresholds)."""
        from harness.forest.compact import compact_forest

        return compact_forest(self.packed)

    @cached_property
    def inbag(self) -> InBag:
        """In-bag counts (n_training_rows, n_trees); every row once without bootstrap."""
        from harness.forest.inbag import InBag

        return InBag(self._adapter.inbag_counts(self._source()))

    def build(self, *forms: str) -> ForestView:
        """Build the named forms now (e.g. before cell processes fork, so they share them)."""
        for form in forms:
            getattr(self, form)
        return self

    def rows(self, X: np.ndarray) -> np.ndarray:
        """``X`` as the kernels read it: float32, C-contiguous, in the coding of the trees'
        thresholds (for scikit-learn forests, the float32 cast scikit-learn routes with; an
        adapter whose library compares in float64 maps each value to its rank among the
        split thresholds, which every comparison preserves exactly)."""
        return self._adapter.encode_rows(self._source(), X)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Local leaf id of every row (raw, as the user passes it) in every tree, (n, n_trees)."""
        from harness.forest.packed import apply_packed

        return apply_packed(self.packed, self.rows(X))

    def output(self, X: np.ndarray) -> np.ndarray:
        """Mean over trees of the tree outputs for raw rows (the model's raw output, before
        :attr:`link`), (n, n_values)."""
        from harness.forest.packed import packed_output

        return packed_output(self.packed, self.rows(X))


_VIEWS: weakref.WeakKeyDictionary[Any, ForestView] = weakref.WeakKeyDictionary()


@dataclass
class _Pin:
    """The model of one explain and, once read, its view."""

    model: Any
    view: ForestView | None = None


_PIN: contextvars.ContextVar[_Pin | None] = contextvars.ContextVar("harness_view_pin",
                                                                   default=None)


@contextmanager
def one_reading(model: Any) -> Iterator[None]:
    """Within the block, :func:`forest_view` checks ``model``'s fitted state once: the first
    call reads the view as usual (errors included), later calls return that view.

    For one explain (:func:`harness.run.protocol.run_protocol`), during which nothing refits
    the model: the protocol and the method ask for the view 5 to 8 times, and each check of
    the fitted state reads every tree (29 us on 500 scikit-learn trees: one check instead of
    five took a one-row local MDI explain from 226 to 172 us). Other models, and the same
    model on other threads, are read as usual; the pin ends with the block, so a refit after
    it is seen. A plugin that refitted the explained model in place during the call would
    see the reading from the call's start.
    """
    token = _PIN.set(_Pin(model))
    try:
        yield
    finally:
        _PIN.reset(token)


def adapter_of(model: Any) -> type[ForestAdapter]:
    """The adapter that reads ``model``, or a clear error naming the models that are read."""
    for adapter in ADAPTERS:
        if adapter.accepts(model):
            return adapter
    allowed = "; ".join(adapter.description for adapter in ADAPTERS)
    raise BadInputError(f"Expected a fitted tree model of a kind the harness reads "
                        f"({allowed}); got {type(model).__name__}.{wrapper_hint(model)}")


def wrapper_hint(model: Any) -> str:
    """What to pass instead when ``model`` wraps a tree model ("" otherwise)."""
    if hasattr(model, "steps"):
        return (" For a Pipeline, explain its last step, model[-1], on the rows "
                "model[:-1].transform(X): the importances are then of the transformed "
                "features.")
    if hasattr(model, "best_estimator_"):
        return " For a fitted search, explain model.best_estimator_."
    return ""


def forest_view(model: Any) -> ForestView:
    """The :class:`ForestView` of a fitted model, built once per fitted model.

    Raises
    ------
    BadInputError
        If no adapter reads ``model``, or it is not fitted, or it is a kind of model the
        adapter refuses (e.g. multi-output forests).
    """
    pin = _PIN.get()
    if pin is not None and pin.model is model:
        if pin.view is None:
            pin.view = _read_view(model)
        return pin.view
    return _read_view(model)


def _read_view(model: Any) -> ForestView:
    """The cached view if it is of the model's current fit, else a new one."""
    adapter = adapter_of(model)
    adapter.check(model)
    signature = adapter.trees_signature(model)
    view = _VIEWS.get(model)
    if view is None or not same_fitted_state(view._signature, signature):
        check_prediction_not_redefined(model, adapter.package, adapter.library)
        view = ForestView(**adapter.describe(model), _adapter=adapter,
                          _model=weakref.ref(model), _signature=signature)
        _VIEWS[model] = view
    return view


def predict_output(model: Any, X: np.ndarray) -> np.ndarray:
    """The model's own prediction as the kernels' output space (``predict_proba`` of a
    classifier, ``predict`` of a regressor as a column or vector), by its own library's code:
    the reference that decompositions add up to and that timings are compared with."""
    return adapter_of(model).predict_output(model, X)
