"""A kernel whose own file is unchanged is recompiled when a jitted callee or a constant it
imports from another file changes (numba alone would load the old code from its cache:
:mod:`harness.run.kernel_sources`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_HELPER = """
from numba import njit

SCALE = {scale}


@njit(cache=True)
def step(x):
    return x + {increment}
"""
_KERNEL = """
from numba import njit

from stalepkg.helper import SCALE, step


@njit(cache=True)
def run(x):
    return step(x) * SCALE
"""
_METHOD = """
from stalepkg.kernel import run


class Probe:
    name = "probe"

    @classmethod
    def prepare(cls):
        run(1.0)
"""
#: The harness path: kernels made sure of by ``prepare_from_cache`` (a compile worker when
#: the cache is cold or stale), then called.
_THROUGH_HARNESS = """
from harness.run.compile import prepare_from_cache
from stalepkg.method import Probe
prepare_from_cache(Probe)
from stalepkg.kernel import run
print(run(1.0))
"""
#: numba alone: whatever its cache holds.
_NUMBA_ALONE = "from stalepkg.kernel import run\nprint(run(1.0))\n"


def _write_helper(package: Path, scale: int, increment: int) -> None:
    path = package / "helper.py"
    path.write_text(textwrap.dedent(_HELPER.format(scale=scale, increment=increment)))
    later = time.time() + 10 * (scale + increment)  # a new time, whatever the clock's grain
    os.utime(path, (later, later))


def _run(code: str, tmp_path: Path) -> float:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "HARNESS_COMPILE": "lazy",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return float(done.stdout.split()[-1])


def _package(tmp_path: Path) -> Path:
    """The package ``stalepkg`` in ``tmp_path``: helper (SCALE = 3, step adds 1), kernel,
    method."""
    package = tmp_path / "stalepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text(textwrap.dedent(_KERNEL))
    (package / "method.py").write_text(textwrap.dedent(_METHOD))
    _write_helper(package, scale=3, increment=1)
    return package


def test_an_edited_callee_or_constant_in_another_file_is_recompiled(tmp_path):
    package = _package(tmp_path)
    assert _run(_THROUGH_HARNESS, tmp_path) == (1.0 + 1) * 3

    _write_helper(package, scale=3, increment=2)  # the callee changes, run's file does not
    # what the check guards against: numba alone loads run with the old step linked in
    assert _run(_NUMBA_ALONE, tmp_path) == (1.0 + 1) * 3
    assert _run(_THROUGH_HARNESS, tmp_path) == (1.0 + 2) * 3
    assert _run(_NUMBA_ALONE, tmp_path) == (1.0 + 2) * 3  # the cache now holds the new code

    _write_helper(package, scale=4, increment=2)  # an imported constant changes
    assert _run(_THROUGH_HARNESS, tmp_path) == (1.0 + 2) * 4


def test_a_record_of_other_cache_entries_is_stale(tmp_path):
    """A sources record vouches for the cache entries it was written with: entries rewritten
    since (a process holding older sources compiled them) are compiled again."""
    _package(tmp_path)
    assert _run(_THROUGH_HARNESS, tmp_path) == 6.0
    code = """
from stalepkg.kernel import run
from harness.run.kernel_sources import is_stale
print(float(is_stale(run)))
"""
    assert _run(code, tmp_path) == 0.0
    for data in (tmp_path / "cache").rglob("kernel.run-*.nbc"):
        os.utime(data, (time.time() + 100, time.time() + 100))
    assert _run(code, tmp_path) == 1.0
