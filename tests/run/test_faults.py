"""Fault injection: repeated SIGKILLs of the runner, memory overruns, a full disk.

The figures these tests measure are printed by ``pytest -s`` (one ``FAULT FIGURES`` line
each) and quoted in the README section "What survives a crash". No outcome depends on the
machine's speed: each kill lands at an event the store or /proc shows (see ``KILL_PHASES``),
and a subprocess's time limit only stops a hung harness.
"""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

import harness
from harness.core.method import Method
from harness.core.types import Importances
from harness.run.store import from_blob
from tests.run.test_runner import PATIENCE

KILL_GRID = ["-d", "iris", "wine", "--model", "random_forest[n_estimators=20]",
             "-m", "mdi", "saabas", "treeshap", "mda_bc", "sobol_mda",
             "tree_sage[max_permutations=1024]", "--seeds", "0", "1", "2", "3", "--jobs", "2",
             "--max-explain", "40", "--no-progress"]
KILL_CELLS = 2 * 1 * 6 * 4
#: When each of the twenty kills lands, by what the runner has done rather than by a clock
#: (a clock's moments would all be start-up on a busy machine and reports on a fast one):
#: during start-up, once the runner has the store open (fitting), once it has stored 1-2 more
#: cells, and once every cell is stored (reports). A seeded random delay after the event, up
#: to KILL_DELAY s, spreads the kills over the writes around it.
KILL_PHASES = ["store open", "start-up"] + ["cells"] * 14 + ["reports"] * 4
#: Upper bound of the random delay after each phase's event: a cell of this grid is stored
#: every few tens of ms, so a longer delay would finish the grid in a few kills.
KILL_DELAY = {"start-up": 0.25, "store open": 0.25, "cells": 0.03, "reports": 0.25}


def _records(database) -> dict[str, tuple[str, float]]:
    """(status, created) of every stored cell; every array blob must parse."""
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'cells'").fetchone() is None:
            return {}  # killed before the store's first commit: empty, nothing to lose
        rows = conn.execute("SELECT key, status, created, vals, std, sample_index FROM cells")
        records = {}
        for key, status, created, *blobs in rows:
            for blob in blobs:
                from_blob(blob)  # raises on a torn or corrupt array
            records[key] = (status, created)
    return records


def _done_count(database: Path) -> int:
    """Cells stored as done, read-only (no store is created, no journal replayed); -1 while
    there is no store or it cannot be read at this moment."""
    try:
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as conn:
            return conn.execute("SELECT count(*) FROM cells WHERE status = 'done'").fetchone()[0]
    except sqlite3.Error:
        return -1


def _has_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` holds ``path`` open (Linux /proc)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:  # closed meanwhile
            continue
    return False


def _reached(phase: str, pid: int, database: Path, target: int) -> bool:
    """Whether the runner ``pid`` is where a kill of ``phase`` lands (see KILL_PHASES)."""
    if phase == "start-up":
        return True
    if phase == "store open":
        return _has_open(pid, database)
    if phase == "cells":
        return _done_count(database) >= target
    return _done_count(database) == KILL_CELLS and _has_open(pid, database)  # reports


def _kill_when(process: subprocess.Popen, phase: str, database: Path, target: int,
               delay: float) -> bool:
    """SIGKILL the runner's process group ``delay`` s after it reached ``phase`` (polled every
    5 ms, for at most PATIENCE s); whether the kill found the runner still running."""
    give_up = time.monotonic() + PATIENCE
    while (process.poll() is None and not _reached(phase, process.pid, database, target)
           and time.monotonic() < give_up):
        time.sleep(0.005)
    time.sleep(delay)
    if process.poll() is not None:
        return False
    os.killpg(process.pid, signal.SIGKILL)  # the runner and its forked cells
    process.wait()
    return True


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="watches the runner in /proc")
def test_twenty_sigkills_at_random_moments_lose_and_recompute_nothing(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "harness", "compare", *KILL_GRID, "--out", str(out)]
    database = (out / "results.sqlite").resolve()
    rng = np.random.default_rng(2026)
    finished: dict[str, float] = {}  # key -> created, for cells stored as done
    corrupt = recomputed = mid_run = 0
    killed: dict[str, int] = {}  # kills that found the runner running, by phase
    for phase in KILL_PHASES:
        stored = max(_done_count(database), 0)
        target = min(stored + int(rng.integers(1, 3)), KILL_CELLS)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        delay = float(rng.uniform(0.0, KILL_DELAY[phase]))
        if _kill_when(process, phase, database, target, delay):
            killed[phase] = killed.get(phase, 0) + 1
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
    completed = subprocess.run(command, capture_output=True, text=True, timeout=PATIENCE)
    assert completed.returncode == 0, completed.stderr
    records = _records(database)
    recomputed += sum(records[key][1] != created for key, created in finished.items())
    lost = KILL_CELLS - sum(status == "done" for status, _ in records.values())
    print(f"FAULT FIGURES sigkill: trials={len(KILL_PHASES)} corrupt={corrupt} "
          f"recomputed={recomputed} lost={lost} kills_with_the_grid_partly_done={mid_run} "
          f"done_before_final_run={len(finished)} kills_by_phase={killed}")
    assert (corrupt, recomputed, lost) == (0, 0, 0)
    assert killed.get("cells", 0) > 0 and len(finished) > 0  # kills landed between cells


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
    first = subprocess.run(base, capture_output=True, text=True, timeout=PATIENCE)
    assert first.returncode == 0, first.stderr
    before = _records(out / "results.sqlite")
    size = (out / "results.sqlite").stat().st_size
    full = subprocess.run([*base, "-m", "saabas", "treeshap", "mda_bc"], capture_output=True,
                          text=True, timeout=PATIENCE, preexec_fn=_limited_file_size(size))
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
    assert subprocess.run(base, capture_output=True, timeout=PATIENCE).returncode == 0
    before = _records(out / "results.sqlite")
    for path in (out / "results.sqlite", out):
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        result = subprocess.run([*base, "-m", "saabas"], capture_output=True, text=True,
                                timeout=PATIENCE)
    finally:
        out.chmod(0o755)
        (out / "results.sqlite").chmod(0o644)
    assert result.returncode == 2 and "Cannot" in result.stderr
    assert _records(out / "results.sqlite") == before
