"""The asv suites must stay importable and well-formed (``asv check``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("asv") is None, reason="asv is not installed")
def test_asv_check_passes():
    result = subprocess.run(["asv", "check", "--python=same"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No problems found" in result.stdout


def _suites():
    import importlib
    import inspect
    import sys

    sys.path.insert(0, str(ROOT))
    try:
        for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            module = importlib.import_module(f"benchmarks.{path.stem}")
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == module.__name__ and hasattr(cls, "params"):
                    yield cls
    finally:
        sys.path.remove(str(ROOT))


def _combinations(cls) -> list[tuple]:
    """Every method with one setting of the other parameters (the last, so that the
    out-of-bag methods get a bootstrap forest), or the first setting of a suite without a
    method parameter."""
    names = list(cls.param_names)
    if "method" not in names:
        return [tuple(values[0] for values in cls.params)]
    at = names.index("method")
    rest = [values[-1] for values in cls.params]
    return [tuple(rest[:at] + [method] + rest[at + 1:]) for method in cls.params[at]]


@pytest.mark.parametrize("suite", list(_suites()), ids=lambda cls: cls.__name__)
def test_every_benchmark_runs_once_in_the_fast_profile(suite, monkeypatch):
    """The fast profile of every suite, in process: each ``time_``, ``peakmem_`` and
    ``track_`` benchmark is called once per registered method (or once for suites without a
    method parameter), as ``asv run --quick`` would; a ``setup`` that raises
    NotImplementedError is asv's "skipped" and allowed, anything else fails the test. A suite
    whose asv parameters take minutes (the cold start) names cheaper ``smoke_params``."""
    monkeypatch.setenv("HARNESS_BENCH_PROFILE", "fast")
    from benchmarks import common  # imported by _suites at collection, with the path set

    # one short alternation per ratio: this test checks that the benchmarks run, not figures
    monkeypatch.setattr(common, "ALTERNATIONS", 1)
    monkeypatch.setattr(common, "MIN_SAMPLE_SECONDS", 0.001)
    monkeypatch.setattr(common, "PROCESSES", 1)  # the probe in this process
    if hasattr(suite, "smoke_params"):
        monkeypatch.setattr(suite, "params", suite.smoke_params)
    instance = suite()
    cache = instance.setup_cache() if hasattr(instance, "setup_cache") else None
    benchmarks = [name for name in dir(suite)
                  if name.startswith(("time_", "peakmem_", "track_"))]
    assert benchmarks
    ran = 0
    for params in _combinations(suite):
        args = (cache, *params) if cache is not None else params
        if hasattr(instance, "setup"):
            try:
                instance.setup(*args)
            except NotImplementedError:
                continue
        for name in benchmarks:
            value = getattr(instance, name)(*args)
            if name.startswith("track_"):
                assert value is None or isinstance(value, float), (name, params, value)
        if hasattr(instance, "teardown"):
            instance.teardown(*args)
        ran += 1
    assert ran > 0
