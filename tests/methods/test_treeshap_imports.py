"""TreeSHAP's own kernels need no shap: explaining with them leaves shap unimported (its import
was 1.4 s of the method's first call), and ``backend="shap"`` imports it before the timed
explain, or is refused as not installed, with the package to install, where it is missing
(in a run: the cell's status ``not_installed``, not ``skipped``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor

import harness
from harness.core.errors import NotInstalledError

ROOT = Path(__file__).resolve().parents[2]

_EXPLAIN = """
import json, sys
import numpy as np
from sklearn.ensemble import RandomForestRegressor
import harness
rng = np.random.default_rng(0)
X = rng.normal(size=(60, 4))
model = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, X[:, 0])
seen = {}
for spec in ("treeshap", "treeshap[perturbation=interventional,n_background=10]"):
    result = harness.explain(spec, model, X[:10], seed=0)
    seen[spec] = "shap" in sys.modules
print(json.dumps(seen))
"""


def test_the_harness_kernels_explain_without_importing_shap():
    done = subprocess.run([sys.executable, "-c", _EXPLAIN], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "treeshap": False, "treeshap[perturbation=interventional,n_background=10]": False}


def test_backend_shap_is_not_installed_with_the_install_hint_where_shap_is_missing(monkeypatch):
    import importlib.util

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    model = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, X[:, 0])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "shap" else real(name, *a))
    with pytest.raises(NotInstalledError,
                       match=r"treeshap\[backend=shap\] needs shap; install it with "
                             r"pip install shap"):
        harness.explain("treeshap[backend=shap]", model, X[:10], seed=0)
    # the default backend needs no shap
    harness.explain("treeshap", model, X[:10], seed=0)
    monkeypatch.undo()
    values = harness.explain("treeshap[backend=shap]", model, X[:10], seed=0).values
    ours = harness.explain("treeshap", model, X[:10], seed=0).values
    np.testing.assert_allclose(values, ours, atol=1e-9)  # shap's values, the oracle
