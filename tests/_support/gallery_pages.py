"""Test helpers for reproduction pages: build them at quick scale, read a page's pipe table,
and a store's cell stamps."""

from __future__ import annotations

from pathlib import Path

from harness.reports.targets.base import reproduce
from harness.run.results import RunResults


def quick_gallery(folder: Path, names: list[str]) -> Path:
    """The pages of ``names`` at quick scale in ``folder``, their stores in ``folder/runs``."""
    reproduce(names, quick=True, gallery=folder, store_root=folder / "runs")
    return folder


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def page_header(page_text: str) -> list[str]:
    """Column names of the first pipe table of a page."""
    return _cells(next(line for line in page_text.splitlines() if line.startswith("| ")))


def page_rows(page_text: str) -> list[list[str]]:
    """Body rows of the pipe tables of a page, cells stripped (header row left out)."""
    lines = [line for line in page_text.splitlines() if line.startswith("| ")]
    return [_cells(line) for line in lines[1:]]


def page_records(page_text: str) -> list[dict[str, str]]:
    """The rows of a page's pipe tables as {column: cell}, by the first table's header."""
    return [dict(zip(page_header(page_text), row, strict=True)) for row in page_rows(page_text)]


def cell_timestamps(store: Path) -> dict[str, float]:
    """``created`` of every stored cell, by key: unchanged by a run that reuses them all."""
    results = RunResults.open(store)
    try:
        return dict(zip(results.cells["key"], results.cells["created"], strict=True))
    finally:
        results.close()
