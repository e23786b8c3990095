"""The explain protocol, one for ``harness.explain`` and for every cell of a run.

1. validate the inputs (:func:`harness.run.inputs.validate_explain_inputs`: shapes, finite
   values, column names against the fit, y, weights, seed);
2. check the method's requirements (the optional packages of its class and of its
   parameters, :meth:`Method.needed_packages`: :class:`NotInstalledError`) and its skip
   reasons (:class:`MethodSkipped`);
3. ``prepare()`` and the import of those packages (kernel compilation, never timed);
4. the timed ``explain``, seeded with ``np.random.default_rng(seed)``; the base class fills in
   and checks the :class:`Importances` (scope, feature names). A ``rows_independent`` local
   method explains the rows in blocks of :func:`row_block` rows, so that its memory is the
   output, the forest and one block's temporaries (``ROW_BLOCK_BYTES``), whatever n.

The model's fitted state is checked once per call (:func:`harness.forest.view.one_reading`):
every later ``forest_view`` of it in the call returns that reading.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.errors import MethodSkipped, NotInstalledError
from harness.core.method import MODEL_CAPABILITIES, Method
from harness.core.types import Importances
from harness.forest.view import forest_view, one_reading
from harness.run.compile import prepare_from_cache
from harness.run.inputs import validate_explain_inputs

#: Bytes of one block's float64 values (rows x features x outputs): the temporaries of a block
#: (the rows coded as float32, the kernel's output, its rescaled copy, a classifier's choice
#: of one class) are a few times this (12.6 MB for local MDI and Saabas, 19 MB for TreeSHAP at
#: 20 features, measured by ``bench --memory``), whatever the number of rows explained. 8 MiB
#: is 52 416 rows of 20 features (a multiple of 64); the per-call work of the kernels (tree
#: tables, a background's directions) is then spread over so many rows that it does not
#: show: blocks of 1024 rows (path-dependent TreeSHAP) or 256 rows (interventional) cost the
#: same CPU time as one call, within the 5 % noise of a busy machine (100 trees of depth 12,
#: one thread).
ROW_BLOCK_BYTES = 8 * 2**20


@dataclass
class ExplainRequest:
    """What a method is asked to explain, before validation: rows, targets, weights, names."""

    X: Any
    y: Any = None
    sample_weight: Any = None
    feature_names: Sequence[str] | None = None


def run_protocol(method: Method, model: Any, request: ExplainRequest, seed: int = 0,
                 progress: Callable[[float], None] | None = None,
                 block_rows: int | None = None) -> Importances:
    """Validate, check, prepare and run ``method`` on ``model`` (see the module docstring).

    ``block_rows`` overrides :func:`row_block` (rows per block of a ``rows_independent``
    method; the values do not depend on it).

    Raises
    ------
    BadInputError
        When an input breaks the rules (the message names what is allowed and what was got).
    NotInstalledError
        When an optional package the method needs is missing.
    MethodSkipped
        When the method declines this model or data (the reason says why).
    """
    with one_reading(model):  # nothing refits the model during one explain
        data = validate_explain_inputs(model, request.X, request.y,
                                       sample_weight=request.sample_weight, seed=seed,
                                       feature_names=request.feature_names)
        needed = method.needed_packages()
        missing = method.missing_packages(needed)
        if missing:
            raise NotInstalledError(f"{method!r} needs {', '.join(missing)}; install it with "
                                    f"{method.install_hint(needed)}.")
        reason = missing_capability(method, model) or method.skip(model, data)
        if reason:
            raise MethodSkipped(reason)
        prepare_from_cache(type(method))
        for package in needed:  # those its parameters chose (prepare() imported requires),
            if package not in method.requires:  # before the clock too
                importlib.import_module(package)
        data.progress = progress
        if method.rows_independent and block_rows is None:
            block_rows = row_block(model, data.X.shape[1], method)
        result = method.explain(model, data, np.random.default_rng(seed),
                                block_rows=block_rows if method.rows_independent else None)
        if result.scope == "local" and data.weighted:
            weights = data.sample_weight
            result.row_weights = (weights if result.sample_index is None
                                  else weights[result.sample_index])
    return result


def row_block(model: Any, n_features: int, method: Method | None = None) -> int:
    """Rows per block such that a block's float64 values take about ``ROW_BLOCK_BYTES``: per
    row, ``method.block_row_values`` (default, and without a method: ``n_features`` x the
    model's outputs, its classes for a classifier); a multiple of 64 rows (whole batches of
    every kernel) when that leaves at least 64."""
    values = method.block_row_values(model, n_features) if method is not None else None
    values = n_features * forest_view(model).n_values if values is None else values
    rows = max(1, ROW_BLOCK_BYTES // (8 * values))
    return rows - rows % 64 if rows >= 64 else rows


def missing_capability(method: Method, model: Any) -> str | None:
    """Reason to skip when the model lacks something ``method.model_needs`` lists."""
    view = forest_view(model)
    for need in method.model_needs:
        if need not in view.capabilities:
            return (f"{method.name} needs {MODEL_CAPABILITIES[need]}; this "
                    f"{view.kind} ({view.library}) has none.")
    return None
