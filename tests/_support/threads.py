"""Run a call on a given number of numba threads (the kernels' task threads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba


def on_threads(count: int, call: Callable[[], Any]) -> Any:
    """``call()`` with ``numba.set_num_threads(count)``, the previous count restored after."""
    before = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        return call()
    finally:
        numba.set_num_threads(before)
