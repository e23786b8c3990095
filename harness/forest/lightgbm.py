"""The LightGBM adapter: a fitted ``lightgbm.Booster`` or scikit-learn wrapper
(``LGBMRegressor``, ``LGBMClassifier``) read from the booster's own ``dump_model()``.

``Booster.dump_model()`` (LightGBM's ``GBDT::DumpModel``, a JSON document returned as a dict;
nothing is unpickled) gives each tree as nested nodes: ``split_feature``, ``threshold``,
``decision_type``, ``default_left``, ``missing_type``, ``split_gain`` (what
``feature_importance("gain")`` sums) and ``internal_count`` / ``leaf_count`` (the covers
LightGBM's own TreeSHAP, ``Tree::TreeSHAP``, weighs nodes with through ``data_count``), and
``leaf_value`` (shrinkage applied; with ``boost_from_average`` the initial score is already
folded into the first trees' leaves, so the margin is the plain sum of the trees). The default
``dump_model()`` holds the trees that the default ``predict`` uses (up to the best iteration
after early stopping).

Routing, as LightGBM's ``Tree::NumericalDecision`` on a dense row in float64: a value with
``|x| <= kZeroThreshold`` (1e-35f) is read as 0.0 (the dense row is stored sparsely); then at a
node of ``missing_type``

- ``"None"``: NaN is read as 0.0: the coded NaN goes where 0.0 goes (``missing_left`` is
  ``0.0 <= threshold``);
- ``"NaN"``: NaN goes to the default child (``default_left``);
- ``"Zero"``: 0.0 and NaN go to the default child: zero is coded as NaN for such a feature;

and otherwise left when ``x <= threshold``. Rows are coded by rank
(:class:`~harness.forest.coding.ThresholdCoding`, rule ``"<="``, float64). Refused:
categorical splits, linear trees, dart and rf boosting, and objectives other than those in
:data:`OBJECTIVES` (their link is not the identity, the logistic or the softmax).
"""

from __future__ import annotations

import re
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

#: LightGBM's kZeroThreshold (a float literal, read as a double)
ZERO_THRESHOLD = float(np.float32(1e-35))

#: objective (first word of the dump's ``objective``) -> (classifier, link)
OBJECTIVES: dict[str, tuple[bool, str]] = {
    "regression": (False, "identity"),
    "regression_l1": (False, "identity"),
    "huber": (False, "identity"),
    "fair": (False, "identity"),
    "quantile": (False, "identity"),
    "mape": (False, "identity"),
    "binary": (True, "logistic"),
    "multiclass": (True, "softmax"),
}




def _is_booster(model: Any) -> bool:
    return type(model).__name__ == "Booster"


def _booster(model: Any) -> Any:
    if _is_booster(model):
        return model
    try:
        return model.booster_
    except Exception as exc:  # LightGBM's NotFittedError, raised before fit()
        raise BadInputError(f"The {type(model).__name__} is not fitted; call fit() "
                            "first.") from exc


def _refuse(model: Any, what: str) -> BadInputError:
    return BadInputError(f"This {type(model).__name__} has {what}, which the harness does not "
                         "read; it reads gbdt/goss boosting with numerical splits and the "
                         f"objectives {', '.join(OBJECTIVES)} (binary with sigmoid:1).")


def _objective(model: Any, text: str) -> tuple[bool, str]:
    words = text.split()
    name = words[0] if words else "custom"
    if name not in OBJECTIVES:
        raise _refuse(model, f"the objective {text!r}")
    # reg_sqrt predicts the square of the margin; binary's sigmoid scales it
    if "sqrt" in words[1:] or (name == "binary" and "sigmoid:1" not in words[1:]):
        raise _refuse(model, f"the objective {text!r}")
    return OBJECTIVES[name]


def _boosting(booster: Any) -> str:
    """The boosting type, from the parameters the model string records."""
    text = booster.model_to_string(num_iteration=1)  # the parameters, one round
    found = re.search(r"^\[boosting: (\w+)\]$", text, flags=re.MULTILINE)
    return found.group(1) if found else "gbdt"


def _raw_tree(model: Any, tree: dict, column: int) -> tuple[RawTree, np.ndarray]:
    """One dumped tree, and the ``missing_type`` of each of its nodes."""
    if tree.get("num_cat", 0):
        raise _refuse(model, "categorical splits")
    nodes: list[dict] = []
    stack = [tree["tree_structure"]]
    while stack:  # depth-first ids; boosted_tree renumbers breadth first
        node = stack.pop()
        nodes.append(node)
        if "split_feature" in node:
            stack += [node["right_child"], node["left_child"]]
    ids = {id(node): k for k, node in enumerate(nodes)}
    n = len(nodes)
    left, right = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    feature, threshold = np.zeros(n, np.int64), np.zeros(n)
    leaf_value, cover, gain = np.zeros(n), np.ones(n), np.zeros(n)
    missing_left = np.zeros(n, dtype=bool)
    missing_type = np.array([""] * n, dtype=object)
    for k, node in enumerate(nodes):
        if "split_feature" not in node:
            if "leaf_coeff" in node:
                raise _refuse(model, "linear trees (linear_tree=True)")
            leaf_value[k] = node["leaf_value"]
            cover[k] = node.get("leaf_count", 1)  # a one-leaf tree may have no count
            continue
        if node["decision_type"] != "<=":
            raise _refuse(model, f"{node['decision_type']!r} (categorical) splits")
        left[k], right[k] = ids[id(node["left_child"])], ids[id(node["right_child"])]
        feature[k], threshold[k] = node["split_feature"], float(node["threshold"])
        cover[k], gain[k] = node["internal_count"], node["split_gain"]
        missing_type[k] = node["missing_type"]
        missing_left[k] = (threshold[k] >= 0.0 if node["missing_type"] == "None"
                           else bool(node["default_left"]))
    return (RawTree(left, right, feature, threshold, leaf_value, cover, gain, missing_left,
                    column), missing_type)


def _zero_features(model: Any, raws: list[RawTree], missing_types: list[np.ndarray],
                   n_features: int) -> np.ndarray:
    """Features split with ``missing_type`` Zero, refusing one that also has NaN splits
    (0.0 and NaN would need two different directions under one code)."""
    kinds: list[set] = [set() for _ in range(n_features)]
    for raw, types in zip(raws, missing_types):
        for j, kind in zip(raw.feature[raw.left >= 0], types[raw.left >= 0]):
            kinds[j].add(kind)
    if any({"Zero", "NaN"} <= k for k in kinds):
        raise _refuse(model, "a feature split with both missing_type Zero and NaN")
    return np.array(["Zero" in k for k in kinds], dtype=bool)


def _parse(model: Any, signature: tuple) -> ParsedModel:
    booster = _booster(model)
    dump = booster.dump_model()
    boosting = _boosting(booster)
    if boosting not in ("gbdt", "goss"):
        # rf: predict averages the trees while raw_score and pred_contrib sum them (LightGBM
        # 4.7, measured), so no one margin is the model's
        raise _refuse(model, f"{boosting!r} boosting")
    classifier, link = _objective(model, str(dump.get("objective", "custom")))
    per_round = int(dump["num_tree_per_iteration"])
    n_values = per_round if classifier and per_round > 1 else 1
    read = [_raw_tree(model, tree, t % per_round if n_values > 1 else 0)
            for t, tree in enumerate(dump["tree_info"])]
    raws = [raw for raw, _ in read]
    if not raws:
        raise BadInputError(f"The {type(model).__name__} has no trees.")
    n_features = int(dump["max_feature_idx"]) + 1
    zero_missing = _zero_features(model, raws, [types for _, types in read], n_features)
    coding = threshold_coding(raws, n_features, rule="<=", precision="float64")
    # the view's mean over trees is the margin: each summed tree counts n_trees times
    trees = boosted_trees(raws, coding, n_values, scale=float(len(raws)),
                          base=np.zeros(n_values))
    classes = getattr(model, "classes_", None) if not _is_booster(model) else None
    if classifier and classes is None:
        classes = np.arange(max(n_values, 2))
    describe = boosted_fields(library=LightGBMAdapter.library, kind=type(model).__name__,
                              classifier=classifier, n_features=n_features,
                              n_trees=len(raws), classes=classes, impurity_unit="gain",
                              link=link)
    # features whose splits send 0.0 the default way
    return ParsedModel(signature, describe, trees, coding, missing=zero_missing)


class LightGBMAdapter(ParsedBoosterAdapter):
    """Reads fitted ``lightgbm.Booster`` objects and LightGBM's scikit-learn regressors and
    classifiers (see the module docstring)."""

    library = "lightgbm"
    package = "lightgbm"
    description = "LightGBM Booster, LGBMRegressor, LGBMClassifier"
    no_inbag = "its bagging is not recorded"

    @classmethod
    def accepts(cls, model: Any) -> bool:
        # by module name: ``import harness`` never imports lightgbm
        return (type(model).__module__.split(".")[0] == "lightgbm"
                and (_is_booster(model) or hasattr(model, "booster_")
                     or hasattr(type(model), "booster_")))

    @classmethod
    def booster_feature_names(cls, model: Any) -> list[str] | None:
        """A Booster's ``feature_name()``, unless they are the ``Column_j`` LightGBM gives
        the columns of a fit without names."""
        if not _is_booster(model):
            return None
        names = [str(name) for name in model.feature_name()]
        return None if names == [f"Column_{j}" for j in range(len(names))] else names

    @classmethod
    def name_as_fitted(cls, name: str) -> str:
        """LightGBM stores a column name with its spaces as underscores ("mean radius" is
        "mean_radius" in ``feature_name()`` and in a wrapper's ``feature_names_in_``)."""
        return name.replace(" ", "_")

    @classmethod
    def parse(cls, model: Any, signature: tuple) -> ParsedModel:
        return _parse(model, signature)

    @classmethod
    def trees_signature(cls, model: Any) -> tuple:
        booster = _booster(model)
        return (None if booster is model else booster, booster.current_iteration(),
                booster.best_iteration)

    @classmethod
    def predict_output(cls, model: Any, X: np.ndarray) -> np.ndarray:
        """LightGBM's own raw score, ``predict(raw_score=True)``."""
        return model.predict(np.asarray(X), raw_score=True)

    @classmethod
    def encode_rows(cls, model: Any, X: np.ndarray) -> np.ndarray:
        """Rank codes in float64 after LightGBM's own reading of the row (module docstring)."""
        state = LightGBMAdapter.parsed(model)
        X = np.array(X, dtype=np.float64)
        X[np.abs(X) <= ZERO_THRESHOLD] = 0.0
        zero = (X == 0.0) & state.missing
        X[zero] = np.nan
        return state.coding.encode(X)
