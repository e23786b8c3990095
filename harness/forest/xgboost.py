"""The XGBoost adapter: a fitted ``xgboost.Booster`` or scikit-learn wrapper
(``XGBRegressor``, ``XGBClassifier``, ``XGBRF*``) read from the booster's own JSON model.

The model is read from ``Booster.save_raw("json")`` parsed with :func:`json.loads` (nothing is
unpickled or evaluated). XGBoost's schema (``doc/model.schema`` of the XGBoost repository) gives
per tree ``left_children``/``right_children`` (-1 at leaves), ``split_indices``,
``split_conditions`` (the threshold, or the leaf value at a leaf, learning rate included),
``default_left`` (where a missing value goes), ``sum_hessian`` (the cover XGBoost's own TreeSHAP
weighs nodes with) and ``loss_changes`` (the split gains ``get_score("total_gain")`` sums).

Routing: XGBoost casts a row to float32 and goes left when ``x < t`` (float32 threshold), a
missing value (NaN, or the wrapper's ``missing``) to the default child. Rows are coded by rank
(:class:`~harness.forest.coding.ThresholdCoding`, rule ``"<"``, float32) and NaN keeps its
``default_left`` direction, so every kernel routes as XGBoost does.

Output: the raw margin ``base_margin + Σ leaves`` (``predict(output_margin=True)``). XGBoost
>= 2 stores ``base_score`` in the objective's output space (a probability for
``binary:logistic``); it is mapped to the margin by the objective's link, which is why only
the objectives in :data:`OBJECTIVES` are read. Refused: dart and gblinear boosters,
categorical splits, multi-output trees (``multi_strategy="multi_output_tree"``, several
targets or quantiles), and every other objective.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.errors import BadInputError
from harness.forest.boosted import (
    ParsedBoosterAdapter,
    ParsedModel,
    RawTree,
    boosted_fields,
    boosted_trees,
    threshold_coding,
)


def _logit(p: float) -> float:
    if not 0.0 < p < 1.0:
        raise BadInputError(f"The XGBoost model's base_score {p} is not a probability in (0, "
                            "1), as its logistic objective requires.")
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class Objective:
    """How an objective's margin relates to the model's output."""

    classifier: bool
    link: str
    to_margin: Any  # base_score (as stored) -> margin


_IDENTITY = Objective(False, "identity", float)
#: objectives read exactly (base_score's link to the margin as XGBoost's ProbToMargin)
OBJECTIVES: dict[str, Objective] = {
    "reg:squarederror": _IDENTITY,
    "reg:squaredlogerror": _IDENTITY,
    "reg:pseudohubererror": _IDENTITY,
    "reg:absoluteerror": _IDENTITY,
    "reg:quantileerror": _IDENTITY,
    "binary:logistic": Objective(True, "logistic", _logit),
    # logitraw's base_score is its margin (measured: XGBoost 3.2 adds it as stored)
    "binary:logitraw": Objective(True, "identity", float),
    "multi:softprob": Objective(True, "softmax", float),
    "multi:softmax": Objective(True, "softmax", float),
}




def _is_booster(model: Any) -> bool:
    return type(model).__name__ == "Booster"


def _booster(model: Any) -> Any:
    if _is_booster(model):
        return model
    try:
        return model.get_booster()
    except Exception as exc:  # xgboost's NotFittedError, raised before fit()
        raise BadInputError(f"The {type(model).__name__} is not fitted; call fit() "
                            "first.") from exc


def _rounds(model: Any, booster: Any) -> int:
    """Boosting rounds the model predicts with: the wrapper's ``best_iteration + 1`` after
    early stopping (its ``predict`` default), every round for a Booster (``Booster.predict``)."""
    total = booster.num_boosted_rounds()
    if _is_booster(model):
        return total
    best = getattr(model, "best_iteration", None)  # AttributeError without early stopping
    return total if best is None else min(total, int(best) + 1)


def _floats(text: str) -> np.ndarray:
    """``"[1E-1,2E-1]"`` (XGBoost >= 3) or ``"1E-1"`` as floats."""
    return np.array([float(v) for v in text.strip("[]").split(",")], dtype=np.float64)


def _refuse(model: Any, what: str) -> BadInputError:
    return BadInputError(f"This {type(model).__name__} has {what}, which the harness does not "
                         "read; it reads gbtree boosters with numerical splits, one output per "
                         f"class, and the objectives {', '.join(OBJECTIVES)}.")


def _raw_tree(model: Any, tree: dict, column: int) -> RawTree:
    if any(tree.get("split_type", ())) or tree.get("categories_nodes"):
        raise _refuse(model, "categorical splits")
    if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise _refuse(model, "multi-output trees (multi_strategy='multi_output_tree')")
    left = np.asarray(tree["left_children"], dtype=np.int64)
    conditions = np.asarray(tree["split_conditions"], dtype=np.float64)
    return RawTree(
        left=left, right=np.asarray(tree["right_children"], dtype=np.int64),
        feature=np.asarray(tree["split_indices"], dtype=np.int64), threshold=conditions,
        leaf_value=np.where(left < 0, conditions, 0.0),
        cover=np.asarray(tree["sum_hessian"], dtype=np.float64),
        gain=np.asarray(tree["loss_changes"], dtype=np.float64),
        missing_left=np.asarray(tree["default_left"], dtype=bool), column=column,
    )


def _parse(model: Any, signature: tuple) -> ParsedModel:
    booster = _booster(model)
    learner = json.loads(booster.save_raw("json"))["learner"]
    kind = learner["gradient_booster"]["name"]
    if kind != "gbtree":
        raise _refuse(model, f"a {kind!r} booster")
    params = learner["learner_model_param"]
    if int(params.get("num_target", "1")) > 1:
        raise _refuse(model, f"{params['num_target']} targets (multi-output trees)")
    name = learner["objective"]["name"]
    if name not in OBJECTIVES:
        raise _refuse(model, f"the objective {name!r}")
    objective = OBJECTIVES[name]
    n_classes = max(int(params.get("num_class", "0")), 1)
    n_values = n_classes if n_classes > 2 else 1
    base = np.array([objective.to_margin(b) for b in _floats(params["base_score"])])
    base = np.broadcast_to(base, (n_values,)).astype(np.float64)
    # XGBoost adds the margin in float32
    base = base.astype(np.float32).astype(np.float64)

    gbtree = learner["gradient_booster"]["model"]
    indptr = gbtree.get("iteration_indptr")
    n_used = (int(indptr[_rounds(model, booster)]) if indptr is not None
              else len(gbtree["trees"]))  # XGBoost < 2 has no indptr (nor early-stop slicing)
    groups = gbtree["tree_info"][:n_used]
    raws = [_raw_tree(model, tree, int(group) if n_values > 1 else 0)
            for tree, group in zip(gbtree["trees"][:n_used], groups)]
    if not raws:
        raise BadInputError(f"The {type(model).__name__} has no trees.")
    n_features = int(params["num_feature"])
    coding = threshold_coding(raws, n_features, rule="<", precision="float32")
    trees = boosted_trees(raws, coding, n_values, scale=float(len(raws)), base=base)
    classes = getattr(model, "classes_", None)
    if objective.classifier and classes is None:
        classes = np.arange(max(n_classes, 2))
    describe = boosted_fields(library=XGBoostAdapter.library, kind=type(model).__name__,
                              classifier=objective.classifier, n_features=n_features,
                              n_trees=len(raws), classes=classes, impurity_unit="gain",
                              link=objective.link)
    # the wrapper's ``missing`` value, read as NaN by XGBoost
    missing = float(getattr(model, "missing", np.nan)) if not _is_booster(model) else np.nan
    return ParsedModel(signature, describe, trees, coding, missing=missing)


class XGBoostAdapter(ParsedBoosterAdapter):
    """Reads fitted ``xgboost.Booster`` objects and XGBoost's scikit-learn regressors and
    classifiers (see the module docstring)."""

    library = "xgboost"
    package = "xgboost"
    description = "XGBoost Booster, XGBRegressor, XGBClassifier (gbtree)"
    no_inbag = "its row subsampling is not recorded"

    @classmethod
    def accepts(cls, model: Any) -> bool:
        # by module name: ``import harness`` never imports xgboost
        return (type(model).__module__.split(".")[0] == "xgboost"
                and (_is_booster(model) or hasattr(model, "get_booster")))

    @classmethod
    def booster_feature_names(cls, model: Any) -> list[str] | None:
        """A Booster's ``feature_names`` (set when fitted on a frame or named DMatrix)."""
        names = model.feature_names if _is_booster(model) else None
        return None if names is None else [str(name) for name in names]

    @classmethod
    def parse(cls, model: Any, signature: tuple) -> ParsedModel:
        return _parse(model, signature)

    @classmethod
    def trees_signature(cls, model: Any) -> tuple:
        booster = _booster(model)
        return (None if booster is model else booster, booster.num_boosted_rounds(),
                _rounds(model, booster))

    @classmethod
    def predict_output(cls, model: Any, X: np.ndarray) -> np.ndarray:
        """XGBoost's own raw margin, ``predict(output_margin=True)``."""
        if _is_booster(model):
            import xgboost

            return model.predict(xgboost.DMatrix(np.asarray(X)), output_margin=True)
        return model.predict(np.asarray(X), output_margin=True)

    @classmethod
    def encode_rows(cls, model: Any, X: np.ndarray) -> np.ndarray:
        """Rank codes of the float32 rows; the wrapper's ``missing`` value becomes NaN (XGBoost
        compares it with the float32 cast of each value)."""
        state = XGBoostAdapter.parsed(model)
        X = np.asarray(X, dtype=np.float64)
        if not math.isnan(state.missing):
            X = np.where(X.astype(np.float32) == np.float32(state.missing), np.nan, X)
        return state.coding.encode(X)
