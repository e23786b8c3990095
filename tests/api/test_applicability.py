"""Which method explains which model: the protocol's checks, and the README's table of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api import applicability

README = Path(__file__).resolve().parents[2] / "README.md"
SYMBOLS = {"yes": "✓", "regression only": "regression", "no": "—",
           "not installed": "not installed"}
OOB = ("mda_bc", "mda_ik", "sobol_mda", "shaff", "mdi_oob", "ufi")


@pytest.fixture(scope="module")
def table():
    return applicability()


def test_the_oob_family_needs_in_bag_rows_and_local_mdi_node_impurities(table):
    for method in OOB:
        assert table.loc[method, "random_forest"] == "yes"
        for family in ("extra_trees", "decision_tree", "gradient_boosting", "xgboost"):
            if table.loc[method, family] != "not installed":
                assert table.loc[method, family].startswith("no: ")
                assert "in-bag rows" in table.loc[method, family]
    assert table.loc["local_mdi", "gradient_boosting"] == "yes"  # it keeps node impurities
    assert "node impurities" in table.loc["local_mdi", "hist_gradient_boosting"]
    for method in ("mdi", "saabas", "treeshap", "mda_test", "loco", "sage"):
        assert set(table.loc[method]) <= {"yes", "not installed"}, method


def test_the_readme_table_is_the_protocols(table):
    text = README.read_text()
    start = text.index("### Which method explains which model")
    header, _, *rows = [line for line in text[start:].splitlines() if line.startswith("|")]
    columns = [cell.strip(" `") for cell in header.strip("|").split("|")][1:]
    assert columns == list(table.columns)
    readme = {}
    for row in rows:
        if not row.startswith("| `"):
            break
        cells = [cell.strip(" `") for cell in row.strip("|").split("|")]
        readme[cells[0]] = cells[1:]
    assert sorted(readme) == sorted(table.index)
    for method, cells in readme.items():
        ours = [SYMBOLS[value.split(":")[0]] for value in table.loc[method]]
        assert cells == ours, method
