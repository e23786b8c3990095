"""Derived forms of a fitted forest, built once per model and kept beside it, not on it.

The packed arrays, the in-bag counts and the compact path form of a forest are built the
first time a method needs them and reused by every later call on the same fitted model. They
live in a :class:`weakref.WeakKeyDictionary` keyed by the estimator, so the user's object is
never modified, nothing is pickled along with it, and the forms go when the model goes. A
model fitted again (new trees) gets new forms.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

Form = TypeVar("Form")

_FORMS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _trees_signature(model) -> tuple[int, ...]:
    """Identity of the fitted trees: refitting replaces every tree object."""
    return tuple(id(tree) for tree in getattr(model, "estimators_", ()))


def cached_form(model, name: str, build: Callable[[], Form]) -> Form:
    """The form ``name`` of ``model``, from ``build()`` the first time it is asked for.

    Parameters
    ----------
    model : fitted tree ensemble
        The key (held weakly).
    name : str
        Which form, e.g. ``"packed"``, ``"inbag"``, ``"paths"``.
    build : callable
        Builds the form from the model; called at most once per fitted forest.
    """
    signature = _trees_signature(model)
    forms = _FORMS.get(model)
    if forms is None or forms["__trees__"] != signature:
        forms = {"__trees__": signature}
        _FORMS[model] = forms
    if name not in forms:
        forms[name] = build()
    return forms[name]
