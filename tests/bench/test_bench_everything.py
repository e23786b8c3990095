"""``python -m harness bench --everything``: every section in one run, a failing one reported
without ending the run, the headlines and wall times at the end; and the modes refused in
combination."""

from __future__ import annotations

import json

import numba
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor

from harness.bench import runner as bench
from harness.cli import bench as bench_cli
from harness.cli.main import build_parser, main


def test_everything_runs_every_section_and_survives_a_failing_one(monkeypatch, capsys):
    ran = []

    def section(name, code=0):
        def run(args):
            ran.append((name, numba.get_num_threads()))
            numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))  # left dirty
            return bench_cli.Section(code, f"{name} measured")
        return run

    def failing(args):
        ran.append(("broken", numba.get_num_threads()))
        raise RuntimeError("the cluster went away")

    sections = (("first", section("first")), ("second", failing),
                ("third", section("third", code=0)))
    monkeypatch.setattr(bench_cli, "EVERYTHING", sections)
    assert main(["bench", "--everything", "--no-progress"]) == 1  # the failing section's code
    out = capsys.readouterr()
    # in order, each on one thread whatever the one before left
    assert ran == [("first", 1), ("broken", 1), ("third", 1)]
    summary = out.out.split("== every part of the bench, in one run ==")[1]
    lines = [line for line in summary.splitlines() if line.startswith("- ")]
    assert [line.split(" [")[0] for line in lines] == ["- first", "- second", "- third"]
    assert lines[0].endswith("first measured")
    assert lines[1].endswith("error: RuntimeError: the cluster went away")
    assert "bench wall time:" in summary
    assert "the cluster went away" in out.err  # the traceback, for the one who reads it


@pytest.mark.parametrize("argv, expected", [
    (["--everything", "--cold"], "--everything runs every mode; got it with --cold."),
    (["--cold", "--memory"], "give one of --runner, --scaling, --cold, --memory; got --cold "
                             "and --memory."),
    (["--everything", "--threads", "2"], "--everything runs every section on its own settings"),
    (["--everything", "--repeat", "0"], "--repeat must be an int >= 1; got 0."),
])
def test_modes_given_together_are_refused_in_one_line(argv, expected, monkeypatch, capsys):
    monkeypatch.setattr(bench_cli, "EVERYTHING", ())  # nothing may run
    assert main(["bench", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1


def test_the_threads_section_times_the_thread_targets_into_its_own_table(tmp_path,
                                                                         monkeypatch):
    """The threads section of --everything: the methods with a thread target only, on two
    threads beside one, written beside the one-thread table (not over it); numba back on one
    thread after it."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    tiny = bench.BenchCase(
        "tiny-everything", "Friedman #1, 200 rows, 10 trees",
        lambda: make_friedman1(n_samples=200, random_state=0),
        lambda: RandomForestRegressor(n_estimators=10, random_state=0),
        ("local_mdi", "sobol_mda"))
    monkeypatch.setitem(bench.CASES, "tiny-everything", tiny)
    out = tmp_path / "bench.json"
    args = build_parser().parse_args(
        ["bench", "--repeat", "1", "--out", str(out), "--no-progress"])
    args.case = ["tiny-everything"]
    outcome = bench_cli._threads_table(args)
    assert numba.get_num_threads() == 1
    assert not out.exists()
    rows = json.loads((tmp_path / "bench-threads.json").read_text())
    assert [(row["method"], row["threads"]) for row in rows] == [("sobol_mda", 2)]
    assert rows[0]["same_as_one_thread"] is True
    assert outcome.headline.startswith("1 timings on 2 thread(s)")


def test_the_scaling_section_writes_beside_the_table_not_over_it(tmp_path, monkeypatch):
    written = []
    monkeypatch.setattr(bench_cli, "_scaling",
                        lambda args: written.append(args.out) or bench_cli.Section(0, ""))
    args = build_parser().parse_args(["bench", "--out", str(tmp_path / "table.json")])
    bench_cli._scaling_beside_table(args)
    assert written == [tmp_path / "scaling.json"]
