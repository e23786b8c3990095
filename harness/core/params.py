"""Declared, validated parameters (constraints are data, one message format).

Modelled on scikit-learn's ``_param_validation``: a parameter is declared with a default and
one or more constraints; :func:`validate_params` checks user values and raises
:class:`~harness.core.errors.InvalidParameterError` with the message
``The 'n_repeats' parameter of mda_bc must be an int in [1, inf). Got 0 instead.``
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from harness.core.errors import InvalidParameterError


class Constraint:
    """One admissible set of values."""

    def is_satisfied_by(self, value: Any) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Interval(Constraint):
    """Numbers of ``kind`` (``int`` or ``float``) in an interval; ``None`` bounds are infinite."""

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"  # "both", "left", "right", "neither"

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int and not isinstance(value, Integral):
            return False
        if self.kind is float and not isinstance(value, Real):
            return False
        if isinstance(value, float) and math.isnan(value):
            return False
        left_closed = self.closed in ("both", "left")
        right_closed = self.closed in ("both", "right")
        if self.low is not None and (value < self.low or (value == self.low and not left_closed)):
            return False
        if self.high is not None and (
            value > self.high or (value == self.high and not right_closed)
        ):
            return False
        return True

    def describe(self) -> str:
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        low = "-inf" if self.low is None else _fmt(self.low)
        high = "inf" if self.high is None else _fmt(self.high)
        article = "an int" if self.kind is int else "a float"
        return f"{article} in {left}{low}, {high}{right}"


@dataclass(frozen=True)
class Options(Constraint):
    """One of a finite set of strings."""

    values: frozenset[str]

    def __init__(self, values):
        object.__setattr__(self, "values", frozenset(values))

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def describe(self) -> str:
        inner = ", ".join(repr(v) for v in sorted(self.values))
        return f"a str among {{{inner}}}"


class Boolean(Constraint):
    """``True`` or ``False``."""

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "a bool"


class NoneValue(Constraint):
    """The value ``None``."""

    def is_satisfied_by(self, value: Any) -> bool:
        return value is None

    def describe(self) -> str:
        return "None"


class FloatVector(Constraint):
    """A non-empty sequence of finite floats (e.g. regression coefficients)."""

    def is_satisfied_by(self, value: Any) -> bool:
        if not isinstance(value, (list, tuple)) or not value:
            return False
        return all(
            isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v) for v in value
        )

    def describe(self) -> str:
        return "a non-empty list of finite floats"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


@dataclass(frozen=True)
class Param:
    """A declared parameter: default value, constraints (any one must hold) and a doc line."""

    default: Any
    constraints: tuple[Constraint, ...]
    doc: str = ""
    grid_values: tuple = field(default=())

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)


def validate_params(
    owner: str, declared: dict[str, Param], given: dict[str, Any]
) -> dict[str, Any]:
    """Check ``given`` against ``declared`` and return the full, resolved parameter dict.

    Parameters
    ----------
    owner : str
        Name used in messages ("mda_bc", "extra_trees", "led").
    declared : dict of str to Param
        The declared parameters with their defaults and constraints.
    given : dict
        User values; missing ones take their default.

    Raises
    ------
    InvalidParameterError
        For an undeclared name or a value outside the constraints.
    """
    unknown = sorted(set(given) - set(declared))
    if unknown:
        allowed = ", ".join(sorted(declared)) or "none"
        raise InvalidParameterError(
            f"{owner} has no parameter {unknown[0]!r}. Allowed parameters: {allowed}."
        )
    resolved = {}
    for name, param in declared.items():
        value = given.get(name, param.default)
        value = _coerce(value, param)
        if not any(c.is_satisfied_by(value) for c in param.constraints):
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be {param.describe()}. "
                f"Got {value!r} instead."
            )
        resolved[name] = value
    return resolved


def _coerce(value: Any, param: Param) -> Any:
    """Accept an integral float (e.g. 5.0 from a TOML file) where only ints are allowed."""
    if isinstance(value, float) and value.is_integer():
        kinds = {c.kind for c in param.constraints if isinstance(c, Interval)}
        if kinds == {int}:
            return int(value)
    if isinstance(value, list):
        return tuple(value)
    return value
