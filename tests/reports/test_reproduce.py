"""``python -m harness reproduce``: the gallery pages and what they claim, at quick scale."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.core.errors import UnknownNameError
from harness.reports.targets.base import TARGETS, VERDICTS, reproduce


def test_unknown_target_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(UnknownNameError, match="geurts2016-srs"):
        reproduce(["geurts2016-srs", "no-such-target"], quick=True, gallery=tmp_path,
                  store_root=tmp_path / "runs")
    assert not any(tmp_path.iterdir())


def test_geurts2016_srs_quick_page_states_what_its_curves_show(tmp_path):
    [page] = reproduce(["geurts2016-srs"], quick=True, gallery=tmp_path,
                       store_root=tmp_path / "runs")
    text = page.read_text()
    summary = json.loads((tmp_path / "geurts2016-srs.json").read_text())
    assert summary["verdict"] in VERDICTS and summary["scale"].startswith("quick")
    assert "geurts2016-srs" in (tmp_path / "index.md").read_text()
    assert (tmp_path / "geurts2016-srs.png").stat().st_size > 10_000
    rows = [line for line in text.splitlines() if line.startswith("| 500 |")]
    assert len(rows) == 1
    cells = [float(cell) for cell in rows[0].strip("|").split("|")]
    auprc_rs, auprc_srs, auprc_gap = cells[1:4]
    accuracy_rs, accuracy_srs, accuracy_gap = cells[4:7]
    # 20 relevant among 500 features: a random ranking has AUPRC about 0.04
    assert auprc_rs > 0.5 and auprc_srs > 0.5
    assert 0.6 < accuracy_rs <= 1 and 0.6 < accuracy_srs <= 1
    assert auprc_gap == pytest.approx(auprc_srs - auprc_rs, abs=2e-4)
    assert accuracy_gap == pytest.approx(accuracy_srs - accuracy_rs, abs=2e-4)
    for score, gap in (("auprc", auprc_gap), ("accuracy", accuracy_gap)):
        verdict = "holds" if gap >= 0 else "does not hold"
        assert f"Claim 'SRS >= RS in {score} at every p': {verdict}." in text
    assert (summary["verdict"] == "reproduced") == (auprc_gap >= 0 and accuracy_gap >= 0)


def test_every_registered_target_imports():
    from harness.reports.targets.base import load_target

    for name in TARGETS:
        target = load_target(name)
        assert target.name == name and target.source and target.title
    assert np.all([name == name.lower() for name in TARGETS])


@pytest.mark.parametrize("argv, message", [
    (["reproduce"], "Name the targets"),
    (["reproduce", "nope"], "Unknown reproduction target 'nope'"),
    (["reproduce", "geurts-xor", "nope"], "Unknown reproduction target 'nope'"),
])
def test_cli_bad_targets_are_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    from harness.cli.main import main

    code = main([*argv, "--out", str(tmp_path / "gallery"), "--store", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]
    assert not any(tmp_path.iterdir())
