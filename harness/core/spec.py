"""The ``name[param=value,...]`` syntax shared by the CLI, configs and stable run keys.

``treeshap[perturbation=interventional]`` names one configured method;
``mda_bc[n_repeats=[1,5]]`` names a grid of two. :func:`format_spec` is the inverse, giving the
stable repr the reports label a configuration with: ``parse_spec(format_spec(name, params))``
gives back ``params`` as a grid of one, so a label can be pasted into ``--method``,
``--dataset`` or ``harness.explain``. A list-valued parameter is one value inside the grid's
brackets (``coef=[[1,2]]``), and a string that would read as something else is quoted.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from harness.core.errors import BadInputError

_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_\-]*)\s*(?:\[(.*)\])?\s*$", re.S)


def parse_value(text: str) -> Any:
    """Parse one scalar written on the command line: int, float, bool, None or str."""
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text.startswith("[") and text.endswith("]"):
        return [parse_value(v) for v in _split_top_level(text[1:-1])]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes."""
    parts, depth, current, quote = [], 0, [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0 and not quote:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current))
    return parts


def parse_spec(text: str) -> tuple[str, dict[str, list[Any]]]:
    """Parse ``name[a=1,b=[x,y]]`` into the name and a grid ``{param: [values]}``.

    Raises
    ------
    BadInputError
        When the text does not follow the syntax.
    """
    match = _NAME.match(text)
    if match is None:
        raise BadInputError(
            f"Cannot parse {text!r}: expected name or name[param=value,...], "
            "e.g. treeshap[perturbation=interventional]."
        )
    name, body = match.group(1), match.group(2)
    grid: dict[str, list[Any]] = {}
    for item in _split_top_level(body or ""):
        if "=" not in item:
            raise BadInputError(
                f"Cannot parse {item.strip()!r} in {text!r}: expected param=value."
            )
        key, raw = item.split("=", 1)
        key, raw = key.strip(), raw.strip()
        if not key.isidentifier():
            raise BadInputError(
                f"Cannot parse {item.strip()!r} in {text!r}: {key!r} is not a parameter name."
            )
        if raw.startswith("[") and raw.endswith("]"):
            # a list is a grid of values; a vector-valued parameter is written [[1,2,3]]
            grid[key] = [parse_value(v) for v in _split_top_level(raw[1:-1])]
        else:
            grid[key] = [parse_value(raw)]
    return name, grid


def expand_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a ``{param: [values]}`` grid, in a stable order."""
    keys = sorted(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


_SYNTAX = frozenset(",[]='\"")


def _fmt_value(value: Any) -> str:
    """``value`` as :func:`parse_value` reads it back: a string bare where it would read as
    itself, quoted where it would read as a number, a bool, None or a list, or holds the
    syntax's own characters."""
    if isinstance(value, str):
        if value and value == value.strip() and not _SYNTAX & set(value) \
                and parse_value(value) == value:
            return value
        quote = '"' if "'" in value else "'"
        return f"{quote}{value}{quote}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_fmt_value(v) for v in value) + "]"
    return json.dumps(value)


def _fmt_param(value: Any) -> str:
    """A parameter's value as :func:`parse_spec` reads it back as one value: a list-valued
    parameter gets the grid's own brackets around it (``coef=[[1,2]]``), since ``coef=[1,2]``
    is a grid of two values."""
    text = _fmt_value(value)
    return f"[{text}]" if isinstance(value, (list, tuple)) else text


def format_spec(name: str, params: dict[str, Any]) -> str:
    """Stable repr ``name[a=1,b=x]`` with parameters sorted by name (none: just ``name``)."""
    if not params:
        return name
    inner = ",".join(f"{k}={_fmt_param(params[k])}" for k in sorted(params))
    return f"{name}[{inner}]"
