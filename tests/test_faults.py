"""Fault injection: repeated SIGKILLs of the runner, memory overruns, a full disk.

The figures these tests measure are printed by ``pytest -s`` (one ``FAULT FIGURES`` line
each) and quoted in the README section "What survives a crash".
"""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

import harness
from harness.method import Method
from harness.store import from_blob
from harness.types import Importances

KILL_GRID = ["-d", "iris", "wine", "--model", "random_forest[n_estimators=20]",
             "-m", "mdi", "saabas", "treeshap", "mda_bc", "sobol_mda",
             "tree_sage[max_permutations=1024]", "--seeds", "0", "1", "2", "3", "--jobs", "2",
             "--max-explain", "40", "--no-progress"]
KILL_CELLS = 2 * 1 * 6 * 4


def _records(database) -> dict[str, tuple[str, float]]:
    """(status, created) of every stored cell; every array blob must parse."""
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT key, status, created, vals, std, sample_index FROM cells")
        records = {}
        for key, status, created, *blobs in rows:
            for blob in blobs:
                from_blob(blob)  # raises on a torn or corrupt array
            records[key] = (status, created)
    return records


def test_twenty_sigkills_at_random_moments_lose_and_recompute_nothing(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "harness", "compare", *KILL_GRID, "--out", str(out)]
    database = out / "results.sqlite"
    rng = np.random.default_rng(2026)
    finished: dict[str, float] = {}  # key -> created, for cells stored as done
    trials = corrupt = recomputed = mid_run = 0
    while trials < 20:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        # start-up and fitting take about 3 s, the cells and the reports about 4 s more
        time.sleep(float(rng.uniform(1.0, 4.5)))
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the runner and its forked cells
        process.wait()
        trials += 1
        if not database.exists():
            continue
        try:
            records = _records(database)
        except (AssertionError, ValueError, sqlite3.Error):
            corrupt += 1
            continue
        recomputed += sum(records[key][1] != created for key, created in finished.items()
                          if key in records)
        mid_run += 0 < sum(status == "done" for status, _ in records.values()) < KILL_CELLS
        finished.update({key: created for key, (status, created) in records.items()
                         if status == "done" and key not in finished})
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    records = _records(database)
    recomputed += sum(records[key][1] != created for key, created in finished.items())
    lost = KILL_CELLS - sum(status == "done" for status, _ in records.values())
    print(f"FAULT FIGURES sigkill: trials={trials} corrupt={corrupt} "
          f"recomputed={recomputed} lost={lost} kills_with_the_grid_partly_done={mid_run} "
          f"done_before_final_run={len(finished)}")
    assert (trials, corrupt, recomputed, lost) == (20, 0, 0, 0)
    assert len(finished) > 0  # some kills landed after cells had finished


class Allocates(Method):
    """Asks for 4 GiB at once (far past any sane per-cell limit)."""

    name, scope, family = "test_allocates", "global", "test"

    def _explain(self, model, data, rng):
        block = np.ones(2**29)  # 4 GiB of float64
        return Importances(block[: data.X.shape[1]], "global", data.feature_names, "x", "x")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RLIMIT_AS is Linux's")
def test_a_cell_past_the_memory_limit_is_one_error_and_the_others_finish(tmp_path):
    summary = harness.compare(datasets=["iris"], models=[{"forest": "random_forest",
                                                          "n_estimators": 5}],
                              methods=[Allocates(), "mdi", "saabas"], out=tmp_path / "run",
                              max_memory=512 * 2**20, jobs=2, reports=False)
    assert summary.line() == "cells: 3 total, 2 done (0 reused), 0 skipped, 1 error, 0 timeout"
    cells = harness.load_results(tmp_path / "run", kind="cells").set_index("method_name")
    reason = cells.loc["test_allocates", "reason"]
    assert reason.startswith("exceeded the per-cell memory limit of 512 MiB (MemoryError")
    print(f"FAULT FIGURES memory: limit=512MiB reason={reason[:80]!r}")


def _limited_file_size(size: int):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def test_a_full_disk_is_a_clear_error_and_keeps_what_was_stored(tmp_path):
    out = tmp_path / "run"
    base = [sys.executable, "-m", "harness", "compare", "-d", "iris", "--model",
            "random_forest[n_estimators=5]", "-m", "mdi", "--out", str(out), "--no-progress"]
    first = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    before = _records(out / "results.sqlite")
    size = (out / "results.sqlite").stat().st_size
    full = subprocess.run([*base, "-m", "saabas", "treeshap", "mda_bc"], capture_output=True,
                          text=True, timeout=120, preexec_fn=_limited_file_size(size))
    assert full.returncode == 2, full.stdout + full.stderr
    message = full.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("harness: error: Cannot write to the "
                                                       "store")
    assert "the cells stored before it are kept" in message[0]
    after = _records(out / "results.sqlite")
    assert {key: after[key] for key in before} == before  # nothing stored before was lost
    print(f"FAULT FIGURES full disk: stored_before={len(before)} kept={len(before)} "
          f"message={message[0][:90]!r}")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_a_read_only_run_folder_is_a_clear_error_and_keeps_what_was_stored(tmp_path):
    out = tmp_path / "run"
    base = [sys.executable, "-m", "harness", "compare", "-d", "iris", "--model",
            "random_forest[n_estimators=5]", "-m", "mdi", "--out", str(out), "--no-progress"]
    assert subprocess.run(base, capture_output=True, timeout=120).returncode == 0
    before = _records(out / "results.sqlite")
    for path in (out / "results.sqlite", out):
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        result = subprocess.run([*base, "-m", "saabas"], capture_output=True, text=True,
                                timeout=120)
    finally:
        out.chmod(0o755)
        (out / "results.sqlite").chmod(0o644)
    assert result.returncode == 2 and "Cannot" in result.stderr
    assert _records(out / "results.sqlite") == before
