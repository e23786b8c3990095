"""``python -m harness bench --cold`` on the cheapest setting: its table's shape and wording
(the figures themselves are the bench's, never asserted here)."""

from __future__ import annotations

from harness.cli.main import main


def test_bench_cold_prints_the_three_figures_per_method(capsys):
    assert main(["bench", "--cold", "--method", "mdi", "--processes", "1",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(a) parallel compile of every kernel into an empty cache" in out
    assert "on 1 processes" in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("method"))
    for column in ("(a) its compile s", "(b) wall s", "(b) cpu s", "(b) warm s", "(c) wall s",
                   "(c) cpu s", "(c) meets"):
        assert column in header
    assert any(line.split()[:1] == ["mdi"] for line in out.splitlines())


def test_bench_cold_refuses_a_bad_process_count(capsys):
    assert main(["bench", "--cold", "--processes", "0", "--no-progress"]) == 2
    assert "--processes must be an int >= 1; got 0" in capsys.readouterr().err
