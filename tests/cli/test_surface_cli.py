"""The command line as a user meets it, one row per case: argv, exit code, words, files after.

Every row runs ``harness.cli.main.main(argv)`` in this process, from an empty working folder, so
that "nothing written" covers the default run folder and the current folder too (``--out ""``
once wrote there). Bad input must exit 2 with one line on stderr naming what is allowed and
what was received.
"""

from __future__ import annotations

import inspect
import os
import pydoc
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import harness
from harness.cli.main import main
from harness.reports.targets import base as reproduce
from harness.reports.targets.base import Target, TargetContext, TargetPage
from tests._support.cli_outcome import check_stderr

#: a grid of one quick cell, run in this process; a row's own -d / --model / -m replace these
BASE = {"-d": ["iris"], "--model": ["extra_trees[n_estimators=5]"], "-m": ["mdi"],
        "--executor": ["inprocess"]}



def _compare_argv(extra: list[str]) -> list[str]:
    argv = ["compare", *extra, "--no-progress"]
    for flag, values in BASE.items():
        if flag not in extra:
            argv += [flag, *values]
    return argv


def _files(folder: Path) -> list[str]:
    """Every path under ``folder``, relative, sorted (the state a row expects after)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# (extra argv of compare, exit code, words stderr must hold, top-level entries of the work
# folder afterwards)
COMPARE_ROWS = [
    # timeouts: NaN made the process executor spin; inf and huge values crashed after the
    # store was created
    (["--timeout", "nan", "--out", "run"], 2,
     ["timeout must be a number of seconds in (0, 1e6] or None", "got nan"], []),
    (["--timeout", "inf", "--out", "run"], 2, ["timeout must be", "got inf"], []),
    (["--timeout", "1e9", "--out", "run"], 2, ["timeout must be", "got 1000000000.0"], []),
    (["--timeout", "0", "--out", "run"], 2, ["timeout must be", "got 0.0"], []),
    (["--timeout", "-3", "--out", "run"], 2, ["timeout must be", "got -3.0"], []),
    # seeds: a seed past 2**32 - 1 crashed in the store after it was created
    (["--seeds", "99999999999999999999999", "--out", "run"], 2,
     ["seeds must be a list of distinct ints in [0, 2**32 - 1]",
      "got [99999999999999999999999]"], []),
    (["--seeds", "4294967296", "--out", "run"], 2, ["2**32 - 1", "got [4294967296]"], []),
    (["--seeds", "-1", "--out", "run"], 2, ["seeds must be", "got [-1]"], []),
    # duplicate grid entries ran twice and were counted twice
    (["--seeds", "0", "0", "--out", "run"], 2, ["seeds must be a list of distinct ints",
                                                "got [0, 0]", "0 appears twice"], []),
    (["--seeds", "3", "1", "3", "--out", "run"], 2, ["3 appears twice"], []),
    (["-m", "mdi", "mdi", "--out", "run"], 2, ["methods", "mdi", "twice"], []),
    (["-m", "mdi", "-m", "saabas", "mdi", "--out", "run"], 2, ["methods", "twice"], []),
    (["-m", "mdi", "mdi[normalize=false]", "--out", "run"], 2,
     ["methods", "mdi", "twice", "the same configuration"], []),
    (["-m", "mdi[normalize=[true,false]]", "mdi", "--out", "run"], 2, ["twice"], []),
    (["-d", "iris", "iris", "--out", "run"], 2, ["datasets", "iris", "twice"], []),
    (["--model", "extra_trees[n_estimators=5]", "extra_trees[n_estimators=5,max_depth=None]",
      "--out", "run"], 2, ["models", "twice"], []),
    # --out "" wrote the run into the current folder
    (["--out", ""], 2, ["out must be a non-empty path", "got ''"], []),
    # --scheduler without --executor dask was silently ignored
    (["--scheduler", "tcp://127.0.0.1:1", "--out", "run"], 2,
     ["scheduler is used only with executor 'dask'", "got scheduler 'tcp://127.0.0.1:1'",
      "executor 'inprocess'"], []),
    (["--scheduler", "tcp://127.0.0.1:1", "--executor", "process", "--out", "run"], 2,
     ["executor 'process'"], []),
    # --max-memory inf crashed in argparse's type conversion
    (["--max-memory", "inf", "--out", "run"], 2, ["expected a size such as 512M", "'inf'"], []),
    (["--max-memory", "1e400", "--out", "run"], 2, ["expected a size", "'1e400'"], []),
    (["--jobs", "0", "--out", "run"], 2, ["jobs must be an int >= 1 or None", "got 0"], []),
    (["--max-explain", "0", "--out", "run"], 2,
     ["max_explain must be a positive int or None", "got 0"], []),
    # what is allowed still runs
    (["--out", "run"], 0, [], ["run"]),
    (["--seeds", "0", "4294967295", "--timeout", "1e6", "--out", "run"], 0, [], ["run"]),
]


@pytest.mark.parametrize("extra, code, words, after", COMPARE_ROWS,
                         ids=[" ".join(row[0]) or "empty" for row in COMPARE_ROWS])
def test_compare_options(work, capsys, extra, code, words, after):
    assert main(_compare_argv(extra)) == code
    check_stderr(capsys.readouterr().err, code, words)
    assert sorted(os.listdir(work)) == after


def test_duplicate_seeds_in_a_finished_run_are_refused_not_counted(work, capsys):
    """A rerun with a repeated seed is refused too, and leaves the stored run unchanged."""
    assert main(_compare_argv(["--seeds", "0", "--out", "run"])) == 0
    before = {p: p.stat().st_mtime_ns for p in (work / "run").rglob("*")}
    assert main(_compare_argv(["--seeds", "0", "0", "--out", "run"])) == 2
    assert "0 appears twice" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in (work / "run").rglob("*")} == before


# --------------------------------------------------------------------------- the top level

@pytest.mark.parametrize("argv, code, out_words, err_words", [
    (["--version"], 0, [f"harness {harness.__version__}"], []),
    ([], 2, [], ["usage: harness", "compare", "reproduce", "report", "list", "bench"]),
    (["compare", "--help"], 0, ["--timeout", "--scheduler"], []),
])
def test_top_level(capsys, argv, code, out_words, err_words):
    assert main(argv) == code
    captured = capsys.readouterr()
    for word in out_words:
        assert word in captured.out, (word, captured.out)
    for word in err_words:
        assert word in captured.err, (word, captured.err)


def test_python_dash_m_harness_bare_and_version(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                              text=True, timeout=300, cwd=tmp_path)

    bare = run()
    assert bare.returncode == 2
    assert bare.stderr.startswith("usage: harness")
    for command in ("compare", "reproduce", "report", "list", "bench"):
        assert command in bare.stderr
    version = run("--version")
    assert (version.returncode, version.stdout) == (0, f"harness {harness.__version__}\n")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("function, signature_words, doc_words", [
    (harness.compare, ["compare(datasets: ", "seeds: ", "timeout: 'float | None' = 600.0",
                       "force: 'bool' = False"],
     "Run a grid of datasets x models x seeds x methods"),
    (harness.load_results, ["load_results(out: ", "kind: 'str' = 'importances'"],
     "Load a run folder as a tidy pandas DataFrame"),
])
def test_help_shows_the_real_signature_and_docstring(function, signature_words, doc_words):
    """help() once showed ``compare(*args, **kwargs)`` and a one-line pointer."""
    text = pydoc.render_doc(function, renderer=pydoc.plaintext)
    assert "*args" not in text and "**kwargs" not in text
    for word in [*signature_words, doc_words]:
        assert word in text, (word, text[:400])
    assert "Parameters" in text or function is harness.compare


# ---------------------------------------------------------------------------- reproduce

class QuickFake(Target):
    """A target that writes its page at once (stands for geurts-xor)."""

    name, title, source = "fake-target", "A fake target", "nowhere"

    def run(self, context: TargetContext) -> TargetPage:
        return TargetPage(table=pd.DataFrame({"value": [1.0]}), worst="none",
                          verdict="reproduced", scale="quick" if context.quick else "full")


@pytest.fixture
def fake_target(monkeypatch):
    # the registry's dict of targets, which reproduce.TARGETS is
    monkeypatch.setitem(reproduce.TARGETS, "fake-target", "tests.cli.test_surface_cli:QuickFake")


# (argv after "reproduce fake-target", exit code, words on stderr, files under the work
# folder afterwards). A run once wrote into reports/gallery, the committed gallery.
GALLERY_FILES = ["fake-target.json", "fake-target.md", "index.md"]
REPRODUCE_ROWS = [
    (["--quick"], 0, [], ["runs", "runs/reproduce", "runs/reproduce/gallery"]
     + [f"runs/reproduce/gallery/{name}" for name in GALLERY_FILES]),
    ([], 0, [], ["runs", "runs/reproduce", "runs/reproduce/gallery"]
     + [f"runs/reproduce/gallery/{name}" for name in GALLERY_FILES]),
    (["--out", "pages"], 0, [], ["pages"] + [f"pages/{name}" for name in GALLERY_FILES]),
    (["--gallery"], 0, [], ["reports", "reports/gallery"]
     + [f"reports/gallery/{name}" for name in GALLERY_FILES]),
    (["--gallery", "--quick"], 2,
     ["--gallery", "full-scale", "--quick", "without --gallery"], []),
    (["--gallery", "--out", "pages"], 2, ["--gallery", "--out"], []),
]


@pytest.mark.parametrize("extra, code, words, after", REPRODUCE_ROWS,
                         ids=[" ".join(row[0]) or "default" for row in REPRODUCE_ROWS])
def test_reproduce_writes_a_run_folder_unless_asked_for_the_gallery(
        work, capsys, fake_target, extra, code, words, after):
    assert main(["reproduce", "fake-target", *extra, "--no-progress"]) == code
    err = capsys.readouterr().err
    for word in words:
        assert word in err, (word, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
    assert _files(work) == after


def test_reproduce_defaults_are_not_the_committed_gallery():
    assert reproduce.DEFAULT_GALLERY == Path("runs/reproduce/gallery")
    assert reproduce.COMMITTED_GALLERY == Path("reports/gallery")
    assert inspect.signature(reproduce.reproduce).parameters["gallery"].default == \
        reproduce.DEFAULT_GALLERY


def test_the_committed_index_is_what_write_index_writes(tmp_path):
    """The committed gallery's index says how to refresh it (``--gallery``), in the words
    that :func:`harness.reports.targets.base.write_index` writes."""
    committed = Path(__file__).parents[2] / reproduce.COMMITTED_GALLERY
    for summary in committed.glob("*.json"):
        (tmp_path / summary.name).write_text(summary.read_text())
    written = reproduce.write_index(tmp_path).read_text()
    assert written == (committed / "index.md").read_text()
    assert "`python -m harness reproduce all --gallery`" in written


def test_out_naming_a_file_is_refused_and_the_file_kept(work, capsys):
    (work / "notes.txt").write_text("mine")
    assert main(_compare_argv(["--out", "notes.txt"])) == 2
    err = capsys.readouterr().err
    assert "out must be a run folder; got 'notes.txt', which is a file." in err
    assert len(err.strip().splitlines()) == 1
    assert _files(work) == ["notes.txt"] and (work / "notes.txt").read_text() == "mine"


def test_reproduce_geurts_xor_quick_leaves_the_committed_gallery_alone(work, capsys):
    """The issue's own case, with the real target: run from a checkout, ``reproduce geurts-xor
    --quick`` once replaced four tracked files of reports/gallery."""
    committed = Path(__file__).parents[2] / "reports" / "gallery"
    gallery = work / "reports" / "gallery"
    gallery.mkdir(parents=True)
    names = ["geurts-xor.md", "geurts-xor.json", "geurts-xor.png", "index.md"]
    for name in names:
        (gallery / name).write_bytes((committed / name).read_bytes())
    assert main(["reproduce", "geurts-xor", "--quick", "--no-progress"]) == 0
    for name in names:
        assert (gallery / name).read_bytes() == (committed / name).read_bytes(), name
    pages = work / "runs" / "reproduce" / "gallery"
    assert sorted(p.name for p in pages.iterdir()) == sorted(names)
    assert "Scale: quick" in (pages / "geurts-xor.md").read_text()
    assert "index: runs/reproduce/gallery/index.md" in capsys.readouterr().out
