"""Refuse a subclass that redefines how its library's model predicts.

The harness explains a model through its trees, as its library combines them (the average of a
forest's trees, a boosting model's margin). A user's subclass of a library's model is read as
that model; if it redefines a prediction (``predict``, ``predict_proba``,
``decision_function`` or a private helper of theirs, such as ``_raw_predict``), the
explanation is of the library's prediction, not of the subclass's, and nothing would say so:
Saabas and TreeSHAP would no longer add up to what the model predicts. Such a model is refused
with the name of what it redefines. A subclass that only changes how the model is fitted, or
adds methods of its own (a ``predict_interval``), is read as its library's model.
"""

from __future__ import annotations

from typing import Any

from harness.core.errors import BadInputError

#: Parts of the attribute names that compute a prediction in the libraries read
PREDICTION_NAMES = ("predict", "proba", "decision_function")


def redefined_predictions(model: Any, package: str) -> tuple[str, list[str]]:
    """The library class that ``model``'s class derives from (the first class of its MRO
    defined in ``package``) and the prediction attributes of it that classes outside
    ``package`` define again above it, in MRO order."""
    mro = type(model).__mro__
    index = next((k for k, klass in enumerate(mro)
                  if klass.__module__.partition(".")[0] == package), None)
    if index is None:
        return type(model).__name__, []
    names = [name for klass in mro[:index] for name in vars(klass)
             if any(part in name for part in PREDICTION_NAMES) and hasattr(mro[index], name)]
    return mro[index].__name__, list(dict.fromkeys(names))


def check_prediction_not_redefined(model: Any, package: str, library: str) -> None:
    """Raise :class:`BadInputError` if ``model``'s class redefines a prediction of the class
    of ``package`` (the module of ``library``) that it derives from (see the module
    docstring)."""
    base, names = redefined_predictions(model, package)
    if names:
        raise BadInputError(
            f"{type(model).__name__} derives from {library}'s {base} and redefines "
            f"{', '.join(names)}; the harness explains {base}'s own prediction from its trees, "
            f"which would not be this model's. Explain a {base}, or a subclass that only "
            "changes how it is fitted.")
