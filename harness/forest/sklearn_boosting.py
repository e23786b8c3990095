"""The scikit-learn boosting adapters: GradientBoosting and HistGradientBoosting models.

Both are read into the view's ensemble convention (:class:`harness.forest.view.ForestView`):
the model's raw output (``decision_function`` of a classifier, ``predict`` of a regressor) is
the *mean* over the view's trees of their values. A boosted model adds its trees to a base
score, so tree t of the n_trees trees (iteration-major, class-minor: scikit-learn's order and
shap's) is written with values ``n_trees * leaf_t + base`` in its own class column and ``base``
in the others, where ``leaf_t`` is the leaf value as the model adds it (learning rate
included). Binary classifiers have one output column, the margin (log-odds) of
``classes_[1]``; the link (logistic, softmax) maps the view's output to ``predict_proba``.

Internal node values are set to the cover-weighted means of their children
(:func:`harness.forest.boosted.node_means`, as shap's ``TreeExplainer`` does): scikit-learn
stores the unshrunk mean residual there, which no prediction uses. Only the leaf values enter
the model's output. HistGradientBoosting's predictors are read through
:mod:`harness.forest.boosted`, as XGBoost's and LightGBM's trees are.

- ``GradientBoosting{Classifier,Regressor}`` (scikit-learn ``sklearn/ensemble/_gb.py``):
  ``estimators_`` is an (n_iter, K) array of ``DecisionTreeRegressor``; the model adds
  ``learning_rate * tree.predict(X)`` to the init estimator's raw prediction
  (``_raw_predict``). Rows are routed as scikit-learn's trees route them (float32 rows, float64
  thresholds), so rows are the float32 cast. The trees' node impurities are real (the
  ``friedman_mse``/``squared_error`` of the pseudo-residuals). The init estimator must give
  the same raw prediction on every row (``"zero"``, or a ``DummyClassifier`` /
  ``DummyRegressor`` with a constant strategy): anything else has no base score.
- ``HistGradientBoosting{Classifier,Regressor}`` (``_hist_gradient_boosting``): its
  ``_predictors`` (n_iter lists of K ``TreePredictor``) hold node records with ``num_threshold``
  compared in float64 (``x <= t`` left; NaN goes to ``missing_go_to_left``), so rows and
  thresholds are rank-coded (:class:`harness.forest.coding.ThresholdCoding`). Covers are the
  node ``count`` (what shap reads). No node impurity is stored: the adapter fills
  gain-consistent pseudo-impurities so that MDI gives the sum of the split gains
  (``impurity_unit`` "gain"), and does not declare ``"node_impurity"``. Categorical splits
  are refused.
"""

from __future__ import annotations

import numpy as np
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)

from harness.core.errors import BadInputError
from harness.forest.boosted import (
    ParsedBoosterAdapter,
    ParsedModel,
    RawTree,
    boosted_fields,
    boosted_trees,
    boosted_values,
    node_means,
    threshold_coding,
)
from harness.forest.flat import FlatTree, as_float32_rows
from harness.forest.sklearn import quietly, sklearn_routes_nan_as_fitted

GB_TYPES = (GradientBoostingClassifier, GradientBoostingRegressor)
HGB_TYPES = (HistGradientBoostingClassifier, HistGradientBoostingRegressor)

#: Losses whose raw output maps to predict/predict_proba by the identity (regressors) or the
#: logistic/softmax link (classifiers); others (exponential, poisson, gamma) are refused.
GB_LOSSES = {"classification": ("log_loss",),
             "regression": ("squared_error", "absolute_error", "huber", "quantile")}
HGB_LOSSES = {"classification": ("log_loss",),
              "regression": ("squared_error", "absolute_error", "quantile")}
#: DummyClassifier strategies whose predict_proba is the same on every row ("stratified"
#: draws a random class per row)
CONSTANT_DUMMY_STRATEGIES = ("prior", "most_frequent", "uniform", "constant")


def _is_classifier(model) -> bool:
    return hasattr(model, "classes_")


def _task(model) -> str:
    return "classification" if _is_classifier(model) else "regression"


def _check_loss(model, allowed: dict[str, tuple[str, ...]]) -> None:
    task = _task(model)
    if model.loss not in allowed[task]:
        raise BadInputError(
            f"A {type(model).__name__} with loss={model.loss!r} is not read: its raw output "
            f"does not map to predict/predict_proba by the identity, logistic or softmax "
            f"link. Allowed losses for {task}: {', '.join(allowed[task])}.")


def boosted_describe(model, library: str, n_columns: int, n_trees: int, impurity_unit: str,
                     capabilities: frozenset[str], routes_missing: bool) -> dict:
    """The view's scalar fields of a scikit-learn boosted model (see :class:`ForestView`)."""
    classifier = _is_classifier(model)
    link = ("logistic" if n_columns == 1 else "softmax") if classifier else "identity"
    return boosted_fields(library=library, kind=type(model).__name__, classifier=classifier,
                          n_features=model.n_features_in_, n_trees=n_trees,
                          classes=model.classes_ if classifier else None,
                          impurity_unit=impurity_unit, link=link, capabilities=capabilities,
                          routes_missing=routes_missing)


def _predict_accepts_nan(model) -> bool:
    """Whether the model's own ``predict`` takes NaN (GradientBoosting's trees route it where
    its scikit-learn version lets the ensemble accept it; it raises ValueError otherwise)."""
    if not sklearn_routes_nan_as_fitted():  # its trees, as a forest's (sklearn.py)
        return False
    row = np.full((1, int(model.n_features_in_)), np.nan)
    try:
        quietly(model.predict, row)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- GradientBoosting


def _gb_base(model) -> np.ndarray:
    """The init estimator's raw prediction, the same on every row (checked by ``check``)."""
    if isinstance(model.init_, str):  # "zero"
        return np.zeros(model.estimators_.shape[1])
    # scikit-learn's own _raw_predict_init (DummyClassifier: the link of the clipped priors)
    one_row = np.zeros((1, model.n_features_in_), dtype=np.float32)
    return np.asarray(model._raw_predict_init(one_row), dtype=np.float64)[0]


class GradientBoostingAdapter:
    """Reads fitted scikit-learn GradientBoostingClassifier / GradientBoostingRegressor."""

    library = "scikit-learn"
    package = "sklearn"
    description = "scikit-learn " + ", ".join(cls.__name__ for cls in GB_TYPES)

    @classmethod
    def accepts(cls, model) -> bool:
        return isinstance(model, GB_TYPES)

    @classmethod
    def check(cls, model) -> None:
        if not hasattr(model, "estimators_"):
            raise BadInputError(f"The {type(model).__name__} is not fitted; call fit() first.")
        _check_loss(model, GB_LOSSES)
        init = model.init_
        constant = (isinstance(init, str) and init == "zero") or isinstance(init, DummyRegressor)
        if isinstance(init, DummyClassifier):
            constant = init.strategy in CONSTANT_DUMMY_STRATEGIES
        if not constant:
            name = (f"DummyClassifier(strategy={init.strategy!r})"
                    if isinstance(init, DummyClassifier) else type(init).__name__)
            raise BadInputError(
                f"The {type(model).__name__}'s init estimator {name} gives a raw prediction "
                "that varies across rows, which no base score represents. Allowed: "
                "init=None (scikit-learn's prior), 'zero', a DummyRegressor, or a "
                f"DummyClassifier with strategy in {', '.join(CONSTANT_DUMMY_STRATEGIES)}.")

    @classmethod
    def describe(cls, model) -> dict:
        n_iter, n_columns = model.estimators_.shape
        unit = {"friedman_mse": "variance of the pseudo-residuals (friedman_mse)",
                "squared_error": "variance of the pseudo-residuals"}.get(
            str(model.criterion), f"{model.criterion} of the pseudo-residuals")
        return boosted_describe(model, cls.library, n_columns, n_iter * n_columns, unit,
                                frozenset({"node_impurity"}), _predict_accepts_nan(model))

    @classmethod
    def flat_trees(cls, model) -> list[FlatTree]:
        n_iter, n_columns = model.estimators_.shape
        n_trees = n_iter * n_columns
        base = _gb_base(model)
        trees = []
        for stage in model.estimators_:
            for column, estimator in enumerate(stage):
                tree = estimator.tree_
                left = np.asarray(tree.children_left, dtype=np.int64)
                right = np.asarray(tree.children_right, dtype=np.int64)
                cover = np.asarray(tree.weighted_n_node_samples, dtype=np.float64)
                # predict_stages adds learning_rate * the leaf value (sklearn _gradient_boosting)
                leaf = model.learning_rate * np.asarray(tree.value[:, 0, 0], dtype=np.float64)
                trees.append(FlatTree(
                    left=left, right=right, feature=np.asarray(tree.feature, dtype=np.int64),
                    threshold=np.asarray(tree.threshold, dtype=np.float64),
                    impurity=np.asarray(tree.impurity, dtype=np.float64), weighted_n=cover,
                    value=boosted_values(node_means(left, right, cover, leaf), column, base,
                                         n_trees),
                    max_depth=int(tree.max_depth),
                ))
        return trees

    @classmethod
    def inbag_counts(cls, model) -> np.ndarray:
        raise BadInputError(f"A {type(model).__name__} keeps no in-bag rows (its subsample "
                            "draws are not stored); the OOB methods do not apply.")

    @classmethod
    def trees_signature(cls, model) -> tuple:
        return tuple(tree.tree_ for tree in model.estimators_.ravel())

    @classmethod
    def predict_output(cls, model, X: np.ndarray) -> np.ndarray:
        """``decision_function`` as (n, K) for classifiers (the margin the view explains),
        ``predict`` for regressors."""
        if _is_classifier(model):
            return quietly(model.decision_function, X).reshape(len(X), -1)
        return quietly(model.predict, X)

    @classmethod
    def encode_rows(cls, model, X: np.ndarray) -> np.ndarray:
        """The float32 cast scikit-learn's trees route with (``decision_function`` casts)."""
        return as_float32_rows(X)


# ---------------------------------------------------------------- HistGradientBoosting


def _hgb_nodes(model) -> list[np.ndarray]:
    """Node records of every predictor, iteration-major, class-minor."""
    return [predictor.nodes for stage in model._predictors for predictor in stage]


def _feature_name(model, j: int) -> str:
    names = getattr(model, "feature_names_in_", None)
    return f"{names[j]!r} (column {j})" if names is not None else f"column {j}"


def _hgb_raw_trees(model) -> list[RawTree]:
    """Every predictor's nodes as a :class:`RawTree` (leaf values include the shrinkage,
    covers are the node counts shap reads, NaN goes to ``missing_go_to_left``)."""
    n_columns = int(model.n_trees_per_iteration_)
    raws = []
    for t, nodes in enumerate(_hgb_nodes(model)):
        leaf = nodes["is_leaf"] == 1
        raws.append(RawTree(
            left=np.where(leaf, -1, nodes["left"].astype(np.int64)),
            right=np.where(leaf, -1, nodes["right"].astype(np.int64)),
            feature=nodes["feature_idx"].astype(np.int64),
            threshold=nodes["num_threshold"].astype(np.float64),
            leaf_value=nodes["value"].astype(np.float64), cover=nodes["count"].astype(float),
            gain=nodes["gain"].astype(np.float64),
            missing_left=(nodes["missing_go_to_left"] == 1) & ~leaf, column=t % n_columns))
    return raws


class HistGradientBoostingAdapter(ParsedBoosterAdapter):
    """Reads fitted scikit-learn HistGradientBoostingClassifier / ...Regressor."""

    library = "scikit-learn"
    package = "sklearn"
    description = "scikit-learn " + ", ".join(cls.__name__ for cls in HGB_TYPES)
    no_inbag = "it grows every tree on all its training rows"

    @classmethod
    def accepts(cls, model) -> bool:
        return isinstance(model, HGB_TYPES)

    @classmethod
    def check(cls, model) -> None:
        if not hasattr(model, "_predictors"):
            raise BadInputError(f"The {type(model).__name__} is not fitted; call fit() first.")
        _check_loss(model, HGB_LOSSES)
        categorical = getattr(model, "is_categorical_", None)
        columns = [] if categorical is None else list(np.flatnonzero(categorical))
        for nodes in _hgb_nodes(model):
            split = (nodes["is_leaf"] == 0) & (nodes["is_categorical"] == 1)
            columns.extend(int(j) for j in nodes["feature_idx"][split])
        if columns:
            named = ", ".join(_feature_name(model, j) for j in sorted(set(columns)))
            raise BadInputError(
                f"This {type(model).__name__} has categorical features ({named}): their "
                "splits send a set of categories left, which the forest view (threshold "
                "splits only) cannot represent. Refit with categorical_features=None (e.g. "
                "one-hot or ordinal-encode the columns first).")
        cls.parsed(model)

    @classmethod
    def parse(cls, model, signature: tuple) -> ParsedModel:
        """The predictors' trees, rank-coded: ``TreePredictor.predict`` compares float64
        rows with ``x <= t``."""
        n_columns = int(model.n_trees_per_iteration_)
        raws = _hgb_raw_trees(model)
        coding = threshold_coding(raws, int(model.n_features_in_), rule="<=",
                                  precision="float64")
        base = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
        trees = boosted_trees(raws, coding, n_columns, scale=float(len(raws)), base=base)
        describe = boosted_describe(model, cls.library, n_columns, len(raws),
                                    "gain (split gains of the boosting objective, summed)",
                                    frozenset(), routes_missing=True)
        return ParsedModel(signature, describe, trees, coding)

    @classmethod
    def trees_signature(cls, model) -> tuple:
        return tuple(predictor for stage in model._predictors for predictor in stage)

    @classmethod
    def predict_output(cls, model, X: np.ndarray) -> np.ndarray:
        """``decision_function`` as (n, K) for classifiers, ``predict`` for regressors."""
        if _is_classifier(model):
            return quietly(model.decision_function, X).reshape(len(X), -1)
        return quietly(model.predict, X)

    @classmethod
    def encode_rows(cls, model, X: np.ndarray) -> np.ndarray:
        """Each value's rank among its feature's float64 thresholds; NaN stays NaN (routed by
        ``missing_left``, as ``TreePredictor.predict`` routes it)."""
        return cls.parsed(model).coding.encode(np.asarray(X, dtype=np.float64))
