"""``prepare()`` compiles every kernel a method can reach: ``time_explain`` holds none of it.

A fresh process prepares each registered method, explains a classifier and a regressor, and
lists the numba dispatchers that gained a signature during the explain. The suite runs it on
numba's cache as the earlier tests left it (so a signature loaded from the cache during an
explain fails it too); ``HARNESS_EMPTY_NUMBA_CACHE=1`` runs it on an empty cache directory,
where every kernel is compiled from scratch (about 2 minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_no_kernel_is_compiled_or_loaded_while_a_method_explains(tmp_path):
    env = dict(os.environ)
    if os.environ.get("HARNESS_EMPTY_NUMBA_CACHE") == "1":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    completed = subprocess.run([sys.executable, "-m", "tests._support.compile_check"],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert completed.returncode == 0, completed.stderr
    compiled = json.loads(completed.stdout.strip().splitlines()[-1])
    assert compiled == {}, f"kernels compiled or loaded inside explain: {compiled}"
