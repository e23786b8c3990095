"""After ``python -m harness compile``, a fresh process explains the compiled methods without
compiling a kernel (each comes from numba's cache that the compile step wrote)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# a fresh process: the METHODS' prepare() and one explain per task, recording
# every harness kernel that numba compiles (a load from the cache fires no compile event)
_RECORD_COMPILES = """
import json
from numba.core import event
compiled = []

class Recorder(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        if func.__module__.startswith("harness"):
            compiled.append(f"{func.__module__}.{func.__qualname__}")

    def on_end(self, ev):
        pass

event.register("numba:compile", Recorder())
"""
_EXPLAIN_ALL = _RECORD_COMPILES + """from harness.core import registry
from harness.core.errors import UnknownNameError
from harness.run.execute import prepare_methods
from tests._support.compile_check import compiled_during_explain
names = METHODS
prepare_methods([registry.get_method_class(n) for n in names], processes=1)
in_prepare = list(compiled)
compiled_during_explain(names)
print(json.dumps({"prepare": in_prepare, "explain": compiled[len(in_prepare):]}))
"""


#: Methods whose kernels compile in seconds, in two groups of modules (so two compile workers):
#: every installed method would cost the suite minutes from a cold cache (80 s of CPU), and
#: that the command covers every method is checked in ``test_compile.py``.
METHODS = ["ufi", "mdi_oob", "mda_bc"]


def _python(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_after_the_compile_command_a_fresh_process_compiles_nothing():
    """``python -m harness compile -m ...``, then in a fresh process those methods'
    prepare() and an explain per task each supports: numba compiles no harness kernel (each one
    comes from the cache the compile step wrote)."""
    done = subprocess.run([sys.executable, "-m", "harness", "compile", "--no-progress",
                           "-m", *METHODS], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    result = _python(f"METHODS = {METHODS!r}\n" + _EXPLAIN_ALL)
    assert result == {"prepare": [], "explain": []}


def test_explain_on_a_cold_cache_compiles_in_a_worker_then_loads(tmp_path):
    """``harness.explain`` on an empty numba cache, with the compile at import turned off
    (``HARNESS_COMPILE=lazy``): the kernels are compiled by a worker
    process into the cache and this process loads them (it compiles no harness kernel
    itself), so it runs the same machine code as any later process
    (:func:`harness.run.compile.prepare_from_cache`)."""
    code = _RECORD_COMPILES + """
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor
import harness
X, y = load_diabetes(return_X_y=True)
model = RandomForestRegressor(5, max_depth=4, random_state=0).fit(X, y)
harness.explain("mdi_oob", model, X, y)
print(json.dumps({"compiled": compiled}))
"""
    cache = tmp_path / "numba"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(cache),
                               "HARNESS_COMPILE": "lazy"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"compiled": []}
    assert any(cache.rglob("*.nbi"))
