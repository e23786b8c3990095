"""The store's surface, as an adversarial user meets it (issue 17, defects 1, 2, 5, 7).

Each row of ``DAMAGES`` damages a copy of a finished run folder, runs one command on it and
states the exit code, the words its one error line must contain, and what the store holds
afterwards. The tests below the table drive real runner processes: two runners on one folder,
a runner killed with SIGKILL or SIGTERM, a cell that outlives every limit.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import harness
from harness.cli.main import main
from harness.core.errors import StoreDamagedError, StoreLostError
from harness.run.cell_result import CellResult
from harness.run.store import Store

REPO = Path(__file__).resolve().parents[2]
GRID = dict(datasets=["iris", "led"], models=["extra_trees[n_estimators=4]"],
            methods=["mdi", "local_mdi"], seeds=[0], jobs=1, max_explain=20)
DONE_CELLS = 4
#: Seconds to wait for a process to do something that takes a fraction of a second when idle;
#: generous, so that a loaded machine only makes the test slower, never failing.
PATIENCE = 120.0


class Payload:
    """Unpickling this creates a file: the proof that a store ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    summary = harness.compare(**GRID, out=out, reports=False)
    assert summary.line() == (f"cells: {DONE_CELLS} total, {DONE_CELLS} done (0 reused), "
                              "0 skipped, 0 error, 0 timeout")
    return out


def _statuses(out: Path) -> dict[str, str]:
    with sqlite3.connect(out / "results.sqlite") as conn:
        return dict(conn.execute("SELECT key, status FROM cells"))


# --- damages: (how, what runs, exit code, words, store afterwards) ----------------------------
def plant_pickle(out: Path) -> None:
    """Replace every stored ground truth by a pickle that would create ``marker``."""
    with sqlite3.connect(out / "results.sqlite") as conn:
        conn.execute("UPDATE datasets SET truth = ?",
                     (pickle.dumps(Payload(out.parent / "marker")),))


def random_bytes_inside(out: Path) -> None:
    """Overwrite the second and third pages of the database with random bytes."""
    path = out / "results.sqlite"
    data = bytearray(path.read_bytes())
    data[4096:12288] = np.random.default_rng(0).bytes(8192)
    path.write_bytes(bytes(data))


def random_bytes_whole(out: Path) -> None:
    (out / "results.sqlite").write_bytes(np.random.default_rng(1).bytes(65536))


def truncated(out: Path) -> None:
    path = out / "results.sqlite"
    path.write_bytes(path.read_bytes()[:3000])


@dataclass(frozen=True)
class Damage:
    damage: object
    command: str  # "report" | "compare" (resume the same grid) | "load_results"
    exit_code: int | type
    words: tuple[str, ...]
    afterwards: str  # "done kept" | "truth as json" | "untouched"


DAMAGES = {
    "pickled truth, report": Damage(plant_pickle, "report", 0, (), "done kept"),
    "pickled truth, resumed compare": Damage(plant_pickle, "compare", 0,
                                             ("4 done (4 reused)",), "truth as json"),
    "pickled truth, load_results": Damage(plant_pickle, "load_results", 0, (), "done kept"),
    "random bytes inside, report": Damage(random_bytes_inside, "report", 2,
                                          ("damaged", "Move it aside", "results.sqlite"),
                                          "untouched"),
    "random bytes inside, resumed compare": Damage(
        random_bytes_inside, "compare", 2, ("damaged", "run compare again"), "untouched"),
    "random bytes inside, load_results": Damage(random_bytes_inside, "load_results",
                                                StoreDamagedError, ("damaged",), "untouched"),
    "not a database, report": Damage(random_bytes_whole, "report", 2,
                                     ("damaged", "restore it from a copy"), "untouched"),
    "not a database, resumed compare": Damage(random_bytes_whole, "compare", 2,
                                              ("damaged",), "untouched"),
    "truncated, report": Damage(truncated, "report", 2, ("damaged",), "untouched"),
}


@pytest.mark.parametrize("case", sorted(DAMAGES))
def test_a_damaged_or_planted_store_is_read_safely(case, finished_run, tmp_path, capsys):
    row = DAMAGES[case]
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    row.damage(out)
    before = (out / "results.sqlite").read_bytes()
    if row.command == "load_results":
        if isinstance(row.exit_code, type):
            with pytest.raises(row.exit_code) as raised:
                harness.load_results(out, kind="importances")
            message = str(raised.value)
        else:
            assert len(harness.load_results(out, kind="importances")) > 0
            message = ""
    else:
        argv = ["report", str(out)] if row.command == "report" else [
            "compare", "-d", *GRID["datasets"], "--model", *GRID["models"], "-m",
            *GRID["methods"], "--seeds", "0", "--jobs", "1", "--max-explain", "20",
            "--out", str(out), "--no-progress"]
        code = main(argv)
        captured = capsys.readouterr()
        assert code == row.exit_code, captured.err
        message = captured.out + captured.err
        if code == 2:
            assert len(captured.err.strip().splitlines()) == 1, captured.err
        assert "Traceback" not in message
    for word in row.words:
        assert word in message
    assert not (out.parent / "marker").exists(), "a pickle in the store was unpickled"
    if row.afterwards == "untouched":
        assert (out / "results.sqlite").read_bytes() == before
    else:
        assert set(_statuses(out).values()) == {"done"} and len(_statuses(out)) == DONE_CELLS
    if row.afterwards == "truth as json":
        with Store(out, create=False) as store:
            truth = store.truth("led", 0)
        assert truth is not None and truth.relevant.sum() == 7  # the 7 LED segments
        assert not (out.parent / "marker").exists()


def test_ground_truth_round_trips_through_json_and_npy(finished_run):
    led = harness.load_dataset("led")
    with Store(finished_run, create=False) as store:
        stored = store.truth("led", 0)
        raw = store._conn.execute("SELECT truth FROM datasets WHERE dataset = 'led'").fetchone()
    assert isinstance(raw[0], str) and json.loads(raw[0])["format"] == "harness-truth/1"
    assert np.array_equal(stored.relevant, led.truth.relevant)
    assert set(stored.quantities) == set(led.truth.quantities)
    for name, vector in led.truth.quantities.items():
        assert np.array_equal(stored.quantities[name].values, vector.values)
        assert stored.quantities[name].compares_to == vector.compares_to


# --- a done cell is never replaced by a failure ------------------------------------------------
WRITES = [  # statuses written one after the other -> status stored at the end
    (("done", "error"), "done"),
    (("done", "timeout"), "done"),
    (("done", "not_installed"), "done"),
    (("error", "done"), "done"),
    (("timeout", "error"), "error"),
    (("done", "done"), "done"),
]


@pytest.mark.parametrize(("writes", "stored"), WRITES)
def test_a_stored_done_cell_is_never_replaced_by_a_failure(writes, stored, tmp_path):
    with Store(tmp_path) as store:
        for number, status in enumerate(writes):
            values = np.full(3, float(number)) if status == "done" else None
            store.record_cell({"key": "k"}, CellResult(status, values=values))
        row = store._conn.execute("SELECT status, vals FROM cells").fetchone()
    assert row["status"] == stored
    last_done = max((i for i, s in enumerate(writes) if s == "done"), default=None)
    if last_done is not None:  # the values are those of the last done write
        assert np.array_equal(np.load(__import__("io").BytesIO(row["vals"])),
                              np.full(3, float(last_done)))


def test_a_store_deleted_mid_run_is_said_lost_not_intact(tmp_path):
    with Store(tmp_path) as store:
        store.record_cell({"key": "a"}, CellResult("done", values=np.ones(2)))
        (tmp_path / "results.sqlite").unlink()
        with pytest.raises(StoreLostError) as raised:
            store.record_cell({"key": "b"}, CellResult("done", values=np.ones(2)))
    assert "deleted or replaced" in str(raised.value)
    assert "intact" not in str(raised.value)


def test_the_summary_numbers_add_up_on_a_second_identical_run(tmp_path):
    """A stored skipped cell is reused but is not a done cell: R counts done cells only."""
    grid = dict(datasets=["iris"], models=["extra_trees[n_estimators=3]"], jobs=1,
                methods=["mdi", "local_mdi", "mda_bc"], out=tmp_path / "run", reports=False)
    first = harness.compare(**grid)  # mda_bc needs bootstrap: skipped
    assert first.line() == "cells: 3 total, 2 done (0 reused), 1 skipped, 0 error, 0 timeout"
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as conn:  # failed last time
        conn.execute("UPDATE cells SET status = 'error' WHERE method = 'local_mdi'")
    again = harness.compare(**grid)
    assert again.line() == "cells: 3 total, 2 done (1 reused), 1 skipped, 0 error, 0 timeout"
    assert again.total == (again.done + again.skipped + again.error + again.timeout
                           + again.not_installed)


# --- runner processes ---------------------------------------------------------------------------
def _start_blocking_runner(out: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    pidfile, release = tmp_path / "cell.pid", tmp_path / "release"
    env = {**os.environ, "HARNESS_TEST_PIDFILE": str(pidfile),
           "HARNESS_TEST_RELEASE": str(release)}
    process = subprocess.Popen([sys.executable, "-m", "tests._support.blocking_method", str(out)],
                               cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + PATIENCE
    while not pidfile.exists():  # the blocking cell is running: the runner holds the folder
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the blocking cell never started"
        time.sleep(0.05)
    return process, pidfile, release


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _compare_cli(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", "compare", "-d", "iris", "--model",
         "extra_trees[n_estimators=3]", "-m", "mdi", "--out", str(out), "--no-progress"],
        cwd=REPO, capture_output=True, text=True, timeout=PATIENCE)


def test_a_second_runner_on_the_same_folder_refuses_and_changes_nothing(tmp_path):
    out = tmp_path / "run"
    first, _, release = _start_blocking_runner(out, tmp_path)
    try:
        deadline = time.monotonic() + PATIENCE
        while list(_statuses(out).values()) != ["done"]:  # the runner's other cell, mdi
            assert time.monotonic() < deadline
            time.sleep(0.05)
        files_before = sorted(p.name for p in out.iterdir())
        cells_before = _statuses(out)
        second = _compare_cli(out)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert f"pid {first.pid}" in lines[0] and socket.gethostname() in lines[0]
        assert "started 20" in lines[0] and "in use by another runner" in lines[0]
        assert "cells:" not in second.stdout
        assert sorted(p.name for p in out.iterdir()) == files_before
        assert _statuses(out) == cells_before
    finally:
        release.touch()
    stdout, stderr = first.communicate(timeout=PATIENCE)
    assert first.returncode == 0, stderr
    assert "cells: 2 total, 2 done (0 reused)" in stdout
    assert sorted(set(_statuses(out).values())) == ["done"]


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_killed_runner_takes_its_cells_along_and_the_next_run_resumes(
        signal_name, tmp_path):
    out = tmp_path / "run"
    first, pidfile, release = _start_blocking_runner(out, tmp_path)
    cell_pid = int(pidfile.read_text())
    first.send_signal(getattr(signal, signal_name))  # the runner alone, not its group
    first.communicate(timeout=PATIENCE)
    assert _gone_within(cell_pid, PATIENCE), "the cell's process outlived its runner"
    done_before = _statuses(out)
    release.touch()
    resumed = _compare_cli(out)  # takes over the stale lock at once
    assert resumed.returncode == 0, resumed.stderr
    assert "cells: 1 total, 1 done" in resumed.stdout
    assert {k: v for k, v in _statuses(out).items() if k in done_before} == done_before


def test_a_cell_process_ends_itself_past_its_limit_when_no_runner_does(tmp_path):
    """The backstop when the runner is stopped (SIGSTOP) rather than gone."""
    script = ("import os, time\nfrom harness.run.executors.process import bound_child\n"
              "bound_child(os.getppid(), 0.2, None)\ntime.sleep(3600)\n")
    process = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        assert process.wait(timeout=PATIENCE) == -signal.SIGALRM
    finally:
        process.kill()


def test_a_model_fit_past_the_timeout_becomes_timeout_cells_and_the_run_goes_on(tmp_path):
    summary = harness.compare(
        datasets=["iris"], methods=["mdi"], out=tmp_path / "run", jobs=1, timeout=8,
        models=["extra_trees[n_estimators=1000000000]", "extra_trees[n_estimators=3]"],
        reports=False)
    assert summary.line() == "cells: 2 total, 1 done (0 reused), 0 skipped, 0 error, 1 timeout"
    cells = harness.load_results(tmp_path / "run", kind="cells").set_index("model")
    reason = cells.loc["extra_trees[n_estimators=1000000000]", "reason"]
    assert "fitting the model exceeded the time limit of 8 s" in reason
