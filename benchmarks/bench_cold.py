"""asv suite: what a user waits for compiled kernels in a fresh environment (empty numba cache).

The figures of ``python -m harness bench --cold`` (:mod:`harness.bench.cold`), in a fresh
temporary ``NUMBA_CACHE_DIR`` (issue 22, part 1):

- ``CompileSuite``: the one-off parallel compile of every installed method's kernels
  (``python -m harness compile``; one worker per usable core), wall seconds: the step the
  first ``import harness`` of an environment runs (:mod:`harness.run.first_import`);
- ``ColdStartSuite``: per method, the first ``harness.explain`` on a 50-tree random forest of
  ``diabetes`` in a fresh process on one numba thread, from the cache the compile step left
  (what every first call costs after that import; target 2 s) and from an EMPTY cache with
  ``HARNESS_COMPILE=lazy`` (what a user who turns the import's step off waits).

Wall time is what a user waits; CPU time of the process over the call is what a busy machine
changes least (compiling is single-threaded work).
"""

from __future__ import annotations

import os
import tempfile

from harness.bench.cold import run_cold
from harness.core import registry
from harness.run.compile import compile_in_processes

# the methods with compiled kernels (the others import their packages and answer at once)
KERNEL_METHODS = ["local_mdi", "saabas", "treeshap", "mda_test", "mda_bc", "mda_ik",
                  "sobol_mda", "tree_sage", "shaff", "mdi_oob", "ufi"]


class ColdStartSuite:
    params = (KERNEL_METHODS,)
    param_names = ["method"]
    timeout = 1800
    # what ``tests/bench`` runs instead (a method that compiles little), to stay within seconds
    smoke_params = (["mdi"],)

    def setup_cache(self):
        # each method once per commit, as ``bench --cold`` measures it: from the compile
        # step's cache, then from an empty cache
        table, _ = run_cold(type(self).params[0])
        return {row.method: (row.empty_cache_wall, row.empty_cache_cpu, row.first_call_wall,
                             row.first_call_cpu) for row in table.itertuples()}

    def track_first_call_wall(self, cache, method):
        return cache[method][0]

    track_first_call_wall.unit = "seconds"

    def track_first_call_cpu(self, cache, method):
        return cache[method][1]

    track_first_call_cpu.unit = "seconds"

    def track_first_call_after_compile_wall(self, cache, method):
        return cache[method][2]

    track_first_call_after_compile_wall.unit = "seconds"


class CompileSuite:
    params = (["all"],)
    param_names = ["methods"]
    timeout = 1800
    smoke_params = (["mdi"],)

    def setup_cache(self):
        names = type(self).params[0]
        if names == ["all"]:
            names = registry.installed_method_names()
        with tempfile.TemporaryDirectory(prefix="harness-cold-") as cache:
            report = compile_in_processes([registry.get_method_class(n) for n in names],
                                          env={**os.environ, "NUMBA_CACHE_DIR": cache})
        return {"wall": report.seconds, "processes": report.processes}

    def track_parallel_compile_wall(self, cache, methods):
        return cache["wall"]

    track_parallel_compile_wall.unit = "seconds"
