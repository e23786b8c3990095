"""Cells: grid expansion and stable keys.

A cell is one (dataset, model spec, seed, configured method). Its key hashes the full,
resolved parameters, so a later run with the same grid finds it in the store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from harness.core import registry
from harness.core.dataset import DatasetSource
from harness.core.errors import BadInputError
from harness.core.method import Method
from harness.core.spec import expand_grid, parse_spec
from harness.forest.models import ModelSpec


@dataclass(frozen=True)
class Cell:
    dataset: DatasetSource
    model: ModelSpec
    seed: int
    method: Method
    explain_on: str = "train"
    max_explain: int | None = None

    @property
    def key(self) -> str:
        """Hash of everything that decides the cell's result: the resolved specs, the seed,
        the rows explained, the method's :attr:`~harness.core.method.Method.version` and the
        dataset's :attr:`~harness.core.dataset.DatasetSource.version` (each left out at
        version 1, so that the keys of stores written before versions existed still
        match)."""
        identity = {
            "dataset": [self.dataset.name, self.dataset.params],
            "model": [self.model.forest, self.model.params],
            "seed": self.seed,
            "method": [self.method.name, self.method.params],
            "explain_on": self.explain_on, "max_explain": self.max_explain,
        }
        if self.method.version != 1:
            identity["method_version"] = self.method.version
        if self.dataset.version != 1:
            identity["dataset_version"] = self.dataset.version
        payload = json.dumps(identity, sort_keys=True, default=list)
        return hashlib.sha1(payload.encode()).hexdigest()

    @property
    def group(self) -> tuple[str, str, int]:
        """What the cell shares with others: the dataset, the fitted model and the seed."""
        return repr(self.dataset), repr(self.model), self.seed

    def meta(self) -> dict[str, Any]:
        return {
            "key": self.key, "dataset": repr(self.dataset), "dataset_name": self.dataset.name,
            "dataset_params": self.dataset.params, "model": repr(self.model),
            "model_name": self.model.forest, "model_params": self.model.params,
            "seed": self.seed, "method": repr(self.method), "method_name": self.method.name,
            "method_params": self.method.params, "explain_on": self.explain_on,
        }

    def label(self) -> str:
        return f"{self.dataset!r} | {self.model!r} | seed={self.seed} | {self.method!r}"


def _name_and_grid(spec: str | dict, name_key: str = "name") -> tuple[str, dict[str, list]]:
    """``name[param=value]`` or a table ``{name_key: ..., param: value or [values]}``."""
    if isinstance(spec, str):
        return parse_spec(spec)
    if isinstance(spec, dict) and name_key in spec:
        spec = dict(spec)
        name = spec.pop(name_key)
        return name, {k: v if isinstance(v, list) else [v] for k, v in spec.items()}
    raise BadInputError(
        f"Expected 'name[param=value]' or a table with a {name_key!r} key; got {spec!r}."
    )


def _expand(specs: Iterable, make, built: type, name_key: str = "name") -> list:
    """Every configuration named by ``specs``, in order; ``built`` instances pass through."""
    objects = []
    for spec in specs:
        if isinstance(spec, built):
            objects.append(spec)
            continue
        name, grid = _name_and_grid(spec, name_key)
        objects.extend(make(name, **params) for params in expand_grid(grid))
    return objects


def expand_methods(specs: Iterable[str | dict | Method]) -> list[Method]:
    return _expand(specs, registry.make_method, Method)


def expand_datasets(specs: Iterable[str | dict | DatasetSource]) -> list[DatasetSource]:
    return _expand(specs, registry.make_dataset, DatasetSource)


def expand_models(specs: Iterable[str | dict | ModelSpec]) -> list[ModelSpec]:
    """Model specs; a table names its forest with ``forest`` (default extra_trees) or ``name``."""
    def make(name, **params):
        return ModelSpec.from_any({"forest": name, **params})

    def as_table(spec):
        if not isinstance(spec, dict):
            return spec
        spec = dict(spec)
        spec["forest"] = spec.pop("name", spec.get("forest", "extra_trees"))
        return spec

    tables = [as_table(spec) for spec in specs]
    return _expand(tables, make, ModelSpec, name_key="forest")


def iter_cells(
    datasets: list[DatasetSource], models: list[ModelSpec], methods: list[Method],
    seeds: list[int], explain_on: str = "train", max_explain: int | None = None,
) -> Iterator[Cell]:
    """All cells of a grid, grouped by (dataset, model, seed)."""
    for dataset in datasets:
        for model in models:
            for seed in seeds:
                for method in methods:
                    yield Cell(dataset, model, seed, method, explain_on, max_explain)
