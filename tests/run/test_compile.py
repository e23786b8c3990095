"""The parallel compile step (harness.run.compile): it covers every method, leaves numba's cache
such that a fresh process compiles nothing, survives concurrent writers, and the kernels take
one signature whatever the layout of the rows they are given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import harness
from harness.core import registry
from harness.core.errors import UnknownNameError
from harness.kernels.paths import local_mdi_paths, saabas_paths
from harness.kernels.treeshap.path_dependent import path_dependent_shap
from harness.run.compile import _entry_dispatchers, compile_in_processes, compile_tasks
from tests._support.compile_check import compiled_signatures
from tests._support.tiny_kernel_method import BrokenPrepare, TinyKernel, TinyKernelTwin

ROOT = Path(__file__).resolve().parents[2]

# a fresh process on the given cache: is it warm, then prepare() and what numba did
_LOAD_TINY = """
import json
from harness.run.compile import cache_is_warm
from tests._support.tiny_kernel_method import TinyKernel, column_sums
warm = cache_is_warm([TinyKernel])
TinyKernel.prepare()
print(json.dumps({"warm": warm, "hits": sum(column_sums.stats.cache_hits.values()),
                  "misses": sum(column_sums.stats.cache_misses.values())}))
"""

def _python(code: str, cache: str | None = None) -> dict:
    env = dict(os.environ)
    if cache is not None:  # lazy: the import must not compile every method into that cache
        env.update(NUMBA_CACHE_DIR=cache, HARNESS_COMPILE="lazy")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_installed_method_is_sent_to_exactly_one_worker():
    """The tasks partition the installed methods; methods on the same kernel modules (local
    MDI and Saabas share their walks) go to one worker, which then compiles them once."""
    classes = [registry.get_method_class(n) for n in registry.method_names()]
    classes = [c for c in classes if not c.missing_packages()]
    tasks = compile_tasks(classes)
    sent = [c for task in tasks for c in task]
    assert sorted(c.name for c in sent) == sorted(c.name for c in classes)
    assert len(sent) == len(set(sent))
    task_of = {c.name: i for i, task in enumerate(tasks) for c in task}
    assert task_of["local_mdi"] == task_of["saabas"]
    assert task_of["treeshap"] != task_of["tree_sage"]


def test_a_kernel_called_only_from_an_inlined_one_is_no_entry_of_the_cache_check():
    """tree SAGE's ``_probe`` is inlined into its walks, and ``_mask_chunks``, which only
    ``_probe`` calls, is linked into the walks' cache entries: a fresh process never loads it,
    so its own index is not what tells whether the cache is warm; the walks' task is."""
    entries = {d.py_func.__name__ for d in _entry_dispatchers(registry.get_method_class(
        "tree_sage"))}
    assert "_path_dependent_tasks" in entries
    assert "_mask_chunks" not in entries and "_probe" not in entries


def test_after_every_prepare_the_cache_holds_every_entry_kernel():
    """Once each installed method is prepared (its warm-up run), numba's cache holds every
    entry kernel its modules reach, including those that only wide rows call
    (``tree_columns``): a kernel left out makes ``cache_is_warm`` false for good, and every
    later process that prepares such a method first compiles it in a worker (seconds)."""
    from harness.run.compile import _dispatchers, cache_is_warm
    from harness.run.execute import prepare_methods
    from harness.run.kernel_sources import cache_state

    classes = [registry.get_method_class(name) for name in registry.method_names()
               if not registry.get_method_class(name).missing_packages()]
    prepare_methods(classes)
    cold = sorted({f"{d.py_func.__module__}.{d.py_func.__name__}" for c in classes
                   for d in _dispatchers(c) if d in _entry_dispatchers(c)
                   and cache_state(d) in ("empty", "stale")})
    assert cold == []
    assert cache_is_warm(classes)


def test_compile_command_covers_every_installed_method():
    from harness.cli.common import methods_to_compile as _methods_to_compile

    installed = [n for n in registry.method_names()
                 if not registry.get_method_class(n).missing_packages()]
    assert _methods_to_compile(None) == installed
    with pytest.raises(UnknownNameError, match="no_such_method"):
        _methods_to_compile(["no_such_method"])


def test_concurrent_workers_fill_the_cache_and_a_fresh_process_only_loads(tmp_path):
    """Two compile runs at once on one empty cache, each writing the same kernel (numba
    replaces its files by atomic renames): a fresh process then finds the cache warm and loads
    the kernel (a cache hit, no miss); a failing prepare() is reported, not raised."""
    cache = str(tmp_path / "numba")
    assert _python(_LOAD_TINY.replace("TinyKernel.prepare()", "pass"), cache)["warm"] is False
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    reports = [None, None]

    def run(i, classes):
        reports[i] = compile_in_processes(classes, 1, env=env)

    threads = [threading.Thread(target=run, args=(0, [TinyKernel])),
               threading.Thread(target=run, args=(1, [TinyKernelTwin, BrokenPrepare]))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(reports[0].methods) == {"tiny_kernel"} and not reports[0].errors
    assert set(reports[1].methods) == {"tiny_kernel_twin"}
    assert "no compiler today" in reports[1].errors["broken_prepare"]
    loaded = _python(_LOAD_TINY, cache)
    assert loaded == {"warm": True, "hits": 1, "misses": 0}


_CHECK_PARTIAL = """
import json
from harness.run.compile import cache_is_warm
from tests._support.partial_warm_up_method import PartialWarmUp
print(json.dumps({"warm": cache_is_warm([PartialWarmUp])}))
"""


def test_an_entry_the_warm_up_never_calls_leaves_the_cache_warm_after_its_compile(tmp_path):
    """A method's module may hold an entry kernel that its warm-up never calls (LOCO reaches
    the OOB methods' permutation pass). Once the method's own compile has run, a fresh process
    finds the cache warm for it, so its first call starts no compile worker (which would
    compile nothing: before the record of unused entries, every process did, LOCO's first
    call 4.8 s where the method alone takes 2.5 s); and the record holds only for the sources
    it was made for: with other kernel sources, the cache is cold again."""
    from tests._support.partial_warm_up_method import PartialWarmUp

    cache = str(tmp_path / "numba")
    assert _python(_CHECK_PARTIAL, cache)["warm"] is False
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    report = compile_in_processes([PartialWarmUp], 1, env=env)
    assert set(report.methods) == {"partial_warm_up"} and not report.errors
    assert _python(_CHECK_PARTIAL, cache)["warm"] is True
    other_sources = _CHECK_PARTIAL.replace(
        "from harness.run.compile", "from harness.run import first_import\n"
        "first_import._fingerprint = lambda: 'other sources'\nfrom harness.run.compile")
    assert _python(other_sources, cache)["warm"] is False


def test_the_compile_reads_its_workers_answers_past_numbas_debug_lines(tmp_path):
    """Under NUMBA_DEBUG_CACHE numba prints to the compile worker's stdout, the channel of its
    answers: they are still read (the compile thread failed on the first such line)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT),
           "NUMBA_DEBUG_CACHE": "1"}
    report = compile_in_processes([TinyKernel], 1, env=env)
    assert set(report.methods) == {"tiny_kernel"} and not report.errors


def test_one_signature_per_kernel_whatever_the_rows_layout():
    """TreeSHAP, local MDI and Saabas on rows given as C or Fortran order, float32, read-only
    or a strided view, through ``harness.explain`` and straight to the kernels' boundary
    functions: the same values (TreeSHAP's equal to shap's, the oracle) and no kernel gains
    a signature after the first call (each boundary canonicalises the rows)."""
    shap = pytest.importorskip("shap")
    X, y = load_diabetes(return_X_y=True)
    X = X[:120].astype(np.float32).astype(np.float64)  # float32 rows hold the same values
    model = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(X, y[:120])
    wide = np.repeat(X, 2, axis=1)  # every other column is X again
    read_only = X.copy()
    read_only.flags.writeable = False
    layouts = {"F": np.asfortranarray(X), "float32": X.astype(np.float32),
               "read-only": read_only, "strided": wide[:, ::2]}
    view = harness.forest_view(model)
    calls = {
        "treeshap": lambda rows: harness.explain("treeshap", model, rows, seed=0).values,
        "local_mdi": lambda rows: harness.explain("local_mdi", model, rows, seed=0).values,
        "saabas": lambda rows: harness.explain("saabas", model, rows, seed=0).values,
        "path_dependent_shap": lambda rows: path_dependent_shap(view.packed, rows)[0],
        "local_mdi_paths": lambda rows: local_mdi_paths(view.paths, rows),
        "saabas_paths": lambda rows: saabas_paths(view.paths, rows)[0],
    }
    oracle = shap.TreeExplainer(model).shap_values(X)
    for name, call in calls.items():
        first = call(X)
        before = compiled_signatures()
        for layout, rows in layouts.items():
            np.testing.assert_array_equal(call(rows), first, err_msg=f"{name}, {layout} rows")
        gained = {k: n for k, n in compiled_signatures().items() if n > before.get(k, 0)}
        assert gained == {}, (name, gained)
        if "shap" in name:
            np.testing.assert_allclose(first.reshape(oracle.shape), oracle, atol=1e-9)


def test_compare_uses_the_cores_this_process_may_run_on_by_default(monkeypatch, tmp_path):
    """``jobs=None`` is the process's CPU affinity (what the compile step uses too), not the
    machine's CPU count: on a machine with 8 CPUs and an affinity of 1, one job."""
    import inspect

    from harness.run import runner
    from harness.run.options import compare_options

    monkeypatch.setattr("os.cpu_count", lambda: 8)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0}, raising=False)
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(runner.compare).parameters.items()}
    options = compare_options(**{**defaults, "out": tmp_path, "jobs": None})
    assert options.jobs == 1


def _deepest_churn(depth_range: range, calls: int) -> int:
    """Most minor page faults of ``calls`` call-returns of a trivial function, made at each
    recursion depth of ``depth_range``: where the depth leaves the current data-stack chunk
    just full, each call maps a fresh chunk (one fault or more) and each return unmaps it."""
    import resource

    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)  # this thread's faults

    def leaf() -> None:
        return None

    def probe(depth: int) -> int:
        if depth:
            return probe(depth - 1)
        before = resource.getrusage(who).ru_minflt
        for _ in range(calls):
            leaf()
        return resource.getrusage(who).ru_minflt - before

    return max(probe(depth) for depth in depth_range)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux page faults")
def test_the_compile_worker_calls_without_mapping_a_stack_chunk_per_call():
    from harness.run.compile import _with_stack_room

    depths, calls = range(0, 600, 3), 3000
    churn = _deepest_churn(depths, calls)
    if churn < calls // 2:
        pytest.skip(f"this CPython maps no data-stack chunk per call ({churn} faults)")
    found = []
    _with_stack_room(lambda: found.append(_deepest_churn(depths, calls)))
    assert found[0] < calls // 10, (churn, found)
