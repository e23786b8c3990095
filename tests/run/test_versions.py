"""The package versions stored with a cell, read back and compared with the installed ones."""

from __future__ import annotations

import pytest

from harness.run.versions import (
    VersionMix,
    mixed_versions_note,
    stored_versions,
    version_changes,
)


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", "3"])
def test_unrecorded_or_damaged_versions_read_as_none_recorded(text):
    assert stored_versions(text) == {}


def test_versions_read_back_as_strings():
    assert stored_versions('{"numpy": "2.1.0", "odd": 1}') == {"numpy": "2.1.0", "odd": "1"}


def test_only_the_packages_that_changed_are_named():
    current = {"numpy": "2.1.0", "scikit-learn": "1.6.0"}
    assert version_changes({"numpy": "2.1.0", "scikit-learn": "1.5.2"}, current) == [
        "scikit-learn 1.5.2 → 1.6.0"]
    assert version_changes(current, current) == []
    assert version_changes({}, current) == ["numpy not recorded → 2.1.0",
                                    "scikit-learn not recorded → 1.6.0"]


def test_the_mix_counts_cells_and_each_change():
    current = {"numpy": "2.1.0", "scikit-learn": "1.6.0"}
    mix = VersionMix()
    for stored in ({"numpy": "2.1.0", "scikit-learn": "1.5.2"}, current,
                   {"numpy": "2.0.0", "scikit-learn": "1.5.2"}):
        mix.add(stored, current)
    assert mix.cells == 2
    assert mix.changes == {"scikit-learn 1.5.2 → 1.6.0": 2, "numpy 2.0.0 → 2.1.0": 1}
    assert mix.line().startswith("2 reused cells were made with other package versions "
                                 "(numpy 2.0.0 → 2.1.0, scikit-learn 1.5.2 → 1.6.0)")
    assert VersionMix().line() == ""


def test_the_note_names_the_sets_by_the_packages_that_differ():
    one = '{"numpy": "2.1.0", "pandas": "2.2.0"}'
    other = '{"numpy": "2.0.0", "pandas": "2.2.0"}'
    assert mixed_versions_note([one, one]) == ""
    note = mixed_versions_note([other, one, one, None])
    assert note.startswith("The cells of this folder were made with 3 sets of package "
                           "versions (numpy 2.1.0, pandas 2.2.0: 2 cells; numpy not "
                           "recorded, pandas not recorded: 1 cell; numpy 2.0.0, pandas "
                           "2.2.0: 1 cell).")
