"""Reproduction targets: base class, page writer and driver (``python -m harness reproduce``).

A target is a small :class:`Target` subclass (module ``harness.reports.targets.<name>``)
that runs its experiment and returns a :class:`TargetPage`: the side-by-side table
(published | ours | difference, or the claims checked), its figures, the worst deviation in
one line and a verdict. Pages are Markdown files in a gallery folder, with an ``index.md``
that lists every target, its worst deviation and its verdict. A run writes them to a run folder
(:data:`DEFAULT_GALLERY`, ``runs/reproduce/gallery``); the committed gallery
(:data:`COMMITTED_GALLERY`, ``reports/gallery``) is written only when asked for
(``python -m harness reproduce all --gallery``), so that a quick check never replaces its
full-scale pages.

Targets run their forests through the ordinary runner (:meth:`TargetContext.compare`), into
one store per target under ``runs/reproduce/`` (``<name>-quick`` for ``--quick``), so a
re-run reuses every finished cell.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pandas as pd

from harness.core import registry
from harness.reports.targets.published import PUBLISHED, SOURCES, by_target
from harness.reports.targets.verdict import RULE, VERDICTS, page_verdict
from harness.run.results import RunResults

#: name -> "module:Class" of every built-in target (kept in the registry)
TARGETS = registry.BUILTIN_TARGETS
#: where a run writes its pages
DEFAULT_GALLERY = Path("runs/reproduce/gallery")
#: the gallery committed with the project (full-scale runs), refreshed on request only
COMMITTED_GALLERY = Path("reports/gallery")
DEFAULT_STORE = Path("runs/reproduce")


@dataclass
class TargetContext:
    """Where a target writes (gallery, store) and how big it runs."""

    gallery: Path
    store_root: Path
    quick: bool
    jobs: int | None = None
    progress: Callable[[str], None] | None = None
    #: keys of the cells each store was asked for during this run (see :meth:`compare`)
    planned: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def store(self, name: str) -> Path:
        return self.store_root / (f"{name}-quick" if self.quick else name)

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def compare(self, name: str, **grid) -> RunResults:
        """Run ``grid`` (``compare``'s arguments) into the target's store; return its
        results, restricted to the cells of the grids run into this store during this run
        (a target may run its grid in parts). Cells stored by an earlier run are reused;
        cells of other grids (or of an earlier version of a method) that the store also
        keeps are not read."""
        from harness.run.runner import compare

        folder = self.store(name)
        self.say(f"{name}: running the grid in {folder}")
        grid.setdefault("jobs", self.jobs)
        summary = compare(out=folder, reports=False, **grid)
        planned = self.planned.setdefault(name, set())
        planned.update(summary.cell_keys)
        return RunResults.open(folder).restricted(planned)


@dataclass
class TargetPage:
    """What a target reports (see the module docstring).

    ``results`` maps each published result the target reproduces (its key in
    :data:`harness.reports.targets.published.PUBLISHED`) to its verdict under the gallery's rule
    (:mod:`harness.reports.targets.verdict`); ``verdict`` is the worst of them. ``assumptions``
    lists every reading of the source the page had to choose (the index prints them next to the
    page).
    """

    table: pd.DataFrame
    worst: str
    verdict: str
    scale: str
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)


class Target:
    """Base of the reproduction targets."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    source: ClassVar[str] = ""  # seed file and figure / table

    def run(self, context: TargetContext) -> TargetPage:
        raise NotImplementedError


def markdown_table(table: pd.DataFrame) -> str:
    """A pipe table; floats with 4 significant digits, booleans as yes/no."""

    def cell(value) -> str:
        if isinstance(value, bool) or type(value).__name__ == "bool_":
            return "yes" if value else "no"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value).replace("|", "\\|")

    header = "| " + " | ".join(str(c) for c in table.columns) + " |"
    rule = "|" + "---|" * len(table.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |"
            for row in table.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def load_target(name: str) -> Target:
    """The target called ``name``, instantiated (see :func:`harness.core.registry.load_target`)."""
    return registry.load_target(name)


def check_results(target: Target, page: TargetPage) -> dict[str, str]:
    """The verdict of each published result of ``target``, checked against the catalogue.

    A built-in target must judge exactly the results the catalogue gives it, and its page
    verdict must be the worst of them; a page that judges its results together (no
    ``results``) gives each of them the page verdict.
    """
    if page.verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}; got {page.verdict!r}")
    expected = [result.key for result in by_target().get(target.name, [])]
    results = dict(page.results) or dict.fromkeys(expected, page.verdict)
    if expected and set(results) != set(expected):
        raise ValueError(
            f"target {target.name!r} must give a verdict for each of its published results "
            f"{sorted(expected)}; got {sorted(results)}")
    if results and page.verdict != page_verdict(results.values()):
        raise ValueError(
            f"target {target.name!r}: the page verdict must be the worst of its results' "
            f"({page_verdict(results.values())!r}); got {page.verdict!r}")
    return results


def write_page(target: Target, page: TargetPage, gallery: Path,
               seconds: float | None = None) -> Path:
    """Write ``<name>.md`` (and a ``<name>.json`` summary for the index) into ``gallery``;
    ``seconds``: the wall time of the run that made the page (printed in the index)."""
    results = check_results(target, page)
    gallery.mkdir(parents=True, exist_ok=True)
    lines = [f"# {target.title}", "", f"Source: {target.source}", "",
             f"Scale: {page.scale}", "", f"**Verdict: {page.verdict}.** Worst deviation: "
             f"{page.worst}", "", markdown_table(page.table), ""]
    for figure in page.figures:
        lines += [f"![{figure.stem}]({figure.name})", ""]
    if page.assumptions:
        lines += ["## Assumptions", ""] + [f"- {item}" for item in page.assumptions] + [""]
    if page.notes:
        lines += ["## Notes", ""] + [f"- {note}" for note in page.notes] + [""]
    path = gallery / f"{target.name}.md"
    path.write_text("\n".join(lines))
    summary = {"name": target.name, "title": target.title, "verdict": page.verdict,
               "worst": page.worst, "scale": page.scale, "results": results,
               "assumptions": page.assumptions, "seconds": seconds}
    (gallery / f"{target.name}.json").write_text(json.dumps(summary, indent=1))
    write_index(gallery)
    return path


def write_index(gallery: Path) -> Path:
    """``index.md``: the verdict rule, every page written so far (verdict, worst deviation,
    scale, assumptions) and every published result of the sources with its page's verdict."""
    pages = {row["name"]: row for row in
             (json.loads(path.read_text()) for path in sorted(gallery.glob("*.json")))}
    lines = ["# Reproduction gallery", "",
             f"Regenerate the committed gallery ({COMMITTED_GALLERY}) with "
             "`python -m harness reproduce all --gallery`; without `--gallery` the pages go "
             f"to {DEFAULT_GALLERY}.", "", RULE, "## Pages", "",
             "| target | verdict | worst deviation | scale | assumptions | wall time |",
             "|---|---|---|---|---|---|"]
    for row in pages.values():
        worst, scale = (_cell(row[key]) for key in ("worst", "scale"))
        assumptions = "<br>".join(_cell(item) for item in row.get("assumptions", [])) or "none"
        seconds = row.get("seconds")
        took = "not recorded" if seconds is None else f"{seconds:.0f} s"
        lines.append(f"| [{row['name']}]({row['name']}.md) | {row['verdict']} | "
                     f"{worst} | {scale} | {assumptions} | {took} |")
    lines += ["", "## Every published result", "",
              "One row per result of the five sources (`harness/reports/targets/published.py`); "
              "'no page yet' marks a result whose target has not been run into this folder.", "",
              "| source | result | what | page | verdict |", "|---|---|---|---|---|"]
    for result in PUBLISHED:
        page = pages.get(result.target)
        verdict = (page.get("results", {}).get(result.key, "missing from its page")
                   if page else "no page yet")
        link = f"[{result.target}]({result.target}.md)" if page else result.target
        lines.append(f"| {result.seed} ({_cell(SOURCES[result.seed])}) | {_cell(result.where)}"
                     f" | {_cell(result.what)} | {link} | {verdict} |")
    path = gallery / "index.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def reproduce(names: list[str], quick: bool, gallery: Path = DEFAULT_GALLERY,
              store_root: Path = DEFAULT_STORE, jobs: int | None = None,
              progress: Callable[[str], None] | None = None) -> list[Path]:
    """Run the named targets (``["all"]`` for every one) and write their pages.

    The pages go to ``gallery`` (default: the run folder :data:`DEFAULT_GALLERY`; pass
    :data:`COMMITTED_GALLERY` to refresh the committed one), the targets' stores under
    ``store_root``. Returns the paths of the pages written.
    """
    chosen = list(TARGETS) if names == ["all"] else names
    targets = [load_target(name) for name in chosen]  # every name checked before any run
    context = TargetContext(Path(gallery), Path(store_root), quick, jobs, progress)
    pages = []
    for target in targets:
        context.say(f"{target.name}: start")
        started = time.perf_counter()
        page = target.run(context)
        seconds = time.perf_counter() - started
        pages.append(write_page(target, page, Path(gallery), seconds))
        context.say(f"{target.name}: {page.verdict} ({seconds:.0f} s)")
    return pages
