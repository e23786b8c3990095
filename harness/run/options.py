"""The options of ``compare``, checked and normalised in one place.

:func:`harness.run.runner.compare` calls :func:`compare_options` before anything is written; the
command line checks each key of a TOML config with :func:`check_option` as it reads it, so a
config, a flag and a Python call are held to the same rules and get the same messages. Each
check names what is allowed and what was received, in one line, and raises
:class:`~harness.core.errors.BadInputError`.

The rules a plain ``isinstance`` would miss: a bool is not an int (``seeds = [true]``,
``jobs = true``) nor a number of seconds, a str is not a list (``datasets = "iris"`` once ran
the datasets 'i', 'r', 'i', 's'), NaN and infinity are not timeouts (NaN made the process
executor spin), and a grid names each dataset, model, method and seed once.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from pathlib import Path
from typing import Any, NamedTuple

from harness.core.cores import usable_cores
from harness.core.errors import BadInputError
from harness.run.executors import EXECUTORS

#: seeds reach scikit-learn's ``random_state``, which takes [0, 2**32 - 1]
SEED_MAX = 2**32 - 1
#: the longest per-cell timeout: past about 2.1e6 s the process executor's wait overflows
TIMEOUT_MAX = 1e6
EXPLAIN_ON = ("train", "test", "all")
EXECUTOR_NAMES = tuple(sorted(EXECUTORS))


class CompareOptions(NamedTuple):
    """Every option of :func:`harness.run.runner.compare`, checked, in its signature's order."""

    datasets: list | None
    models: list | None
    methods: list | None
    seeds: list[int] | None
    out: Path
    jobs: int
    timeout: float | None
    executor: str
    force: bool
    max_memory: int | float | None
    scheduler: str | None
    explain_on: str
    max_explain: int | None
    reports: bool
    on_event: Callable[[str, Any], None] | None


def _shown(value: Any, limit: int = 120) -> str:
    """``repr(value)`` on one line and at most ``limit`` characters (an array's repr is not)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _is_sequence(value: Any) -> bool:
    """A list, tuple, range or 1-D array: ordered, and not a str, a table or a set."""
    if isinstance(value, (list, tuple, range)):
        return True
    return type(value).__name__ == "ndarray" and getattr(value, "ndim", None) == 1


def _grid_axis(name: str, value: Any) -> list | None:
    if value is None:
        return None
    if not _is_sequence(value):
        raise BadInputError(f"{name} must be a list of specs (such as 'name[param=value]' or "
                            f"a table with a 'name' key), or None for the default grid; got "
                            f"{_shown(value)}.")
    return list(value)


def _seeds(name: str, value: Any) -> list[int] | None:
    allowed = f"{name} must be a list of distinct ints in [0, 2**32 - 1], or None for [0]"
    if value is None:
        return None
    if not _is_sequence(value):
        raise BadInputError(f"{allowed}; got {_shown(value)}.")
    if not all(_is_int(s) and 0 <= s <= SEED_MAX for s in value):
        raise BadInputError(f"{allowed}; got {_shown(list(value))}.")
    seeds = [int(s) for s in value]
    repeated = [s for s, count in Counter(seeds).items() if count > 1]
    if repeated:
        raise BadInputError(f"{allowed}; got {_shown(seeds)}, where {repeated[0]} appears twice "
                            f"(a seed given twice would run its cells twice).")
    return seeds


def _out(name: str, value: Any) -> Path:
    # Path("") is ".", the current folder: an empty path is refused before it becomes one
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise BadInputError(f"{name} must be a non-empty path (str or pathlib.Path) of the run "
                            f"folder; got {_shown(value)}.")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise BadInputError(f"{name} must be a run folder; got {str(path)!r}, which is a "
                            f"file.")
    return path


def _jobs(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        raise BadInputError(f"{name} must be an int >= 1 or None (one per CPU); "
                            f"got {_shown(value)}.")
    return int(value)


def _timeout(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if not _is_number(value) or not 0 < value <= TIMEOUT_MAX:  # NaN fails both comparisons
        raise BadInputError(f"{name} must be a number of seconds in (0, 1e6] or None (no "
                            f"limit); got {_shown(value)}.")
    return float(value)


def _executor(name: str, value: Any) -> str:
    if not isinstance(value, str) or value not in EXECUTOR_NAMES:
        raise BadInputError(f"{name} must be one of {', '.join(EXECUTOR_NAMES)}; "
                            f"got {_shown(value)}.")
    return value


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):  # "false" and 0 are not answers to a yes/no option
        raise BadInputError(f"{name} must be a bool (true or false); got {_shown(value)}.")
    return value


def _max_memory(name: str, value: Any) -> int | float | None:
    if value is None:
        return None
    if not _is_number(value) or not 0 < value < math.inf:
        raise BadInputError(f"{name} must be a number of bytes > 0 or None; got {_shown(value)}.")
    return int(value) if _is_int(value) else float(value)


def _scheduler(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BadInputError(f"{name} must be a Dask scheduler address such as "
                            f"'tcp://host:8786', or None; got {_shown(value)}.")
    return value


def _explain_on(name: str, value: Any) -> str:
    if not isinstance(value, str) or value not in EXPLAIN_ON:
        raise BadInputError(f"{name} must be one of {', '.join(EXPLAIN_ON)}; got {_shown(value)}.")
    return value


def _max_explain(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        raise BadInputError(f"{name} must be a positive int or None; got {_shown(value)}.")
    return int(value)


def _on_event(name: str, value: Any) -> Callable | None:
    if value is not None and not callable(value):
        raise BadInputError(f"{name} must be a callable (kind, payload) or None; "
                            f"got {_shown(value)}.")
    return value


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "datasets": _grid_axis, "models": _grid_axis, "methods": _grid_axis, "seeds": _seeds,
    "out": _out, "jobs": _jobs, "timeout": _timeout, "executor": _executor, "force": _bool,
    "max_memory": _max_memory, "scheduler": _scheduler, "explain_on": _explain_on,
    "max_explain": _max_explain, "reports": _bool, "on_event": _on_event,
}


def check_option(name: str, value: Any) -> Any:
    """Check one option of ``compare`` and return its normalised value.

    Parameters
    ----------
    name : str
        An option of :func:`harness.run.runner.compare` (``seeds``, ``timeout``, ...).
    value
        What was given: a Python value, or a value read from a TOML config.

    Returns
    -------
    The value in its normal form: lists for the grid axes and seeds, a :class:`Path` for
    ``out``, plain ``int`` / ``float`` for numbers (numpy scalars are accepted).

    Raises
    ------
    BadInputError
        When the value is not allowed; the message names what is allowed and what was
        received.
    """
    if name not in _CHECKS:
        raise BadInputError(f"Unknown compare option {name!r}; allowed options: "
                            f"{', '.join(_CHECKS)}.")
    return _CHECKS[name](name, value)


def compare_options(**options: Any) -> CompareOptions:
    """Check every option of ``compare`` (all must be given) and how they combine.

    ``jobs=None`` becomes the cores this process may run on (its CPU affinity). A
    ``scheduler`` is refused unless ``executor`` is ``'dask'``: any other executor would
    ignore it without a word.

    Raises
    ------
    BadInputError
        When one option, or a combination, is not allowed.
    """
    names = CompareOptions._fields
    if set(options) != set(names):  # a caller's mistake, not the user's
        raise TypeError(f"compare_options needs exactly the options {', '.join(names)}; "
                        f"got {', '.join(sorted(options))}.")
    checked = {name: check_option(name, options[name]) for name in names}
    if checked["scheduler"] is not None and checked["executor"] != "dask":
        raise BadInputError(f"scheduler is used only with executor 'dask'; got scheduler "
                            f"{checked['scheduler']!r} with executor {checked['executor']!r}.")
    if checked["jobs"] is None:  # the cores this process may use (its affinity)
        checked["jobs"] = usable_cores()
    return CompareOptions(**checked)


def _identity(item: Any) -> str:
    """What a cell key holds of a dataset, model or method: its name and resolved params
    (as :attr:`harness.run.cells.Cell.key` does; a seed is itself)."""
    name = getattr(item, "forest", None) or getattr(item, "name", None) or repr(item)
    return json.dumps([name, getattr(item, "params", None)], sort_keys=True, default=list)


def reject_repeats(axis: str, items: Iterable[Any]) -> None:
    """Refuse a grid axis (expanded datasets, models or methods) that names one item twice.

    Two specs may expand to one configuration (``mdi`` and ``mdi[normalize=false]``, or a
    grid ``mdi[normalize=[true,false]]`` beside ``mdi``); their cells would share a key, run
    twice and be counted twice.

    Raises
    ------
    BadInputError
        Naming the axis and the configuration given twice.
    """
    seen: set[str] = set()
    for item in items:
        identity = _identity(item)
        if identity in seen:
            raise BadInputError(
                f"{axis} must name each configuration once; got {_shown(item)} twice (specs that "
                f"differ only by parameters at their default values are the same "
                f"configuration).")
        seen.add(identity)
