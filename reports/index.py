"""All reports of a run folder, linked from one ``index.html``.

Each report is a ``build(results, out_dir) -> ReportSection`` function. A report that raises is
recorded on the page with its error instead of stopping the others.
"""

from __future__ import annotations

import html
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from harness.core import registry
from harness.core.errors import StoreDamagedError
from harness.run.results import RunResults
from harness.run.store import STATUSES

from .base import ReportSection, table_html, write_csv

ReportBuilder = Callable[[RunResults, Path], ReportSection]

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1400px; }
table.table { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0 1.5em; }
table.table th, table.table td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
.error { background: #fdecea; border: 1px solid #e0a0a0; padding: 0.5em 1em; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
"""


def default_reports() -> dict[str, ReportBuilder]:
    """The registered reports (built-ins and the ``harness.reports`` group), by title."""
    return {name.replace("_", " ").capitalize(): build
            for name, build in registry.report_builders().items()}


def _tables(results: RunResults, out_dir: Path) -> ReportSection:
    """The tidy tables of the run: ``results.csv`` (importances) and ``cells.csv``."""
    csvs = [write_csv(results.importances_table(), out_dir / "results.csv"),
            write_csv(results.cells_table(), out_dir / "cells.csv")]
    return ReportSection("Result tables", csvs)


def _run_safely(title: str, builder: ReportBuilder, results: RunResults,
                out_dir: Path) -> ReportSection:
    try:
        return builder(results, out_dir)
    except StoreDamagedError:  # not this report's failure: the whole run folder's
        raise
    except Exception as exc:
        return ReportSection(title, error=f"{type(exc).__name__}: {exc}\n\n"
                                          f"{traceback.format_exc()}")


def _cells_html(cells: pd.DataFrame) -> str:
    counts = cells["status"].value_counts() if not cells.empty else pd.Series(dtype=int)
    status = pd.DataFrame({"status": list(STATUSES),
                           "cells": [int(counts.get(s, 0)) for s in STATUSES]})
    failed = cells[cells["status"] != "done"]
    columns = [c for c in ("status", "dataset", "model", "seed", "method", "reason", "key")
               if c in failed.columns]
    return ("<h2>Cells</h2>" + table_html(status)
            + f"<h3>Cells not done ({len(failed)})</h3>"
            + table_html(failed[columns].sort_values(["status", "dataset", "model", "seed",
                                                       "method"], kind="stable")))


def _section_html(section: ReportSection) -> str:
    parts = [f"<h2>{html.escape(section.title)}</h2>"]
    if section.error is not None:
        summary = section.error.splitlines()[0] if section.error else ""
        parts.append(f'<div class="error"><p><strong>This report failed:</strong> '
                     f"{html.escape(summary)}</p>"
                     f"<details><pre>{html.escape(section.error)}</pre></details></div>")
    if section.csv_files:
        links = "".join(f'<li><a href="{html.escape(p.name)}">{html.escape(p.name)}</a></li>'
                        for p in section.csv_files)
        parts.append(f"<p>Tables:</p><ul>{links}</ul>")
    parts.append(section.html)
    for path in section.figure_files:
        name = html.escape(path.name)
        parts.append(f'<figure><a href="{name}"><img src="{name}" alt="{name}"></a>'
                     f"<figcaption>{name}</figcaption></figure>")
    return "\n".join(parts)


def _other_files_html(out_dir: Path, sections: list[ReportSection]) -> str:
    """Tables and figures in the folder that no section claims (a failed report's partial
    output, or files of an earlier run), so that the page links every file."""
    claimed = {path.name for section in sections for path in section.files}
    others = sorted(p.name for p in out_dir.iterdir()
                    if p.suffix in (".csv", ".png") and p.name not in claimed)
    if not others:
        return ""
    links = "".join(f'<li><a href="{html.escape(name)}">{html.escape(name)}</a></li>'
                    for name in others)
    return f"<h2>Other files in the folder</h2><ul>{links}</ul>"


def _page(out_dir: Path, cells: pd.DataFrame, sections: list[ReportSection]) -> str:
    title = f"Run report: {html.escape(out_dir.resolve().name)}"
    generated = time.strftime("%Y-%m-%d %H:%M:%S")
    body = "\n".join([f"<h1>{title}</h1>",
                      f"<p>{len(cells)} cells; generated {generated}.</p>",
                      _cells_html(cells), *(_section_html(s) for s in sections),
                      _other_files_html(out_dir, sections)])
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def build_reports(out: Path, reports: Mapping[str, ReportBuilder] | None = None) -> list[Path]:
    """Write every report of the run folder ``out`` and the ``index.html`` linking them.

    Parameters
    ----------
    out : Path
        A run folder (holding ``results.sqlite``); the reports are written into it.
    reports : mapping of str to callable, optional
        Section title -> ``build(results, out_dir) -> ReportSection``; default
        :func:`default_reports`. ``results.csv`` and ``cells.csv`` are always written.

    Returns
    -------
    list of Path
        Every file written, ``index.html`` last.
    """
    out = Path(out)
    builders = default_reports() if reports is None else dict(reports)
    results = RunResults.open(out)
    try:
        sections = [_run_safely("Result tables", _tables, results, out)]
        sections += [_run_safely(title, builder, results, out)
                     for title, builder in builders.items()]
        cells = results.cells
    finally:
        results.close()
    index = out / "index.html"
    index.write_text(_page(out, cells, sections), encoding="utf-8")
    return [*(path for section in sections for path in section.files), index]
