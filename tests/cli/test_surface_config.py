"""A TOML config as a user writes it, one row per case: text, exit code, words, files after.

``compare --config grid.toml`` runs from an empty working folder; the config sits beside it.
A value of the wrong type once gave a traceback or a wrong run (``datasets = "iris"`` ran the
datasets 'i', 'r', 'i', 's'): now every key is checked by the same function as the Python
API's (:func:`harness.run.options.check_option`), and the same values given to
``harness.compare`` raise :class:`BadInputError` with the same words, before anything is
written.
"""

from __future__ import annotations

import os
import tomllib

import pytest

import harness
from harness.cli.main import main
from tests._support.cli_outcome import check_stderr

#: the grid of one quick cell; a row's own keys replace these
BASE = {"datasets": '["iris"]', "models": '["extra_trees[n_estimators=5]"]',
        "methods": '["mdi"]', "executor": '"inprocess"', "out": '"run"'}

# (TOML text, exit code, words stderr must hold, entries of the work folder afterwards,
# whether harness.compare(**the same values) must raise the same words)
ROWS = [
    # wrong types: tracebacks or wrong runs before
    ("seeds = 0", 2, ["seeds must be a list of distinct ints in [0, 2**32 - 1]", "got 0"],
     [], True),
    ('seeds = "0"', 2, ["seeds must be a list", "got '0'"], [], True),
    ("seeds = [true]", 2, ["seeds must be", "got [True]"], [], True),
    ("seeds = [1.0]", 2, ["seeds must be", "got [1.0]"], [], True),
    ("seeds = [4294967296]", 2, ["2**32 - 1", "got [4294967296]"], [], True),
    ("seeds = [-1]", 2, ["seeds must be", "got [-1]"], [], True),
    ("seeds = [0, 0]", 2, ["0 appears twice"], [], True),
    ('timeout = "x"', 2, ["timeout must be a number of seconds in (0, 1e6] or None",
                          "got 'x'"], [], True),
    ("timeout = nan", 2, ["timeout must be", "got nan"], [], True),
    ("timeout = inf", 2, ["timeout must be", "got inf"], [], True),
    ("timeout = true", 2, ["timeout must be", "got True"], [], True),
    ("out = 5", 2, ["out must be a non-empty path", "got 5"], [], True),
    ('out = ""', 2, ["out must be a non-empty path", "got ''"], [], True),
    ('force = "false"', 2, ["force must be a bool (true or false)", "got 'false'"], [], True),
    ("force = 0", 2, ["force must be a bool", "got 0"], [], True),
    ('datasets = "iris"', 2, ["datasets must be a list", "got 'iris'"], [], True),
    ('models = "extra_trees"', 2, ["models must be a list", "got 'extra_trees'"], [], True),
    ('methods = "mdi"', 2, ["methods must be a list", "got 'mdi'"], [], True),
    ('methods = {name = "mdi"}', 2, ["methods must be a list", "got {'name': 'mdi'}"], [],
     True),
    ("jobs = true", 2, ["jobs must be an int >= 1 or None", "got True"], [], True),
    ("jobs = 1.5", 2, ["jobs must be an int >= 1", "got 1.5"], [], True),
    ('jobs = "2"', 2, ["jobs must be an int >= 1", "got '2'"], [], True),
    ("max_explain = true", 2, ["max_explain must be a positive int or None", "got True"], [],
     True),
    ("max_explain = 0", 2, ["max_explain must be", "got 0"], [], True),
    ("explain_on = 1", 2, ["explain_on must be one of train, test, all", "got 1"], [], True),
    ('explain_on = "some"', 2, ["explain_on must be one of", "got 'some'"], [], True),
    ("executor = 5", 2, ["executor must be one of dask, inprocess, process", "got 5"], [],
     True),
    ("max_memory = true", 2, ["max_memory must be a number of bytes > 0 or None", "got True"],
     [], True),
    ("max_memory = -1", 2, ["max_memory must be", "got -1"], [], True),
    ("max_memory = inf", 2, ["max_memory must be", "got inf"], [], True),
    ('max_memory = "lots"', 2, ["expected a size such as 512M", "got 'lots'"], [], False),
    ('max_memory = "inf"', 2, ["expected a size such as 512M", "got 'inf'"], [], False),
    ("scheduler = 8786", 2, ["scheduler must be", "got 8786"], [], True),
    # a scheduler without the dask executor was silently ignored
    ('scheduler = "tcp://127.0.0.1:1"', 2,
     ["scheduler is used only with executor 'dask'", "executor 'inprocess'"], [], True),
    # the same cell twice ran twice and was counted twice
    ('datasets = ["iris", "iris"]', 2, ["datasets", "iris", "twice"], [], True),
    ('methods = ["mdi", "mdi[normalize=false]"]', 2, ["methods", "twice"], [], True),
    ('methods = ["mdi", {name = "mdi", normalize = false}]', 2, ["methods", "twice"], [],
     True),
    # what is allowed still runs
    ("seeds = [0, 1]\ntimeout = 60\nforce = false\nmax_memory = \"1G\"\njobs = 1", 0, [],
     ["run"], False),
    ('max_memory = 1073741824\nexplain_on = "all"\nmax_explain = 20', 0, [], ["run"], False),
]



def _config_text(text: str) -> str:
    given = tomllib.loads(text)
    return "\n".join([text] + [f"{key} = {value}" for key, value in BASE.items()
                               if key not in given]) + "\n"


@pytest.mark.parametrize("text, code, words, after, api", ROWS,
                         ids=[row[0].replace("\n", "; ") for row in ROWS])
def test_config_values(work, tmp_path, capsys, text, code, words, after, api):
    config = tmp_path / "grid.toml"
    config.write_text(_config_text(text))
    assert main(["compare", "--config", str(config), "--no-progress"]) == code
    check_stderr(capsys.readouterr().err, code, words)
    assert sorted(os.listdir(work)) == after


@pytest.mark.parametrize("text, words", [(row[0], row[2]) for row in ROWS if row[4]],
                         ids=[row[0] for row in ROWS if row[4]])
def test_the_api_refuses_the_same_values(work, text, words):
    options = tomllib.loads(_config_text(text))
    with pytest.raises(harness.BadInputError) as info:
        harness.compare(**options, reports=False)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert "\n" not in message
    assert os.listdir(work) == []


@pytest.mark.parametrize("text", ['seeds = 0', 'timeout = "x"', "out = 5", 'force = "false"',
                                  'datasets = "iris"'])
def test_a_type_error_names_the_config_file(work, tmp_path, capsys, text):
    config = tmp_path / "grid.toml"
    config.write_text(_config_text(text))
    assert main(["compare", "--config", str(config), "--no-progress"]) == 2
    assert f"Config {str(config)!r}: {text.split(' =')[0]} must be" in capsys.readouterr().err


@pytest.mark.parametrize("extra, value, words", [
    # the command line wins over the config, and is checked the same way
    (["--timeout", "nan"], "timeout = 60", ["timeout must be", "got nan"]),
    (["--executor", "dask"], 'scheduler = ""', ["scheduler must be", "got ''"]),
    (["--executor", "process"], 'executor = "dask"\nscheduler = "tcp://127.0.0.1:1"',
     ["scheduler is used only with executor 'dask'", "executor 'process'"]),
])
def test_command_line_over_config(work, tmp_path, capsys, extra, value, words):
    config = tmp_path / "grid.toml"
    config.write_text(_config_text(value))
    assert main(["compare", "--config", str(config), *extra, "--no-progress"]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err, (word, err)
    assert os.listdir(work) == []
