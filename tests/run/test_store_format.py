"""A store written before the move into subpackages still loads, reports and resumes.

The fixture (tests/run/fixtures/store_98ee76d) was written by commit 98ee76d; its ground truth
is pickled, which must never be loaded. The same grid run now, with the libraries that wrote
the fixture, gives the same arrays: the move changed no value any method computes.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import harness
from harness.cli import main
from harness.run.runner import cell_versions
from harness.run.store import Store
from harness.run.versions import version_changes

FIXTURE = Path(__file__).parent / "fixtures" / "store_98ee76d"
GRID = dict(datasets=["iris", "led"], models=["random_forest[n_estimators=3]"],
            methods=["mdi", "local_mdi", "mda_bc"], max_explain=5, seeds=[0], jobs=1)


@pytest.fixture
def old_run(tmp_path) -> Path:
    out = tmp_path / "old"
    shutil.copytree(FIXTURE, out)
    return out


def _arrays(out: Path) -> dict[str, tuple]:
    with sqlite3.connect(out / "results.sqlite") as conn:
        rows = conn.execute("SELECT key, status, vals, sample_index FROM cells").fetchall()
    with Store(out, create=False) as store:
        return {key: (status, store.cell_arrays(key)) for key, status, *_ in rows}


@pytest.mark.parametrize("kind", ["importances", "cells", "local", "models"])
def test_the_old_store_loads_as_tables(old_run, kind):
    table = harness.load_results(old_run, kind=kind)
    assert len(table) > 0
    if kind == "cells":
        assert sorted(table["status"].unique()) == ["done"]
        assert len(table) == 6


def test_the_old_store_reports_without_loading_its_pickled_truth(old_run, capsys):
    assert main(["report", str(old_run)]) == 0
    assert (old_run / "index.html").exists()
    with Store(old_run, create=False) as store:
        assert store.truth("led", 0) is None  # pickled: never loaded
        assert store.unreadable_truth and "pickle" in store.unreadable_truth[0][2]


def _fixture_versions() -> dict[str, str]:
    with sqlite3.connect(FIXTURE / "results.sqlite") as conn:
        return json.loads(conn.execute("SELECT versions FROM cells LIMIT 1").fetchone()[0])


#: The forests (hence the values) depend on the versions that grew them.
SAME_LIBRARIES = all(importlib.metadata.version(name) == version
                     for name, version in _fixture_versions().items()
                     if name in ("numpy", "scikit-learn"))


def test_a_run_now_reuses_the_old_cells(old_run):
    resumed = harness.compare(**GRID, out=old_run, reports=False)
    counts, *mixed = resumed.line().splitlines()
    assert counts == "cells: 6 total, 6 done (6 reused), 0 skipped, 0 error, 0 timeout"
    # and says which of the packages that made them differ from those installed
    changed = version_changes(_fixture_versions(), cell_versions())
    assert resumed.other_versions.cells == (6 if changed else 0)
    assert len(mixed) == bool(changed)
    assert all(change in mixed[0] for change in changed)
    with Store(old_run, create=False) as store:  # the truth is stored again, as JSON
        assert store.truth("led", 0).relevant.sum() == 7


@pytest.mark.skipif(not SAME_LIBRARIES, reason=(
    "the fixture's forests were grown by numpy {numpy} and scikit-learn {scikit-learn}; a "
    "run with other versions grows other forests").format(**_fixture_versions()))
def test_a_run_now_computes_the_same_values_as_the_old_store(old_run, tmp_path):
    old = _arrays(old_run)
    fresh = harness.compare(**GRID, out=tmp_path / "fresh", reports=False)
    assert fresh.done == 6
    new = _arrays(tmp_path / "fresh")
    assert sorted(new) == sorted(old)  # the same cell keys
    for key, (_, arrays) in old.items():
        for name, value in arrays.items():
            expected = new[key][1][name]
            assert (value is None) == (expected is None), (key, name)
            if value is not None:
                np.testing.assert_array_equal(value, expected, err_msg=f"{key} {name}")
