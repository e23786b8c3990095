"""Runner: failure isolation per cell, hard timeouts, durable resume after SIGKILL.

Nothing here depends on how fast the machine is: a hanging cell never ends by itself, the
per-cell timeout the other cells must stay under is tens of times what they need on a busy
machine (``CELL_TIMEOUT``), and a SIGKILL lands when the store shows the cells it waits for.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

import harness
from harness.core.method import Method
from harness.core.types import Importances
from harness.datasets.xor import XOR
from harness.run.runner import cell_versions

#: Per-cell timeout of the runs that hold a hanging cell (here and in test_dask). The other
#: cells of those runs must finish under it: at load 7 on 2 cores they took 0.04-0.12 s from
#: fork to result and at most 0.3 s from Dask submission to result (workers preloaded), so it
#: leaves a margin of 30x or more. The hanging cell costs each such test this long, which is
#: why it is not larger.
CELL_TIMEOUT = 10
#: How long a hanging cell sleeps: far past any timeout here, so only the executor ends it
#: (one that failed to would turn the test into a failure after this long, not a hang).
HANG_SECONDS = 600
#: Upper bound on waiting for a subprocess run or an event in the store: only a broken harness
#: gets near it, so it is no speed assumption.
PATIENCE = 600


class Raises(Method):
    name, scope, family = "test_raises", "global", "test"

    def _explain(self, model, data, rng):
        raise RuntimeError("boom on purpose")


class Hangs(Method):
    """Never returns within any timeout the tests set: only its executor stops it."""

    name, scope, family = "test_hangs", "global", "test"

    def _explain(self, model, data, rng):
        time.sleep(HANG_SECONDS)


class KillsItself(Method):
    name, scope, family = "test_kills_itself", "global", "test"

    def _explain(self, model, data, rng):
        faulthandler.disable()  # pytest's crash dump of this deliberate segfault is noise
        os.kill(os.getpid(), signal.SIGSEGV)


class RegressionOnly(Method):
    name, scope, family = "test_regression_only", "global", "test"
    tasks = ("regression",)

    def _explain(self, model, data, rng):  # pragma: no cover - skipped before running
        raise AssertionError


class NeedsMissingPackage(Method):
    name, scope, family = "test_needs_missing", "global", "test"
    requires = ("a_package_that_does_not_exist_xyz",)

    def _explain(self, model, data, rng):  # pragma: no cover - not installed
        raise AssertionError


class Constant(Method):
    name, scope, family = "test_constant", "global", "test"

    def _explain(self, model, data, rng):
        return Importances(np.ones(data.X.shape[1]), "global", data.feature_names, "one", "x")


class ReportsProgress(Method):
    """Reports a quarter, a half and three quarters done, as loco does after each refit."""

    name, scope, family = "test_reports_progress", "global", "test"

    def _explain(self, model, data, rng):
        for fraction in (0.25, 0.5, 0.75):
            data.progress(fraction)
        return Importances(np.ones(data.X.shape[1]), "global", data.feature_names, "one", "x")


@pytest.mark.parametrize("executor", ["process", "inprocess"])
def test_a_cell_reports_its_progress_to_the_run(tmp_path, monkeypatch, executor):
    """A long cell's own progress (loco's refits) reaches ``on_event`` while it runs, from a
    forked worker too (every message: the workers, forked after this, inherit the patch)."""
    from harness.run.executors import process

    monkeypatch.setattr(process, "PROGRESS_INTERVAL", 0.0)
    events = []
    summary = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=3]"], methods=[ReportsProgress()],
        out=tmp_path, executor=executor, reports=False,
        on_event=lambda kind, payload: events.append((kind, payload)))
    assert summary.done == 1
    kinds = [kind for kind, _ in events if kind in ("progress", "cell")]
    assert kinds == ["progress"] * 3 + ["cell"]
    assert [payload[1] for kind, payload in events if kind == "progress"] == [0.25, 0.5, 0.75]
    assert all(payload[0].method.name == "test_reports_progress"
               for kind, payload in events if kind == "progress")


def test_failures_are_isolated_per_cell(tmp_path):
    out = tmp_path / "run"
    summary = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=5]"],
        methods=[Raises(), Hangs(), KillsItself(), RegressionOnly(), NeedsMissingPackage(),
                 Constant(), "mdi"],
        out=out, jobs=2, timeout=CELL_TIMEOUT, reports=False,
    )
    assert summary.line() == ("cells: 7 total, 2 done (0 reused), 1 skipped, 2 error, "
                              "1 timeout, 1 not installed")
    assert summary.exit_code == 1
    cells = harness.load_results(out, kind="cells").set_index("method")
    assert cells.loc["test_raises", "status"] == "error"
    assert "RuntimeError: boom on purpose" in cells.loc["test_raises", "reason"]
    assert cells.loc["test_hangs", "status"] == "timeout"
    assert f"timeout of {CELL_TIMEOUT} s" in cells.loc["test_hangs", "reason"]
    assert cells.loc["test_kills_itself", "status"] == "error"
    assert "SIGSEGV" in cells.loc["test_kills_itself", "reason"]
    assert cells.loc["test_regression_only", "status"] == "skipped"
    assert cells.loc["test_needs_missing", "status"] == "not_installed"
    assert cells.loc["mdi", "status"] == "done"

    # a second run reuses done and skipped cells and retries the failed ones
    again = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=5]"],
        methods=[Raises(), RegressionOnly(), Constant(), "mdi"], out=out, timeout=CELL_TIMEOUT,
        reports=False,
    )
    assert again.line() == "cells: 4 total, 2 done (2 reused), 1 skipped, 1 error, 0 timeout"


def test_inprocess_executor_gives_the_same_values(tmp_path):
    grid = dict(datasets=["wine"], models=["random_forest[n_estimators=6]"],
                methods=["mdi", "local_mdi", "saabas"], seeds=[4], reports=False)
    harness.compare(**grid, out=tmp_path / "a", executor="process", jobs=2)
    harness.compare(**grid, out=tmp_path / "b", executor="inprocess")
    a = harness.load_results(tmp_path / "a", kind="local").sort_values(["method", "sample",
                                                                        "feature"])
    b = harness.load_results(tmp_path / "b", kind="local").sort_values(["method", "sample",
                                                                        "feature"])
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())


def _stored(path):
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, created FROM cells WHERE status = 'done'"))


KILL_GRID = ["-d", "iris", "wine", "breast_cancer", "--model", "extra_trees[n_estimators=30]",
             "-m", "mdi", "local_mdi", "saabas", "treeshap", "--seeds", "0", "1", "2",
             "--no-progress"]


@pytest.mark.parametrize("wait_for_cells", [2, 9])
def test_sigkill_then_rerun_recomputes_no_finished_cell(tmp_path, wait_for_cells):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "harness", "compare", *KILL_GRID, "--out", str(out)]
    # DEVNULL: a pipe nobody reads could fill and stall the runner
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    database = out / "results.sqlite"
    deadline = time.monotonic() + PATIENCE  # the kill waits for cells, not for a clock
    before = {}
    while time.monotonic() < deadline and process.poll() is None:
        if database.exists():
            try:
                before = _stored(database)
            except sqlite3.Error:
                before = {}
            if len(before) >= wait_for_cells:
                break
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)  # the runner and its forked cells
    process.wait()
    before = _stored(database)  # what survived the kill, read after it
    assert len(before) >= wait_for_cells
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=PATIENCE)
    assert rerun.returncode == 0, rerun.stderr
    summary = [line for line in rerun.stdout.splitlines() if line.startswith("cells:")][0]
    assert summary == f"cells: 36 total, 36 done ({len(before)} reused), 0 skipped, 0 error, " \
                      "0 timeout"
    after = _stored(database)
    assert len(after) == 36
    assert all(after[key] == created for key, created in before.items())  # not recomputed


def test_cells_fork_safely_after_the_parent_ran_parallel_kernels(tmp_path, iris):
    """The parent runs the numba kernel first; forked cells must still run it."""
    from sklearn.ensemble import ExtraTreesClassifier

    X, y = iris
    model = ExtraTreesClassifier(5, random_state=0).fit(X, y)
    harness.explain("treeshap", model, X[:5], perturbation="interventional", n_background=5)
    summary = harness.compare(
        datasets=["iris"], models=["extra_trees[n_estimators=5]"],
        methods=["treeshap[perturbation=interventional,n_background=10]"],
        out=tmp_path / "run", jobs=2, timeout=PATIENCE, reports=False,
    )
    assert summary.line() == "cells: 1 total, 1 done (0 reused), 0 skipped, 0 error, 0 timeout"


class Versioned(Method):
    name, scope, family = "test_versioned", "global", "test"

    def _explain(self, model, data, rng):
        return Importances(np.full(data.X.shape[1], float(self.version)), "global",
                           data.feature_names, "one", "x")


class VersionedTwo(Versioned):
    version = 2


class XORTwo(XOR):
    version = 2


@pytest.mark.parametrize(("axis", "earlier", "later", "fixed"), [
    ("methods", Versioned(), VersionedTwo(), {"datasets": ["iris"]}),
    ("datasets", XOR(), XORTwo(), {"methods": ["mdi"]}),
], ids=["method", "dataset"])
def test_a_cell_stored_by_an_earlier_version_is_not_reused(tmp_path, axis, earlier, later,
                                                            fixed):
    """A method whose code now computes something else for the same parameters, or a
    dataset whose code now generates other rows, raises its ``version``; its stored cells
    are then recomputed, not handed back as the new result."""
    grid = dict(models=["extra_trees[n_estimators=3]"], out=tmp_path, reports=False, **fixed)
    harness.compare(**{axis: [earlier]}, **grid)
    same = harness.compare(**{axis: [earlier]}, **grid)
    assert same.line() == "cells: 1 total, 1 done (1 reused), 0 skipped, 0 error, 0 timeout"
    changed = harness.compare(**{axis: [later]}, **grid)
    assert changed.line() == "cells: 1 total, 1 done (0 reused), 0 skipped, 0 error, 0 timeout"


def test_a_run_resumed_with_other_package_versions_says_its_results_mix_them(tmp_path):
    """Cells stored by other package versions (another scikit-learn grows other forests)
    are reused, and the summary and the report say which versions differ, for how many."""
    out = tmp_path / "run"
    grid = dict(datasets=["iris"], models=["extra_trees[n_estimators=3]"],
                methods=["mdi", "saabas"], out=out)
    first = harness.compare(**grid, reports=False)
    assert first.other_versions.cells == 0 and "\n" not in first.line()
    installed = cell_versions()["scikit-learn"]
    with sqlite3.connect(out / "results.sqlite") as conn:  # as if made by scikit-learn 1.0.0
        key = conn.execute("SELECT key FROM cells WHERE method_name = 'mdi'").fetchone()[0]
        stored = json.loads(conn.execute("SELECT versions FROM cells WHERE key = ?",
                                         (key,)).fetchone()[0])
        conn.execute("UPDATE cells SET versions = ? WHERE key = ?",
                     (json.dumps({**stored, "scikit-learn": "1.0.0"}), key))
    resumed = harness.compare(**grid)
    counts, mixed = resumed.line().splitlines()
    assert counts == "cells: 2 total, 2 done (2 reused), 0 skipped, 0 error, 0 timeout"
    assert resumed.other_versions.cells == 1
    assert f"1 reused cell was made with other package versions (scikit-learn 1.0.0 → " \
           f"{installed})" in mixed
    page = (out / "index.html").read_text()
    assert ("2 sets of package versions (scikit-learn 1.0.0: 1 cell; scikit-learn "
            f"{installed}: 1 cell)") in page
    forced = harness.compare(**grid, force=True, reports=False)
    assert forced.other_versions.cells == 0 and forced.reused == 0
    with sqlite3.connect(out / "results.sqlite") as conn:  # every cell now by one set
        stored = {text for (text,) in conn.execute("SELECT versions FROM cells")}
    assert [json.loads(text) for text in stored] == [cell_versions()]
