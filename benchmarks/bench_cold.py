"""asv suite: the first explain of a method in a fresh environment (empty numba cache).

Each method's first ``harness.explain`` on a 50-tree random forest of ``diabetes`` is timed
in a fresh Python process whose ``NUMBA_CACHE_DIR`` is a new empty directory, on one numba
thread (issue 22, part 1: "the first call of every method on a small forest returns within
2 s on one core"; 10-25 s before, nearly all of it numba compiling the kernels). Two figures:
the wall time a user waits, and the CPU time of the process over that call, which is what a
busy machine changes least (compiling is single-threaded work).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

# the imports and the forest are made before the clock starts; only the first call is timed
_FIRST_CALL = """
import json, sys, time
import harness
ds = harness.load_dataset("diabetes")
model = harness.fit_model({"forest": "random_forest", "n_estimators": 50}, ds, seed=0)
X, y = ds.X[:100], ds.y[:100]
wall, cpu = time.perf_counter(), time.process_time()
harness.explain(sys.argv[1], model, X, y)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def first_call_seconds(method: str) -> tuple[float, float]:
    """(wall, CPU) seconds of the first ``harness.explain(method, ...)`` in a fresh process
    with an empty numba cache directory."""
    with tempfile.TemporaryDirectory(prefix="harness-cold-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "NUMBA_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", _FIRST_CALL, method], env=env, cwd=cache,
                              capture_output=True, text=True, check=True, timeout=600)
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu


class ColdStartSuite:
    params = (["local_mdi", "treeshap"],)
    param_names = ["method"]
    timeout = 1200
    # what ``tests/bench`` runs instead (a method that compiles little), to stay within seconds
    smoke_params = (["mdi"],)

    def setup_cache(self):
        # every method once per commit, shared by both figures
        return {method: first_call_seconds(method) for method in type(self).params[0]}

    def track_first_call_wall(self, cache, method):
        return cache[method][0]

    track_first_call_wall.unit = "seconds"

    def track_first_call_cpu(self, cache, method):
        return cache[method][1]

    track_first_call_cpu.unit = "seconds"
