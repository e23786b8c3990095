"""The command line: bad input exits 2 and writes nothing; a tiny grid writes every output."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli.main import main


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("args, expected", [
    (["-m", "nope"], "Unknown method 'nope'. Available methods: conditional_permutation, "
                     "local_mdi, loco, mda_bc, mda_ik, mda_test, mdi, mdi_oob, rs, saabas, sage, "
                     "shaff, sobol_mda, srs, tree_sage, treeshap, ufi."),
    (["-d", "nope"], "Unknown dataset 'nope'. Available datasets: breast_cancer,"),
    (["-m", "treeshap[n_background=0]"], "The 'n_background' parameter of treeshap must be "
                                         "an int in [1, inf). Got 0 instead."),
    (["-m", "mdi[bogus=1]"], "mdi has no parameter 'bogus'. Allowed parameters: normalize."),
    (["--model", "gbm"], "Unknown model 'gbm'. Available models: decision_tree, extra_trees, "
                         "gradient_boosting, hist_gradient_boosting, lightgbm, random_forest, "
                         "xgboost."),
    (["--model", "extra_trees[n_estimators=0]"], "The 'n_estimators' parameter of "
                                                 "extra_trees must be an int in [1, inf)."),
    (["-d", "diabetes", "--model", "extra_trees[criterion=gini]"], "criterion"),
    (["--seeds", "-1"], "seeds must be a list of distinct ints in [0, 2**32 - 1], or None "
                         "for [0]; got [-1]."),
    (["--jobs", "0"], "jobs must be an int >= 1 or None (one per CPU); got 0."),
    (["--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
    (["--config", "missing.toml"], "Cannot read config 'missing.toml'"),
    (["-m", "mdi[normalize]"], "expected param=value"),
    (["-m", "treeshap[n_background=abc]"], "must be an int in [1, inf). Got 'abc' instead."),
    (["-m", "mdi[normalize=[]]"], "The grid has no methods; give at least one."),
    (["-m", "tree_sage[imputation=exact]"], "The 'imputation' parameter of tree_sage must be "
                                            "a str among {'marginal', 'path_dependent'}"),
    (["-m", "mda_bc[loss=hinge]"], "The 'loss' parameter of mda_bc must be a str among"),
    (["-d", "led[n_samples=-3]"], "The 'n_samples' parameter of led must be None or an int "
                                  "in [1, inf). Got -3 instead."),
    (["-d", "linear_gaussian[groups=4]"], "must be an int in [1, 6] that divides the number "
                                          "of coefficients (6). Got 4 instead."),
    (["-d", "linear_gaussian[preset=nope]"], "The 'preset' parameter of linear_gaussian"),
    (["--model", "extra_trees[max_samples=0.5]"], "needs bootstrap=true"),
    (["--timeout", "0"], "timeout must be a number of seconds in (0, 1e6] or None (no limit); "
                        "got 0.0."),
    (["--max-memory", "lots"], "expected a size such as 512M, 2G or a number of bytes; "
                               "got 'lots'"),
    (["--executor", "nope"], "invalid choice: 'nope' (choose from 'process', 'inprocess', "
                             "'dask')"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, expected):
    out = tmp_path / "run"
    code = main(["compare", *args, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_argparse_errors_are_one_line_and_exit_2(tmp_path):
    result = _run("compare", "--jobs", "two", "--out", str(tmp_path / "x"))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_malformed_toml_config(tmp_path, capsys):
    config = tmp_path / "grid.toml"
    config.write_text("datasets = [led\n")
    assert main(["compare", "--config", str(config), "--out", str(tmp_path / "r")]) == 2
    assert "is not valid TOML" in capsys.readouterr().err
    config.write_text('datasets = ["led"]\ncolour = "blue"\n')
    assert main(["compare", "--config", str(config), "--out", str(tmp_path / "r")]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_list_shows_methods_datasets_and_installation():
    result = _run("list")
    assert result.returncode == 0
    for name in ("mdi", "local_mdi", "saabas", "treeshap", "led", "xor", "linear_gaussian"):
        assert name in result.stdout
    assert "[installed]" in result.stdout
    models = result.stdout.split("models:")[1]
    for name in ("random_forest", "decision_tree", "gradient_boosting",
                 "hist_gradient_boosting", "xgboost", "lightgbm"):
        assert f"  {name} " in models


def test_tiny_compare_writes_table_csvs_figures_and_index(tmp_path):
    config = tmp_path / "grid.toml"
    config.write_text(
        'datasets = ["led", "iris"]\n'
        'models = ["extra_trees[n_estimators=10,max_features=1]"]\n'
        'methods = ["mdi", "local_mdi", "saabas", "treeshap"]\n'
        "seeds = [0]\n"
    )
    out = tmp_path / "run"
    result = _run("compare", "--config", str(config), "--out", str(out), "--jobs", "2",
                  "--no-progress", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "cells: 8 total, 8 done (0 reused), 0 skipped, 0 error, 0 timeout" in result.stdout
    index = (out / "index.html").read_text()
    csvs = sorted(p.name for p in out.glob("*.csv"))
    figures = sorted(p.name for p in out.rglob("*.png"))
    assert {"results.csv", "cells.csv", "timing.csv", "accuracy.csv",
            "correlation_local_summary.csv"} <= set(csvs)
    assert figures, "no figure was written"
    for name in csvs + figures:
        assert name in index, f"index.html does not link {name}"
    rerun = _run("compare", "--config", str(config), "--out", str(out), "--no-progress",
                 cwd=tmp_path)
    assert "cells: 8 total, 8 done (8 reused)" in rerun.stdout


def test_progress_into_a_log_file_is_not_redrawn_for_every_update(capsys):
    """A cell's progress comes many times a second; a bar written to a file (not a terminal)
    is redrawn at most every 10 s, so 500 updates in a moment draw the bar a few times."""
    from types import SimpleNamespace

    from harness.cli.main import _Progress

    progress = _Progress(enabled=True)
    progress("total", (3, 0))
    cell = SimpleNamespace(method="loco")
    for step in range(500):
        progress("progress", (cell, step / 500))
    progress("cell", (cell, "done"))
    progress.close()
    err = capsys.readouterr().err
    assert "3/3" not in err and "1/3" in err  # the last state is drawn when the bar closes
    assert err.count("\r") <= 4, err.count("\r")
