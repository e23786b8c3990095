"""The lower bounds of pyproject.toml and the versions .ci/floors tests them at are one list.

``.ci/floors`` installs the project with ``.ci/floors.txt`` as constraints and runs the suite;
that only proves the declared floors if every lower bound has its line there, at exactly the
bound. A bound raised or added in pyproject.toml without its line (or the other way round)
fails here, before a floors run would test versions nobody declared.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
# Installed by .ci/floors (``pip install -e ".[dev]"``); the dask, xgboost and lightgbm extras
# are subsets of dev.
TESTED_EXTRAS = ("dev", "dask", "xgboost", "lightgbm")
# Left out on purpose: the bench extra's comparators are imported by no test; hidimstat needs
# scikit-learn >= 1.6 and scipy >= 1.13, above our floors (its tests skip there).
UNTESTED_EXTRAS = ("bench", "hidimstat")


def _lower_bounds(pyproject: dict) -> dict[str, Version]:
    """Lower bound of each requirement .ci/floors installs, by canonical name."""
    requirements = [*pyproject["build-system"]["requires"], *pyproject["project"]["dependencies"]]
    for extra in TESTED_EXTRAS:
        requirements += pyproject["project"]["optional-dependencies"].get(extra, [])
    bounds: dict[str, Version] = {}
    for text in requirements:
        requirement = Requirement(text)
        floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
        if floors:
            bounds[canonicalize_name(requirement.name)] = max(floors)
    return bounds


def _pins(floors_text: str) -> list[tuple[str, Version]]:
    """(canonical name, version) of each ``name==version`` line; comments and blanks skipped."""
    pins = []
    for line in floors_text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins.append((canonicalize_name(name.strip()), Version(version.strip())))
    return pins


def floor_problems(pyproject: dict, floors_text: str) -> list[str]:
    """Each disagreement between pyproject's lower bounds and the floors file, one line each."""
    bounds = _lower_bounds(pyproject)
    pins = _pins(floors_text)
    pinned = dict(pins)
    problems = [f"{name} is pinned twice" for name in sorted(pinned)
                if sum(n == name for n, _ in pins) > 1]
    for name, bound in sorted(bounds.items()):
        if name not in pinned:
            problems.append(f"{name}>={bound} has no line in .ci/floors.txt")
        elif pinned[name] != bound:
            problems.append(f"{name}: pyproject says >={bound}, .ci/floors.txt =={pinned[name]}")
    problems += [f"{name}=={version} in .ci/floors.txt is no lower bound in pyproject.toml"
                 for name, version in sorted(pinned.items()) if name not in bounds]
    return problems


def _pyproject(dependencies: list[str], dev: list[str] | None = None) -> dict:
    return {"build-system": {"requires": ["setuptools>=77.0.1", "wheel"]},
            "project": {"dependencies": dependencies,
                        "optional-dependencies": {"dev": dev or [], "dask": [], "bench": []}}}


def test_every_lower_bound_has_its_floor_and_every_floor_its_bound():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    problems = floor_problems(pyproject, (ROOT / ".ci" / "floors.txt").read_text())
    assert problems == [], "\n".join(problems)


def test_the_floors_cover_every_extra_but_the_untested_ones():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert sorted(extras) == sorted(TESTED_EXTRAS + UNTESTED_EXTRAS)


@pytest.mark.parametrize(("dependencies", "dev", "floors", "words"), [
    # the defect as found: scikit-learn>=1.3 allowed a version the OOB methods fail on
    (["scikit-learn>=1.4"], [], "setuptools==77.0.1\nscikit-learn==1.3\n",
     ["scikit-learn: pyproject says >=1.4, .ci/floors.txt ==1.3"]),
    (["numpy>=1.24.1", "pandas>=2.2"], [], "setuptools==77.0.1\nnumpy==1.24.1\n",
     ["pandas>=2.2 has no line"]),
    ([], ["dask[distributed]>=2024.1"], "setuptools==77.0.1\n",
     ["dask>=2024.1 has no line"]),
    (["numpy>=1.24.1"], [], "setuptools==77.0.1\nnumpy==1.24.1\nscipy==1.10\n",
     ["scipy==1.10 in .ci/floors.txt is no lower bound"]),
    (["numpy>=1.24.1"], [], "setuptools==77.0.1\nnumpy==1.24.1\nNumPy==1.25\n",
     ["numpy is pinned twice", "numpy: pyproject says >=1.24.1, .ci/floors.txt ==1.25"]),
    (["Scikit_Learn>=1.4"], [], "# comment\n\nsetuptools==77.0.1  # build\nscikit-learn==1.4.0\n",
     []),
], ids=["bound raised, floor not", "bound without floor", "extra without floor",
        "floor without bound", "floor twice", "agree"])
def test_floor_problems_names_each_disagreement(dependencies, dev, floors, words):
    problems = floor_problems(_pyproject(dependencies, dev), floors)
    assert len(problems) == len(words), problems
    for problem, expected in zip(problems, words):
        assert expected in problem
