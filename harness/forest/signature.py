"""Whether a cached reading of a fitted model still describes it: its fitted-state signature.

An adapter's ``trees_signature(model)`` returns the objects a fit creates (scikit-learn's
``tree_`` of each tree, a boosting library's booster) and the counts that an in-place update
changes (boosting rounds). A cache (:func:`harness.forest.view.forest_view`, a boosted
adapter's parsed dump) keeps that tuple beside what it read, and reads again unless
:func:`same_fitted_state` holds.

Objects are compared by identity while the cache holds them: a refit frees the old ones only
after the cache lets go, so a new object cannot take a freed one's address. Comparing their
``id`` values alone was not enough: a scikit-learn tree refitted in place kept its ``id``
(the model is its own only tree), and the harness explained it with the trees of the
previous fit. A signature must not hold the model itself (the caches are keyed weakly by
it): a model that is its own fitted state (an XGBoost or LightGBM ``Booster``) leaves it out.
"""

from __future__ import annotations

import operator
from typing import Any

_VALUES = (int, float, str, bool, type(None))


def _same(old: Any, new: Any) -> bool:
    if isinstance(old, _VALUES):
        return type(old) is type(new) and old == new
    return old is new


def same_fitted_state(old: tuple, new: tuple) -> bool:
    """Whether two ``trees_signature`` tuples are of the same fit: the same objects, by
    identity, and equal counts, position by position (the same objects throughout, the
    common case, is checked first at C speed: 500 trees in about 5 us)."""
    return len(old) == len(new) and (all(map(operator.is_, old, new))
                                     or all(map(_same, old, new)))
