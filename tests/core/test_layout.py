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
