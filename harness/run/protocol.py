"""The explain protocol, one for ``harness.explain`` and for every cell of a run.

1. validate the inputs (:func:`harness.run.inputs.validate_explain_inputs`: shapes, finite
   values, column names against the fit, y, weights, seed);
2. check the method's requirements (optional packages: :class:`NotInstalledError`) and its
   skip reasons (:class:`MethodSkipped`);
3. ``prepare()`` (imports and kernel compilation, never timed);
4. the timed ``explain``, seeded with ``np.random.default_rng(seed)``; the base class fills in
   and checks the :class:`Importances` (scope, feature names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.errors import MethodSkipped, NotInstalledError
from harness.core.method import MODEL_CAPABILITIES, Method
from harness.core.types import Importances
from harness.forest.view import forest_view
from harness.run.inputs import validate_explain_inputs


@dataclass
class ExplainRequest:
    """What a method is asked to explain, before validation: rows, targets, weights, names."""

    X: Any
    y: Any = None
    sample_weight: Any = None
    feature_names: Sequence[str] | None = None


def run_protocol(method: Method, model: Any, request: ExplainRequest, seed: int = 0,
                 progress: Callable[[float], None] | None = None) -> Importances:
    """Validate, check, prepare and run ``method`` on ``model`` (see the module docstring).

    Raises
    ------
    BadInputError
        When an input breaks the rules (the message names what is allowed and what was got).
    NotInstalledError
        When an optional package the method needs is missing.
    MethodSkipped
        When the method declines this model or data (the reason says why).
    """
    data = validate_explain_inputs(model, request.X, request.y,
                                   sample_weight=request.sample_weight, seed=seed,
                                   feature_names=request.feature_names)
    missing = method.missing_packages()
    if missing:
        raise NotInstalledError(f"{method.name} needs {', '.join(missing)}; install it with "
                                f"{method.install_hint()}.")
    reason = missing_capability(method, model) or method.skip(model, data)
    if reason:
        raise MethodSkipped(reason)
    method.prepare()
    data.progress = progress
    return method.explain(model, data, np.random.default_rng(seed))


def missing_capability(method: Method, model: Any) -> str | None:
    """Reason to skip when the model lacks something ``method.model_needs`` lists."""
    view = forest_view(model)
    for need in method.model_needs:
        if need not in view.capabilities:
            return (f"{method.name} needs {MODEL_CAPABILITIES[need]}; this "
                    f"{view.kind} ({view.library}) has none.")
    return None
