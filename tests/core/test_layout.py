"""The layout of DESIGN.md ("Layout"), beyond what import-linter can see.

import-linter (``lint-imports`` in .ci/run) checks the layers. It analyses ``methods``,
``datasets`` and ``reports`` as the top-level packages they are in the repository, so an
import of them under their installed names (``harness.methods...``) from the framework would
escape it: these tests read every framework module's imports instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
PLUGIN_PACKAGES = ("harness.methods", "harness.datasets", "harness.reports")


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


@pytest.mark.parametrize("path", sorted(HARNESS.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(HARNESS)))
def test_the_framework_never_imports_a_method_dataset_or_report_by_name(path):
    plugins = [name for name in _imported_modules(path) if name.startswith(PLUGIN_PACKAGES)]
    assert plugins == [], f"{path} imports {plugins}; name them in the registry's dict instead"


def test_only_the_public_api_sits_at_the_top_of_harness():
    top = sorted(p.name for p in HARNESS.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "api.py"]


def test_a_plugin_import_by_name_is_seen(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("import numpy\nfrom harness.methods.mdi import MDI\n")
    assert [n for n in _imported_modules(source) if n.startswith(PLUGIN_PACKAGES)] == [
        "harness.methods.mdi", "harness.methods.mdi.MDI"]


#: scikit-learn's fitted-tree internals, which only its adapter reads
SKLEARN_TREE_ATTRIBUTES = {"tree_", "estimators_", "estimators_samples_", "children_left",
                           "children_right", "weighted_n_node_samples"}
#: the scikit-learn adapters, and modules that grow their own scikit-learn trees inside a
#: method (the subspace forests) or fit the models of a grid, and so may read what they grew
OWN_TREES = {"harness/forest/sklearn.py", "harness/forest/sklearn_boosting.py",
             "harness/forest/models.py", "harness/estimators/random_subspace.py"}
ROOT = HARNESS.parent


def _attributes_read(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


@pytest.mark.parametrize(
    "path", sorted(p for p in [*HARNESS.rglob("*.py"), *(ROOT / "methods").glob("*.py")]
                   if p.relative_to(ROOT).as_posix() not in OWN_TREES),
    ids=lambda p: p.relative_to(ROOT).as_posix())
def test_only_the_adapter_reads_how_scikit_learn_stores_a_tree(path):
    """Kernels, estimators and methods see a model through its ForestView: another tree
    library is then one adapter away (DESIGN.md, ``harness/forest/``)."""
    read = _attributes_read(path) & SKLEARN_TREE_ATTRIBUTES
    assert read == set(), f"{path} reads {sorted(read)}; use harness.forest_view(model)"


def test_an_attribute_read_is_seen(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("def f(model):\n    return model.estimators_[0].tree_.feature\n")
    assert _attributes_read(source) & SKLEARN_TREE_ATTRIBUTES == {"estimators_", "tree_"}


def test_importing_harness_does_not_load_numba():
    """Start-up: ``import harness`` (and so every CLI command) loads no kernel machinery; the
    forest view imports its numba-backed forms where it first builds them."""
    import subprocess
    import sys

    code = "import sys, harness; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "False"
