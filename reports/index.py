"""All reports of a run folder, in one ``index.html`` that opens offline.

The page opens on the grid in one line and the three answers of :mod:`reports.first_screen`;
a sidebar leads to the sections: one per registered report (each a ``build(results,
out_dir) -> ReportSection`` function; one that raises is shown with its error instead of
stopping the others), the environment that produced the numbers, and the cells not done,
grouped by reason. Tables sort on a click on their header and filter by a text box (a small
inline script; nothing is fetched from a network).
"""

from __future__ import annotations

import html
import multiprocessing
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import matplotlib
import pandas as pd

from harness.core import registry
from harness.core.cores import usable_cores
from harness.core.errors import StoreDamagedError
from harness.run.results import RunResults
from harness.run.versions import mixed_versions_note

from .base import FIGURE_STYLE, ReportSection, figure_html, slug, table_html, write_csv
from .first_screen import build_first_screen, grid_line
from .palette import run_colours

#: A report writes its files into the folder and returns its section of the page, or several
#: sections (e.g. one per dataset), each with its own heading and sidebar link.
ReportBuilder = Callable[[RunResults, Path], "ReportSection | list[ReportSection]"]

STYLE = """
body { font-family: sans-serif; margin: 0; font-size: 14px; }
nav { position: fixed; top: 0; left: 0; width: 150px; height: 100%; overflow-y: auto;
      background: #f5f5f7; border-right: 1px solid #ddd; padding: 10px; box-sizing: border-box; }
nav a { display: block; color: #0645ad; text-decoration: none; margin: 3px 0; font-size: 13px;
        overflow-wrap: anywhere; }  /* a long dataset label wraps, not clipped */
main { margin-left: 160px; padding: 0 10px; max-width: 1230px; }
h1 { font-size: 20px; margin: 10px 0 2px; } h2 { font-size: 17px; margin: 14px 0 6px; }
.grid-line { margin: 0 0 8px; color: #333; }
.panels { display: grid; grid-template-columns: 445px minmax(0, 1fr) 400px; gap: 8px; }
ol.methods { columns: 2; font-size: 11px; margin: 6px 0; padding-left: 22px; }
ol.methods li { overflow-wrap: anywhere; }
.swatch { display: inline-block; width: 9px; height: 9px; margin-right: 4px; }
.panel { border: 1px solid #ddd; border-radius: 4px; padding: 4px 8px; overflow: auto;
         max-height: 790px; }
.panel h2 { margin-top: 2px; }
table.matrix { border-collapse: collapse; font-size: 10px; }
table.matrix th, table.matrix td { border: 1px solid #ddd; padding: 1px 1px; text-align: right; }
table.matrix th { font-weight: normal; text-align: center; }
table.matrix td { min-width: 19px; }
.panel td.rank { white-space: nowrap; }
.panel table.table td { overflow-wrap: anywhere; }
table.table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0 1em; }
table.table th, table.table td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
table.sortable th { cursor: pointer; }
.note { font-size: 12px; color: #555; }
.range-note { color: #a00; font-size: 12px; }
.error { background: #fdecea; border: 1px solid #e0a0a0; padding: 0.5em 1em; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
input.filter { margin: 4px 0; font-size: 12px; }
.table-wrap { overflow-x: auto; max-width: 100%; }
"""

#: Sorts a table on a click on a header cell and filters its rows by a text box above it.
SCRIPT = """
document.querySelectorAll('table.table').forEach(function (table) {
  var rows = function () { return Array.from(table.querySelectorAll('tbody tr, tr'))
    .filter(function (r) { return r.querySelector('td'); }); };
  var box = document.createElement('input');
  box.className = 'filter'; box.placeholder = 'filter rows';
  box.addEventListener('input', function () {
    var text = box.value.toLowerCase();
    rows().forEach(function (r) {
      r.style.display = r.textContent.toLowerCase().includes(text) ? '' : 'none'; });
  });
  table.parentNode.insertBefore(box, table);
  table.classList.add('sortable');
  table.querySelectorAll('th').forEach(function (th, column) {
    var ascending = true;
    th.addEventListener('click', function () {
      var body = rows(); if (!body.length) return;
      var parent = body[0].parentNode;
      body.sort(function (a, b) {
        var x = a.children[column] ? a.children[column].textContent : '';
        var y = b.children[column] ? b.children[column].textContent : '';
        var nx = parseFloat(x), ny = parseFloat(y);
        var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return ascending ? order : -order;
      });
      ascending = !ascending;
      body.forEach(function (r) { parent.appendChild(r); });
    });
  });
});
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
                out_dir: Path) -> ReportSection | list[ReportSection]:
    try:
        return builder(results, out_dir)
    except StoreDamagedError:  # not this report's failure: the whole run folder's
        raise
    except Exception as exc:
        return ReportSection(title, error=f"{type(exc).__name__}: {exc}\n\n"
                                          f"{traceback.format_exc()}")


def _cells_html(cells: pd.DataFrame) -> str:
    """Cells not done, one collapsed group per (status, reason) with its count."""
    failed = cells[cells["status"] != "done"] if not cells.empty else cells
    if failed.empty:
        return "<p>Every cell is done.</p>"
    columns = [c for c in ("dataset", "model", "seed", "method", "key") if c in failed.columns]
    parts = []
    groups = failed.assign(reason=failed["reason"].fillna("").astype(str)
                           .str.split("\n").str[0]).groupby(["status", "reason"], sort=True)
    for (status, reason), group in sorted(groups, key=lambda item: -len(item[1])):
        parts.append(f"<details><summary><strong>{html.escape(status)}</strong> × "
                     f"{len(group)}: {html.escape(reason)}</summary>"
                     + table_html(group[columns].sort_values(columns[:4], kind="stable"))
                     + "</details>")
    return "".join(parts)


def _environment_html(results: RunResults) -> str:
    """Who made the numbers: versions, commit, CPU, threads, date and wall time."""
    runs = results.runs()
    if not runs:
        return "<p>This store was written before runs recorded their environment.</p>"
    last = runs[-1]
    env = dict(last["environment"])
    packages = env.pop("packages", {})
    rows = [("date", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["started"]))),
            ("wall time of the run", f"{last['wall_time']:.1f} s"),
            *((key.replace("_", " "), str(value)) for key, value in env.items()),
            *((f"package {name}", version) for name, version in packages.items())]
    table = pd.DataFrame(rows, columns=["what", "value"])
    note = (f"<p class=\"note\">{len(runs)} runner passes wrote this folder; the last is "
            "shown.</p>" if len(runs) > 1 else "")
    done = results.done()
    mixed = mixed_versions_note(done["versions"]) if "versions" in done else ""
    if mixed:
        note += f'<p class="note warning">{html.escape(mixed)}</p>'
    return table_html(table) + note


def _section_html(section: ReportSection) -> str:
    parts = [f'<h2 id="{_anchor(section.title)}">{html.escape(section.title)}</h2>']
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
        if f'src="{name}"' in section.html:  # the report placed it among its own text
            continue
        parts.append(figure_html(path))
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


def _anchor(title: str) -> str:
    return "section-" + slug(title).lower().replace("_", "-")


def _page(out_dir: Path, cells: pd.DataFrame, first_screen: ReportSection,
          sections: list[ReportSection], environment: str) -> str:
    title = f"Run report: {html.escape(out_dir.resolve().name)}"
    generated = time.strftime("%Y-%m-%d %H:%M:%S")
    tail = [ReportSection("Environment", html=environment),
            ReportSection("Cells not done", html=_cells_html(cells))]
    links = "".join(f'<a href="#{_anchor(s.title)}">{html.escape(s.title)}</a>'
                    for s in [*sections, *tail])
    nav = f'<nav><a href="#top"><strong>Summary</strong></a>{links}</nav>'
    body = "\n".join([f'<h1 id="top">{title}</h1>',
                      f'<p class="grid-line" id="grid-line">{html.escape(grid_line(cells))}; '
                      f"report built {generated}.</p>",
                      first_screen.html if first_screen.error is None
                      else _section_html(first_screen),
                      *(_section_html(s) for s in [*sections, *tail]),
                      _other_files_html(out_dir, [first_screen, *sections])])
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{nav}\n<main>\n{body}\n</main>\n"
            f"<script>{SCRIPT}</script>\n</body></html>\n")


#: Processes that build the reports at most: the per-dataset sections (about half of the
#: default run's report time) in one, the others beside them (measured on the default
#: compare: 8.3 s serial)
REPORT_PROCESSES = 2

_worker_jobs: list[tuple[str, ReportBuilder]] = []  # set before the workers fork
_worker_results: RunResults | None = None


def _open_in_worker(out: Path) -> None:
    global _worker_results
    _worker_results = RunResults.open(out)  # shared by this worker's reports (derived tables)


def _build_in_worker(index: int) -> ReportSection | list[ReportSection]:
    title, builder = _worker_jobs[index]
    with matplotlib.rc_context(FIGURE_STYLE):
        return _run_safely(title, builder, _worker_results, _worker_results.folder)


def _report_processes(n_jobs: int) -> int:
    """Forked processes for ``n_jobs`` reports: up to REPORT_PROCESSES and the cores this
    process may use; 1 (build here) where the platform cannot fork."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(REPORT_PROCESSES, usable_cores(), n_jobs))


def _build_all(jobs: list[tuple[str, ReportBuilder]], results: RunResults,
               out: Path) -> list[ReportSection | list[ReportSection]]:
    """Every job's section(s), in the jobs' order: in forked worker processes, each opening
    the run once and taking the next report left, or here when one process is all there is.
    A report whose process dies (a crash in native code) gets an error section; the reports
    that the crash stopped are built again, each in a process of its own."""
    processes = _report_processes(len(jobs))
    if processes == 1:
        with matplotlib.rc_context(FIGURE_STYLE):
            return [_run_safely(title, builder, results, out) for title, builder in jobs]
    global _worker_jobs
    _worker_jobs = jobs
    try:
        with _pool(processes, out) as pool:
            futures = [pool.submit(_build_in_worker, index) for index in range(len(jobs))]
            built = []
            for index, future in enumerate(futures):
                try:
                    built.append(future.result())
                except BrokenProcessPool:
                    built.append(_alone(index, out))
        return built
    finally:
        _worker_jobs = []


def _pool(processes: int, out: Path) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork"),
                               initializer=_open_in_worker, initargs=(out,))


def _alone(index: int, out: Path) -> ReportSection | list[ReportSection]:
    """Job ``index`` in a process of its own; an error section if that process dies."""
    with _pool(1, out) as pool:
        try:
            return pool.submit(_build_in_worker, index).result()
        except BrokenProcessPool as exc:
            return ReportSection(_worker_jobs[index][0],
                                 error=f"the process building this report died: {exc}")


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

    Notes
    -----
    The reports are independent (each writes its own files), so they are built in up to
    REPORT_PROCESSES forked processes; a report runs in a process of its own, not in the
    caller's, so it must keep what it produces in its files and its returned sections.
    """
    out = Path(out)
    builders = default_reports() if reports is None else dict(reports)
    results = RunResults.open(out)
    try:
        with matplotlib.rc_context(FIGURE_STYLE):  # every figure's text at FONT_PT or more
            cells = results.cells
            colours = run_colours(results)
        jobs = [("Summary", lambda r, o: _first_screen_section(r, o, colours)),
                ("Result tables", _tables), *builders.items()]
        built = _build_all(jobs, results, out)
        summary = built[0]
        sections = []
        for section in built[1:]:
            sections += section if isinstance(section, list) else [section]
        environment = _environment_html(results)
    finally:
        results.close()
    index = out / "index.html"
    index.write_text(_page(out, cells, summary, sections, environment), encoding="utf-8")
    return [*summary.files, *(path for section in sections for path in section.files), index]


def _first_screen_section(results: RunResults, out_dir: Path,
                          colours: dict[str, str]) -> ReportSection:
    content, files = build_first_screen(results, out_dir, colours)
    return ReportSection("Summary", csv_files=[f for f in files if f.suffix == ".csv"],
                         figure_files=[f for f in files if f.suffix == ".png"], html=content)
