"""``python -m harness bench --cold`` on the cheapest setting: its table's shape and wording
(the figures themselves are the bench's, never asserted here)."""

from __future__ import annotations

import pytest

from harness.bench.cold import MEETS, MISSES, OWN_WORK, TARGET_SECONDS, verdict
from harness.cli.main import main


def test_bench_cold_prints_the_three_figures_per_method(capsys):
    assert main(["bench", "--cold", "--method", "mdi", "--processes", "1",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(a) parallel compile of every kernel into an empty cache" in out
    assert "on 1 processes" in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("method"))
    for column in ("(a) its compile s", "(b) wall s", "(b) cpu s", "(b) warm s",
                   "(b) - warm s", "(b) verdict", "(c) wall s", "(c) cpu s", "(c) meets"):
        assert column in header
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["mdi"])
    wall, warm, extra = (float(row[k]) for k in (2, 4, 5))  # (b) wall, warm, wall - warm
    assert abs(extra - (wall - warm)) <= 0.011, row  # each printed to 0.01
    assert row[6] == verdict(wall, warm) or abs(wall - TARGET_SECONDS) <= 0.01, row
    summary = out.strip().splitlines()[-1]
    assert "first calls after the compile within 2 s: " in summary
    assert "over by their own work alone" in summary and "missed: " in summary


@pytest.mark.parametrize("first, warm, expected", [
    (0.3, 0.1, MEETS),  # within the target
    (2.0, 1.9, MEETS),  # at it
    (2.99, 2.44, OWN_WORK),  # LOCO's refits alone take longer than the target
    (4.1, 2.2, OWN_WORK),  # ... and the first call adds 1.9 s, within it
    (4.5, 2.4, MISSES),  # adds 2.1 s: a wait over the target whatever the work
    (2.5, 1.9, MISSES),  # its own work fits the target, so its first call must too
    (float("nan"), float("nan"), MISSES),  # a failed call
])
def test_verdict_reads_the_target_as_the_wait_beyond_the_methods_own_work(first, warm,
                                                                          expected):
    assert verdict(first, warm) == expected


def test_bench_cold_refuses_a_bad_process_count(capsys):
    assert main(["bench", "--cold", "--processes", "0", "--no-progress"]) == 2
    assert "--processes must be an int >= 1; got 0" in capsys.readouterr().err


def test_first_import_times_a_fresh_process_and_reports_its_failure(tmp_path, monkeypatch):
    """(d)'s plumbing, on a cache whose stamp already matches (so the import compiles nothing
    and takes seconds): wall and CPU seconds, no error; a timeout is reported, not raised."""
    from harness.bench.cold import first_import
    from harness.run import first_import as step

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # the child's fingerprint input
    (tmp_path / "harness-kernels-compiled.txt").write_text(step._fingerprint())
    wall, cpu, error = first_import(str(tmp_path))
    assert error == "" and wall > 0 and cpu > 0, (wall, cpu, error)
    assert not list(tmp_path.rglob("*.nbi"))  # nothing compiled
    wall, cpu, error = first_import(str(tmp_path), timeout=0.01)
    assert error == "timeout after 0 s" and wall != wall
