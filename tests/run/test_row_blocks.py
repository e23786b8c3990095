"""Local methods explained in row blocks (issue 22, bounded memory).

Oracles: the values of one call on all rows (blocks must give them bit for bit: each row's
arithmetic is its own), and the output's size (the memory a blocked explain holds above the
output must not grow with the number of rows; ``tracemalloc`` sees NumPy's and numba's
arrays).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from harness.core import registry
from harness.forest.sklearn import sklearn_routes_nan_as_fitted
from harness.run.protocol import ExplainRequest, row_block, run_protocol

N_ROWS, N_FEATURES = 100, 5
BLOCK = 7  # a block size that divides nothing here: 14 full blocks and one of 2 rows

# Every configuration of a local method whose code paths differ (perturbation, backend,
# output), each on the models it supports
CONFIGS = {
    "local_mdi": [{}],
    "saabas": [{}, {"output": "all_classes"}, {"output": 1}],
    "treeshap": [{}, {"output": "all_classes"}, {"perturbation": "interventional",
                                                 "n_background": 20},
                 {"perturbation": "interventional", "n_background": 20,
                  "output": "all_classes"},
                 {"backend": "shap"},
                 {"backend": "shap", "perturbation": "interventional", "n_background": 20}],
}


def _local_methods() -> list[str]:
    return [name for name in registry.method_names()
            if registry.get_method_class(name).scope == "local"]


def _cases():
    for name, settings in CONFIGS.items():
        for params in settings:
            for task in ("regression", "classification"):
                if task == "regression" and "output" in params:
                    continue
                yield pytest.param(name, params, task, id=f"{name}-{params}-{task}")


def _problem(task: str, nan: bool = False, n_rows: int = N_ROWS, n_features: int = N_FEATURES,
             n_trees: int = 15):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, n_features))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    if task == "classification":
        y = np.digitize(y, [-0.5, 0.5])  # three classes
        model = RandomForestClassifier(n_trees, max_depth=6, random_state=0)
    else:
        model = RandomForestRegressor(n_trees, max_depth=6, random_state=0)
    if nan:  # scikit-learn forests route NaN as fitted (>= 1.4): a tenth of the cells missing
        X[rng.random(X.shape) < 0.1] = np.nan
    return model.fit(X, y), X


def _explain(name: str, params: dict, model, X, block_rows: int | None):
    method = registry.make_method(name, **params)
    return run_protocol(method, model, ExplainRequest(X), seed=3, block_rows=block_rows)


def test_every_local_method_is_explained_in_blocks():
    """The registry's local methods all declare rows_independent, and each has cases here."""
    local = _local_methods()
    assert local
    for name in local:
        assert registry.get_method_class(name).rows_independent, name
    assert sorted(CONFIGS) == sorted(local)


@pytest.mark.parametrize(("name", "params", "task"), list(_cases()))
def test_blocks_equal_one_block_bitwise(name, params, task):
    model, X = _problem(task)
    one = _explain(name, params, model, X, block_rows=N_ROWS)
    blocks = _explain(name, params, model, X, block_rows=BLOCK)
    assert blocks.values.shape == one.values.shape
    assert np.array_equal(blocks.values, one.values)
    assert np.array_equal(blocks.base_values, one.base_values) or (
        one.base_values is None and blocks.base_values is None)
    assert (blocks.unit, blocks.explains, blocks.extra) == (one.unit, one.explains, one.extra)
    assert blocks.time_explain > 0


@pytest.mark.parametrize(("name", "params"), [
    ("local_mdi", {}), ("saabas", {}), ("treeshap", {}),
    ("treeshap", {"perturbation": "interventional", "n_background": 20}),
], ids=["local_mdi", "saabas", "treeshap", "treeshap-interventional"])
def test_blocks_equal_one_block_with_missing_values(name, params):
    """A forest that routes NaN (scikit-learn >= 1.8; the harness refuses rows with NaN for
    older ones, see test_missing_values): rows with missing cells, in blocks."""
    if not sklearn_routes_nan_as_fitted():
        pytest.skip("this scikit-learn routes NaN at predict elsewhere than at fit")
    model, X = _problem("classification", nan=True)
    one = _explain(name, params, model, X, block_rows=N_ROWS)
    blocks = _explain(name, params, model, X, block_rows=BLOCK)
    assert np.isnan(X).any() and np.isfinite(one.values).all()
    assert np.array_equal(blocks.values, one.values)


def test_default_block_is_a_fixed_number_of_bytes():
    regressor, _ = _problem("regression")
    classifier, _ = _problem("classification")
    assert row_block(regressor, 20) == 52416  # 8 MiB / 160 B, a multiple of 64
    assert row_block(classifier, 20) * 3 * 20 * 8 <= 8 * 2**20
    assert row_block(regressor, 10**6) == 1


def test_a_method_sizes_its_blocks_by_the_values_a_row_keeps():
    """8 MiB of float64 per block, counted per row as the method keeps them: local MDI a
    value per feature, Saabas of one class a value per feature and the row's prediction of
    every class, Saabas of all classes and TreeSHAP (which computes every class) a value per
    feature and class; each a multiple of 64 rows."""
    classifier, _ = _problem("classification")  # 3 classes
    p, block_bytes = 20, 8 * 2**20

    def expected(values: int) -> int:
        rows = block_bytes // (8 * values)
        return rows - rows % 64

    sizes = {spec: row_block(classifier, p, registry.make_method(name, **params))
             for spec, (name, params) in {
                 "local_mdi": ("local_mdi", {}), "saabas": ("saabas", {}),
                 "saabas[output=1]": ("saabas", {"output": 1}),
                 "saabas[output=all_classes]": ("saabas", {"output": "all_classes"}),
                 "treeshap": ("treeshap", {})}.items()}
    assert sizes == {"local_mdi": expected(p), "saabas": expected(p + 3),
                     "saabas[output=1]": expected(p + 3),
                     "saabas[output=all_classes]": expected(3 * p),
                     "treeshap": expected(3 * p)}
    assert row_block(classifier, p) == expected(3 * p)  # no method: every output


def _memory_above_output(name: str, params: dict, model, X, block_rows: int) -> int:
    """Traced peak of the explain above its start, minus its output's bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        result = _explain(name, params, model, X, block_rows)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    output = result.values.nbytes + (0 if result.base_values is None
                                     else result.base_values.nbytes)
    return peak - output


@pytest.mark.parametrize(("name", "params", "task"), [
    ("local_mdi", {}, "regression"), ("saabas", {}, "regression"),
    ("treeshap", {}, "regression"),
    ("treeshap", {"perturbation": "interventional", "n_background": 8}, "regression"),
    ("saabas", {}, "classification"), ("treeshap", {}, "classification"),
], ids=["local_mdi", "saabas", "treeshap", "treeshap-interventional", "saabas-classifier",
        "treeshap-classifier"])
def test_memory_above_the_output_does_not_grow_with_rows(name, params, task):
    """4x the rows: the output grows 4x, the rest by less than a small constant. Without
    blocks the float32 coding of X alone would add 3 n p 4 bytes (480 kB here), the kernels'
    output and its rescaled copy 3 n p 8 bytes each, times 3 classes for a classifier's
    (n, p, C) values of which one class is kept."""
    n, block = 2000, 256
    model, X = _problem(task, n_rows=4 * n, n_features=20, n_trees=10)
    _explain(name, params, model, X[:block], block)  # the view and kernels, built once
    small = _memory_above_output(name, params, model, X[:n], block)
    large = _memory_above_output(name, params, model, X, block)
    assert large - small < 64 * 1024, (small, large)


def test_memory_bench_measures_every_local_method():
    """``bench --memory`` covers each registered local method, and its figures add up: the
    output is the values and base values, the extra is the traced peak above it."""
    from harness.bench.memory import SETTINGS, measure

    assert {setting.spec.partition("[")[0] for setting in SETTINGS} == set(_local_methods())
    model, X = _problem("regression", n_rows=600, n_features=20, n_trees=5)
    figures = measure("saabas", model, X, threads=None)
    assert figures["n_rows"] == 600 and figures["block_rows"] == row_block(model, 20)
    assert figures["output_mb"] == pytest.approx(600 * 21 * 8 / 1e6)
    assert figures["extra_traced_mb"] == pytest.approx(
        figures["traced_peak_mb"] - figures["output_mb"])
    assert 0 < figures["extra_traced_mb"] < figures["output_mb"]


def test_asv_memory_suite_names_the_bench_settings():
    import sys
    from pathlib import Path

    from harness.bench.memory import SETTINGS

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    try:
        from benchmarks.bench_methods import MemoryAtScaleSuite
    finally:
        sys.path.pop(0)
    assert list(MemoryAtScaleSuite.largest) == [setting.spec for setting in SETTINGS]
    for setting in SETTINGS:
        assert MemoryAtScaleSuite.largest[setting.spec] <= setting.max_rows
