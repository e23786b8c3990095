"""``python -m harness reproduce``: the gallery pages and what they claim, at quick scale."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import UnknownNameError
from harness.reports.targets.base import TARGETS, reproduce
from harness.run.results import RunResults


def test_unknown_target_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(UnknownNameError, match="geurts2016-srs"):
        reproduce(["geurts2016-srs", "no-such-target"], quick=True, gallery=tmp_path,
                  store_root=tmp_path / "runs")
    assert not any(tmp_path.iterdir())


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


def test_a_target_reads_only_the_cells_of_its_current_grid(tmp_path):
    """A target's store keeps the cells of earlier runs' grids (and of earlier versions of a
    method); the results a target gets back hold the cells of the grids it ran, only."""
    from harness.reports.targets.base import TargetContext

    grid = dict(datasets=["iris"], models=["extra_trees[n_estimators=3]"], seeds=[0])
    earlier = TargetContext(tmp_path / "gallery", tmp_path / "runs", quick=True)
    earlier.compare("t", methods=["mdi", "saabas"], **grid)
    context = TargetContext(tmp_path / "gallery", tmp_path / "runs", quick=True)
    later = context.compare("t", methods=["mdi"], **grid)
    assert later.cells_table()["method"].tolist() == ["mdi"]
    assert len(later.cells) == 1 and len(RunResults.open(context.store("t")).cells) == 2


def test_a_target_that_runs_its_grid_in_parts_reads_every_part(tmp_path):
    from harness.reports.targets.base import TargetContext

    grid = dict(datasets=["iris"], models=["extra_trees[n_estimators=3]"], methods=["mdi"])
    stale = TargetContext(tmp_path / "gallery", tmp_path / "runs", quick=True)
    stale.compare("t", seeds=[9], **grid)  # an earlier run's grid, kept in the store
    context = TargetContext(tmp_path / "gallery", tmp_path / "runs", quick=True)
    context.compare("t", seeds=[0], **grid)
    both = context.compare("t", seeds=[1], **grid)
    assert sorted(both.cells_table()["seed"].tolist()) == [0, 1]
