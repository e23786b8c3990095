"""Ground truth as stored data: a JSON document plus named ``.npy`` arrays, never a pickle.

A run folder is data that anyone may hand to ``harness report``; reading it must not run code.
:func:`encode_truth` splits a :class:`~harness.core.types.GroundTruth` into a JSON text (units,
descriptions, which methods each quantity compares to) and a dict of arrays that the store
writes as ``.npy`` blobs (``allow_pickle=False``); :func:`decode_truth` rebuilds it and refuses
anything that does not have exactly that shape.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from harness.core.types import GroundTruth, TruthVector

FORMAT = "harness-truth/1"


class TruthFormatError(ValueError):
    """Stored ground truth that is not a JSON document of :data:`FORMAT`."""


def encode_truth(truth: GroundTruth) -> tuple[str, dict[str, np.ndarray]]:
    """The JSON text and the named arrays that describe ``truth``.

    Array names are ``relevant`` and ``quantity/<name>``; the JSON refers to them by name.
    """
    arrays = {"relevant": np.asarray(truth.relevant, dtype=bool)}
    quantities = {}
    for name, vector in truth.quantities.items():
        arrays[f"quantity/{name}"] = np.asarray(vector.values, dtype=float)
        quantities[name] = {"unit": vector.unit, "description": vector.description,
                            "compares_to": list(vector.compares_to)}
    document = {"format": FORMAT, "var_y": truth.var_y, "quantities": quantities}
    return json.dumps(document, allow_nan=False), arrays


def _field(mapping: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = mapping.get(key)
    if not isinstance(value, kind):
        raise TruthFormatError(f"{where}: {key!r} must be {kind}; got {type(value).__name__}.")
    return value


def decode_truth(text: Any, arrays: dict[str, np.ndarray]) -> GroundTruth:
    """Rebuild a :class:`GroundTruth` from :func:`encode_truth`'s output.

    Raises
    ------
    TruthFormatError
        When ``text`` is not such a JSON document (e.g. bytes of an older, pickled store) or
        an array it names is missing.
    """
    if not isinstance(text, str):
        raise TruthFormatError(
            f"expected a JSON document of format {FORMAT!r}; got {type(text).__name__} "
            "(a store written by an older version holds a pickle, which is never loaded)")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TruthFormatError(f"not valid JSON ({exc})") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TruthFormatError(f"expected format {FORMAT!r}")
    var_y = document.get("var_y")
    if var_y is not None and not isinstance(var_y, int | float):
        raise TruthFormatError(f"var_y must be a number or null; got {var_y!r}")
    quantities = {}
    for name, meta in _field(document, "quantities", dict, "truth").items():
        where = f"quantity {name!r}"
        if not isinstance(meta, dict):
            raise TruthFormatError(f"{where}: expected a table; got {type(meta).__name__}")
        if f"quantity/{name}" not in arrays:
            raise TruthFormatError(f"{where}: its array is missing")
        quantities[name] = TruthVector(
            arrays[f"quantity/{name}"], unit=_field(meta, "unit", str, where),
            description=_field(meta, "description", str, where),
            compares_to=tuple(str(m) for m in _field(meta, "compares_to", list, where)))
    if "relevant" not in arrays:
        raise TruthFormatError("the 'relevant' array is missing")
    return GroundTruth(relevant=np.asarray(arrays["relevant"], dtype=bool),
                       quantities=quantities, var_y=None if var_y is None else float(var_y))
