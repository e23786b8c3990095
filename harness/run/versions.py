"""Which package versions made a stored cell, against the versions running now.

Every cell is stored with the versions of the packages that change what a method computes
(:func:`harness.run.runner.cell_versions`: the harness, numpy, scikit-learn, shap, pandas). A
run resumed after an upgrade reuses the cells stored before it, beside cells (and forests)
made by the new versions; it says so (:class:`VersionMix`), and ``--force`` runs every cell
again with one set.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

#: How the versions of a cell stored before cells recorded them are shown
UNRECORDED = "not recorded"


def stored_versions(text: str | None) -> dict[str, str]:
    """The versions of a stored cell (its ``versions`` column, JSON); empty if not recorded
    or not readable as a JSON object of strings (a damaged row)."""
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(name): str(version) for name, version in found.items()}


def version_changes(stored: dict[str, str], current: dict[str, str]) -> list[str]:
    """``"package stored → current"`` for each package whose version differs (every package,
    as "not recorded", for a cell stored before versions were)."""
    return [f"{name} {stored.get(name, UNRECORDED)} → {version}"
            for name, version in current.items() if stored.get(name) != version]


@dataclass
class VersionMix:
    """The reused cells of a run made by versions other than the current ones."""

    cells: int = 0
    changes: Counter = field(default_factory=Counter)  # "package a → b": cells

    def add(self, stored: dict[str, str], current: dict[str, str]) -> None:
        found = version_changes(stored, current)
        if found:
            self.cells += 1
            self.changes.update(found)

    def line(self) -> str:
        """One line for the run's summary ("" when every reused cell has the current
        versions)."""
        if not self.cells:
            return ""
        what = ", ".join(sorted(self.changes))
        return (f"{self.cells} reused cell{'s were' if self.cells > 1 else ' was'} made with "
                f"other package versions ({what}); the results mix them: --force runs every "
                "cell again")


def version_sets(column) -> list[tuple[dict[str, str], int]]:
    """The distinct version sets of a ``versions`` column, each with its number of cells,
    most cells first (then in the order of their JSON text)."""
    counts = Counter(text or "" for text in column)
    return [(stored_versions(text), n)
            for text, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def mixed_versions_note(column) -> str:
    """A sentence naming the version sets of a ``versions`` column and their cells, by the
    packages that differ between them ("" when every cell has the same set)."""
    sets = version_sets(column)
    if len(sets) < 2:
        return ""
    names = sorted({name for versions, _ in sets for name in versions})
    differing = [name for name in names
                 if len({versions.get(name, UNRECORDED) for versions, _ in sets}) > 1]
    parts = [", ".join(f"{name} {versions.get(name, UNRECORDED)}" for name in differing)
             for versions, _ in sets]
    listed = "; ".join(f"{part}: {n} cell{'s' * (n > 1)}" for part, (_, n) in zip(parts, sets))
    return (f"The cells of this folder were made with {len(sets)} sets of package versions "
            f"({listed}). They are compared here as one run; --force runs every "
            "cell again with the installed versions.")
