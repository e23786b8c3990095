"""Dask as users deploy it: ``dask scheduler`` and ``dask worker`` from their command lines.

One test, in phases, against a scheduler and two single-threaded workers (each under its
nanny, the default) on the loopback address, driven through ``python -m harness compare
--executor dask --scheduler tcp://127.0.0.1:PORT`` in a subprocess:

1. a worker is killed with SIGKILL while it runs a cell: the cell is submitted again, the run
   completes, and every value equals the in-process executor's;
2. the scheduler is killed mid-run: the runner exits with one line and a nonzero code; a
   rerun against a new scheduler and new workers resumes, recomputing no finished cell.

Nothing waits on a clock: the cells of ``cluster_gate`` (tests/_support/cluster_gate.py, a
plugin installed through an entry point) hold their worker threads until the test opens the
gate, and each kill lands once the cells it must interrupt have said they are waiting. Every
process started here is killed in a ``finally``, whatever the outcome.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

import harness  # noqa: E402
from tests._support.cluster_gate import ClusterGate  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: Seconds to wait for an event before declaring the harness hung (never met when it works).
PATIENCE = 240
GRID = {"datasets": ["iris"], "models": ["random_forest[n_estimators=5]"],
        "methods": ["mdi", "saabas", "cluster_gate"], "seeds": [0, 1, 2]}
N_CELLS = 9


def _free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(condition, what: str) -> None:
    """Poll ``condition`` until it holds; past PATIENCE s the harness is hung, not slow."""
    give_up = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _install_plugin(site: Path) -> None:
    """The gate method as pip would leave a plugin: a dist-info with an entry point."""
    info = site / "cluster_gate_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cluster-gate-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[harness.methods]\ncluster_gate = tests._support.cluster_gate:ClusterGate\n")


class Cluster:
    """Processes started by the test: all killed (with their children) by :meth:`kill_all`."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.tmp_path, self.env = tmp_path, env
        self.processes: list[subprocess.Popen] = []

    def start(self, *command: str, log: str) -> subprocess.Popen:
        with open(self.tmp_path / log, "ab") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", *command], cwd=self.tmp_path, env=self.env,
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def scheduler(self) -> tuple[subprocess.Popen, str]:
        port = _free_port()
        process = self.start("dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                             "--no-dashboard", log=f"scheduler-{port}.log")
        _wait_for(lambda: process.poll() is not None or _accepts(port), "the scheduler")
        assert process.poll() is None, (self.tmp_path / f"scheduler-{port}.log").read_text()
        return process, f"tcp://127.0.0.1:{port}"

    def worker(self, address: str, n: int) -> subprocess.Popen:
        return self.start("dask", "worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                          "--no-dashboard", log=f"worker-{n}.log")

    def compare(self, address: str, out: Path) -> subprocess.Popen:
        flags = ["-d", *GRID["datasets"], "--model", *GRID["models"], "-m", *GRID["methods"],
                 "--seeds", *map(str, GRID["seeds"]), "--executor", "dask", "--scheduler",
                 address, "--out", str(out), "--timeout", "600", "--no-progress"]
        process = subprocess.Popen([sys.executable, "-m", "harness", "compare", *flags],
                                   cwd=self.tmp_path, env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.processes.append(process)
        return process

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        """SIGKILL a process and the children of its session (a nanny's worker)."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def kill_all(self) -> None:
        for process in self.processes:
            self.kill(process)


@pytest.fixture
def cluster(tmp_path):
    site, gate = tmp_path / "site", tmp_path / "gate"
    _install_plugin(site)
    gate.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
           "HARNESS_TEST_GATE": str(gate)}
    processes = Cluster(tmp_path, env)
    try:
        yield processes
    finally:
        processes.kill_all()


def _waiting(gate: Path) -> list[int]:
    """Worker process ids of the gate cells waiting now (one marker per waiting cell)."""
    return [int(p.name.split("-")[1]) for p in gate.glob("waiting-*")]


def _stored(out: Path) -> dict[str, tuple[str, float]]:
    """(status, created) of every stored cell."""
    with closing(sqlite3.connect(out / "results.sqlite")) as conn:
        return {key: (status, created) for key, status, created in
                conn.execute("SELECT key, status, created FROM cells")}


def _values(out: Path) -> dict[tuple, float]:
    table = harness.load_results(out)
    return {(row.method, row.seed, row.feature): row.value for row in table.itertuples()}


def _finish(runner: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = runner.communicate(timeout=PATIENCE)
    return runner.returncode, stdout, stderr


def test_a_cluster_started_from_the_command_line_survives_a_killed_worker_and_scheduler(
        cluster, tmp_path):
    gate = Path(cluster.env["HARNESS_TEST_GATE"])
    scheduler, address = cluster.scheduler()
    cluster.worker(address, 1)
    cluster.worker(address, 2)
    local = harness.compare(**{**GRID, "methods": ["mdi", "saabas", ClusterGate()]},
                            out=tmp_path / "local", executor="inprocess", reports=False)
    assert local.done == N_CELLS
    expected = _values(tmp_path / "local")

    # 1. SIGKILL one worker while its thread runs a gate cell
    runner = cluster.compare(address, tmp_path / "run1")
    _wait_for(lambda: len(set(_waiting(gate))) == 2 or runner.poll() is not None,
              "a gate cell on each worker")
    assert runner.poll() is None, runner.communicate()
    victim = _waiting(gate)[0]
    os.kill(victim, signal.SIGKILL)  # the worker process; its nanny starts a fresh one
    (gate / "open").touch()
    code, stdout, stderr = _finish(runner)
    assert code == 0, stderr
    assert f"cells: {N_CELLS} total, {N_CELLS} done (0 reused)" in stdout
    assert _values(tmp_path / "run1") == expected  # the killed cell ran again, elsewhere

    # 2. kill the scheduler while gate cells hold both worker threads
    (gate / "open").unlink()
    for marker in gate.glob("waiting-*"):
        marker.unlink()
    out = tmp_path / "run2"
    runner = cluster.compare(address, out)
    _wait_for(lambda: len(_waiting(gate)) == 2 or runner.poll() is not None,
              "two gate cells waiting")
    assert runner.poll() is None, runner.communicate()
    _wait_for(lambda: (out / "results.sqlite").exists()
              and sum(s == "done" for s, _ in _stored(out).values()) >= 2,
              "the cells before the gates stored")
    cluster.kill(scheduler)
    code, stdout, stderr = _finish(runner)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code != 0
    assert len(lines) == 1, stderr
    assert lines[0].startswith("harness: error: lost the connection to the Dask scheduler "
                               f"{address} mid-run"), stderr
    before = _stored(out)
    finished = {key: created for key, (status, created) in before.items() if status == "done"}
    assert 2 <= len(finished) < N_CELLS and set(before) == set(finished)  # no failure stored

    # ... and a rerun against a new scheduler resumes
    for process in cluster.processes[:-1]:
        cluster.kill(process)  # the old workers, still holding the gate cells
    (gate / "open").touch()
    _, address = cluster.scheduler()
    cluster.worker(address, 3)
    cluster.worker(address, 4)
    code, stdout, stderr = _finish(cluster.compare(address, out))
    assert code == 0, stderr
    assert f"cells: {N_CELLS} total, {N_CELLS} done ({len(finished)} reused)" in stdout
    after = _stored(out)
    assert {key: after[key][1] for key in finished} == finished  # recomputed none of them
    assert _values(out) == expected
    assert np.isfinite(list(expected.values())).all()
