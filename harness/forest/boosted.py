"""From a boosting library's node arrays to :class:`FlatTree`: what the XGBoost, LightGBM and
HistGradientBoosting adapters share.

An adapter parses its library's own model dump into one :class:`RawTree` per tree (node ids as
the library numbers them, root 0) and hands them to :func:`boosted_trees`, which

- renumbers the nodes breadth first from the root (children then have larger ids than their
  parent, the order the kernels rely on; nodes a library keeps but no longer reaches, such as
  XGBoost's pruned ones, are dropped);
- writes the ENSEMBLE CONVENTION of :class:`harness.forest.view.ForestView`: the view's output
  is the *mean* over trees of their values, so tree t's value in its output column is
  ``scale * leaf + base`` (``scale`` = number of view trees for a summed model) and ``base`` in
  the others;
- gives each internal node the cover-weighted mean of its children's values, computed as
  XGBoost's ``FillNodeMeanValues`` does (``(v_L c_L + v_R c_R) / c_t``, with the node's own
  cover): the value Saabas' path differences and TreeSHAP's expected value are built from;
- fills ``impurity`` with pseudo-impurities whose weighted decreases are the library's split
  gains, so that :func:`harness.forest.flat.tree_mdi` returns each tree's summed gain per
  feature (boosting libraries keep no node impurity);
- writes thresholds in the rank coding (:class:`harness.forest.coding.ThresholdCoding`) that
  the adapter's ``encode_rows`` codes rows with.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harness.core.errors import BadInputError
from harness.forest.coding import ThresholdCoding
from harness.forest.flat import FlatTree
from harness.forest.signature import same_fitted_state

#: feature and threshold written at leaves (scikit-learn's TREE_UNDEFINED)
UNDEFINED = -2


@dataclass
class RawTree:
    """One tree as its library stores it (leaves have ``left == -1``; root is node 0).

    ``threshold`` is in the library's own units, ``leaf_value`` the library's leaf output
    (learning rate applied), ``cover`` what the library's own TreeSHAP weighs nodes with,
    ``gain`` the split gain of internal nodes, ``missing_left`` where NaN goes at each node
    (after the adapter's row coding), ``column`` the output the tree adds to.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    leaf_value: np.ndarray
    cover: np.ndarray
    gain: np.ndarray
    missing_left: np.ndarray
    column: int = 0


def threshold_coding(trees: list[RawTree], n_features: int, rule: str,
                     precision: str) -> ThresholdCoding:
    """The rank coding of every split threshold of ``trees``."""
    features, thresholds = [], []
    for tree in trees:
        internal = tree.left >= 0
        features.append(tree.feature[internal])
        thresholds.append(tree.threshold[internal])
    return ThresholdCoding.from_splits(
        n_features, np.concatenate(features) if features else np.zeros(0, np.int64),
        np.concatenate(thresholds) if thresholds else np.zeros(0), rule, precision)


def _breadth_first(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Library node ids in breadth-first order from the root (reachable nodes only)."""
    order, frontier = [], np.array([0])
    while frontier.size:
        order.append(frontier)
        inner = frontier[left[frontier] >= 0]
        frontier = np.column_stack((left[inner], right[inner])).ravel()
    return np.concatenate(order)


def node_means(left: np.ndarray, right: np.ndarray, cover: np.ndarray,
               leaf_value: np.ndarray) -> np.ndarray:
    """Node values with each internal node the cover-weighted mean of its children
    (``(v_L c_L + v_R c_R) / c_t``, XGBoost's ``FillNodeMeanValues``; shap's
    ``compute_expectations`` divides by ``c_L + c_R``, the same where covers add up); children
    ids exceed the parent's. Leaves keep ``leaf_value``."""
    mean = np.array(leaf_value, dtype=np.float64)
    for t in np.flatnonzero(left >= 0)[::-1]:
        lo, hi = left[t], right[t]
        mean[t] = ((mean[lo] * cover[lo] + mean[hi] * cover[hi]) / cover[t] if cover[t] > 0
                   else 0.0)
    return mean


def boosted_values(node_value: np.ndarray, column: int, base: np.ndarray,
                   scale: float) -> np.ndarray:
    """(n_nodes, n_values) values of one summed tree in the view's convention: ``base``
    everywhere, plus ``scale * node_value`` in the tree's own output ``column``."""
    value = np.tile(np.asarray(base, dtype=np.float64), (np.size(node_value), 1))
    value[:, column] += scale * np.asarray(node_value, dtype=np.float64)
    return value


def boosted_tree(raw: RawTree, coding: ThresholdCoding, n_values: int, scale: float,
                 base: np.ndarray) -> FlatTree:
    """One :class:`FlatTree` in the view's conventions (see the module docstring).

    Parameters
    ----------
    raw : RawTree
    coding : ThresholdCoding
        The model's coding; the tree's thresholds are written as their ranks.
    n_values : int
        Output columns of the view (1, or the number of classes).
    scale : float
        Leaf values are multiplied by it (the number of view trees for a summed model).
    base : ndarray of shape (n_values,)
        The model's base score in margin space, added to every node value.
    """
    order = _breadth_first(raw.left, raw.right)
    new_id = np.full(raw.left.size, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    is_leaf = raw.left[order] < 0
    left = np.where(is_leaf, -1, new_id[np.maximum(raw.left[order], 0)])
    right = np.where(is_leaf, -1, new_id[np.maximum(raw.right[order], 0)])
    feature = np.where(is_leaf, UNDEFINED, raw.feature[order]).astype(np.int64)
    threshold = np.full(order.size, float(UNDEFINED))
    inner = np.flatnonzero(~is_leaf)
    threshold[inner] = coding.code_thresholds(feature[inner], raw.threshold[order][inner])
    cover = np.asarray(raw.cover[order], dtype=np.float64)
    gain = np.where(is_leaf, 0.0, raw.gain[order]).astype(np.float64)

    # children have larger ids: one reverse sweep fills every subtree quantity
    mean = node_means(left, right, cover, np.where(is_leaf, raw.leaf_value[order], 0.0))
    gain_below = gain.copy()
    for t in inner[::-1]:
        gain_below[t] += gain_below[left[t]] + gain_below[right[t]]
    # w_t i_t - w_L i_L - w_R i_R = w_0 * gain_t, so tree_mdi (divided by w_0) sums the gains
    impurity = np.divide(cover[0] * gain_below, cover, out=np.zeros(order.size),
                         where=cover > 0)

    value = boosted_values(mean, raw.column, base, scale)
    depth = np.zeros(order.size, dtype=np.int64)
    for t in inner:
        depth[left[t]] = depth[right[t]] = depth[t] + 1
    return FlatTree(
        left=left, right=right, feature=feature, threshold=threshold, impurity=impurity,
        weighted_n=cover, value=value.reshape(order.size, n_values), max_depth=int(depth.max()),
        missing_left=np.asarray(raw.missing_left[order], dtype=bool),
    )


def boosted_trees(raws: list[RawTree], coding: ThresholdCoding, n_values: int, scale: float,
                  base: np.ndarray) -> list[FlatTree]:
    """:func:`boosted_tree` of every tree."""
    return [boosted_tree(raw, coding, n_values, scale, base) for raw in raws]


def boosted_fields(*, library: str, kind: str, classifier: bool, n_features: int,
                   n_trees: int, classes: np.ndarray | None, impurity_unit: str, link: str,
                   capabilities: frozenset[str] = frozenset(),
                   routes_missing: bool = True) -> dict[str, Any]:
    """The :class:`~harness.forest.view.ForestView` fields of a boosted model: no bootstrap,
    no class weights, its margin (classifiers) or prediction (regressors) as the output."""
    return {
        "library": library, "kind": kind, "classifier": classifier,
        "n_features": int(n_features), "n_trees": int(n_trees),
        "classes": None if classes is None else np.asarray(classes),
        "impurity_unit": impurity_unit, "bootstrap": False,
        "output_unit": "margin" if classifier else "prediction", "link": link,
        "capabilities": capabilities, "routes_missing": routes_missing,
    }


@dataclass
class ParsedModel:
    """Everything an adapter read from one model's dump, kept while the model lives."""

    signature: tuple
    describe: dict
    trees: list[FlatTree]
    coding: ThresholdCoding
    #: the library's own missing-value reading, used by the adapter's ``encode_rows``
    missing: Any = None


class ParsedBoosterAdapter:
    """Base of the adapters that parse a library's model dump once per fitted model
    (XGBoost, LightGBM, HistGradientBoosting): ``check``, ``describe`` and ``flat_trees``
    read the parsed dump, which a refit (a new ``trees_signature``) parses again. A subclass
    sets ``library``,
    ``description`` and ``no_inbag`` and implements ``accepts``, ``parse``,
    ``trees_signature``, ``predict_output`` and ``encode_rows``."""

    library: ClassVar[str]
    description: ClassVar[str]
    no_inbag: ClassVar[str]  # why the model keeps no in-bag rows
    _parsed: ClassVar[weakref.WeakKeyDictionary]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._parsed = weakref.WeakKeyDictionary()

    @classmethod
    def parse(cls, model: Any, signature: tuple) -> ParsedModel:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def trees_signature(cls, model: Any) -> tuple:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def booster_feature_names(cls, model: Any) -> list[str] | None:
        """The column names a raw booster keeps of its fit (None: it keeps none, or the model
        is a scikit-learn wrapper, whose ``feature_names_in_`` says)."""
        return None

    @classmethod
    def name_as_fitted(cls, name: str) -> str:
        """A column name as the library stores it in the fitted model."""
        return name

    @classmethod
    def parsed(cls, model: Any) -> ParsedModel:
        """The model's parsed dump, read once per fitted model."""
        signature = cls.trees_signature(model)
        cached = cls._parsed.get(model)
        if cached is None or not same_fitted_state(cached.signature, signature):
            cached = cls._parsed[model] = cls.parse(model, signature)
        return cached

    @classmethod
    def check(cls, model: Any) -> None:
        cls.parsed(model)

    @classmethod
    def describe(cls, model: Any) -> dict:
        return dict(cls.parsed(model).describe)

    @classmethod
    def flat_trees(cls, model: Any) -> list[FlatTree]:
        return cls.parsed(model).trees

    @classmethod
    def inbag_counts(cls, model: Any) -> np.ndarray:
        raise BadInputError(f"A {type(model).__name__} ({cls.library}) keeps no in-bag rows "
                            f"({cls.no_inbag}); the OOB methods need a bagged scikit-learn "
                            "forest.")
