"""A kernel whose own file is unchanged is recompiled when a jitted callee or a constant it
imports from another file changes (numba alone would load the old code from its cache:
:mod:`harness.run.kernel_sources`)."""

from __future__ import annotations

import json
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


# Three methods on one shared cached helper, for two compile workers, whose steps are ordered
# by marker files: ``slow`` compiles the helper, then waits until ``late`` has begun its task
# on the other worker (after ``wait``, which waits for the helper's cache entry), and only
# then records the sources.
_SHARED_HELPER = """
from numba import njit


@njit(cache=True)
def shared(x):
    return x + 1.0
"""
_RACE_METHODS = {
    # weight 2 (two kernels of its own): the first task, on the first worker
    "marks.py": """
import time
from pathlib import Path

MARKS = Path(__file__).parent / "marks"


def wait_for(name):
    for _ in range(1200):
        if (MARKS / name).exists():
            return
        time.sleep(0.1)
    raise TimeoutError(name)
""",
    "a_slow.py": """
from numba import njit
from racepkg.helper import shared
from racepkg.marks import MARKS, wait_for


@njit(cache=True)
def own(x):
    return x * 2.0


class Slow:
    name = "slow"

    @classmethod
    def prepare(cls):
        shared(1.0)
        own(1.0)
        (MARKS / "shared_cached").touch()
        wait_for("late_prepared")
""",
    # weight 1 each; "b_wait" sorts before "c_late", so the second worker takes it first
    "b_wait.py": """
from numba import njit
from racepkg.marks import wait_for


@njit(cache=True)
def mine(x):
    return x - 1.0


class Wait:
    name = "wait"

    @classmethod
    def prepare(cls):
        mine(1.0)
        wait_for("shared_cached")
""",
    "c_late.py": """
from racepkg import helper
from racepkg.marks import MARKS


class Late:
    name = "late"
    kernel = helper.shared

    @classmethod
    def prepare(cls):
        (MARKS / "late_prepared").touch()
""",
}


def test_a_sibling_workers_task_does_not_forget_a_helper_compiled_but_not_yet_recorded(
        tmp_path):
    """Between a worker's compile of a shared helper and its record of the helper's sources,
    the helper's cache entries have no record. A sibling worker that forgot stale kernels at
    the start of its next task emptied them, and the record that followed found nothing to
    vouch for, so the next process found the cache cold and compiled again (tree SAGE's
    first call in ``bench --cold``, once). Forgetting is one step before every compile."""
    package = tmp_path / "racepkg"
    (package / "marks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text(textwrap.dedent(_SHARED_HELPER))
    for name, text in _RACE_METHODS.items():
        (package / name).write_text(textwrap.dedent(text))
    code = """
import json, os
from harness.run.compile import cache_is_warm, compile_in_processes, compile_tasks
from harness.run.kernel_sources import cache_state
from racepkg import helper
from racepkg.a_slow import Slow
from racepkg.b_wait import Wait
from racepkg.c_late import Late
classes = [Slow, Wait, Late]
order = [[c.name for c in task] for task in compile_tasks(classes)]
report = compile_in_processes(classes, processes=2)
print(json.dumps({"order": order, "errors": report.errors, "state": cache_state(helper.shared),
                  "warm": cache_is_warm(classes)}))
"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "HARNESS_COMPILE": "lazy",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["order"] == [["slow"], ["wait"], ["late"]]  # the steps the markers order
    assert result["errors"] == {}
    assert result["state"] == "fresh"
    assert result["warm"] is True
