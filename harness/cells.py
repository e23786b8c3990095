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

from harness import registry
from harness.dataset import DatasetSource
from harness.errors import BadInputError
from harness.method import Method
from harness.models import ModelSpec
from harness.spec import expand_grid, parse_spec


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
        payload = json.dumps(
            {
                "dataset": [self.dataset.name, self.dataset.params],
                "model": [self.model.forest, self.model.params],
                "seed": self.seed,
                "method": [self.method.name, self.method.params],
                "explain_on": self.explain_on, "max_explain": self.max_explain,
            },
            sort_keys=True, default=list,
        )
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


def _expand(specs: Iterable[str | dict], make) -> list:
    """Instantiate every configuration named by ``specs`` (strings or dicts with 'name')."""
    objects = []
    for spec in specs:
        if isinstance(spec, str):
            name, grid = parse_spec(spec)
        elif isinstance(spec, dict) and "name" in spec:
            spec = dict(spec)
            name = spec.pop("name")
            grid = {k: v if isinstance(v, list) else [v] for k, v in spec.items()}
        else:
            raise BadInputError(
                f"Expected 'name[param=value]' or a table with a 'name' key; got {spec!r}."
            )
        objects.extend(make(name, **params) for params in expand_grid(grid))
    return objects


def expand_methods(specs: Iterable[str | dict]) -> list[Method]:
    return _expand(specs, registry.make_method)


def expand_datasets(specs: Iterable[str | dict]) -> list[DatasetSource]:
    return _expand(specs, registry.make_dataset)


def expand_models(specs: Iterable[str | dict | ModelSpec]) -> list[ModelSpec]:
    models = []
    for spec in specs:
        if isinstance(spec, ModelSpec):
            models.append(spec)
        elif isinstance(spec, dict) and "name" not in spec:
            models.append(ModelSpec.from_any(spec))
        else:
            if isinstance(spec, dict):
                spec = dict(spec)
                name = spec.pop("name")
                grid = {k: v if isinstance(v, list) else [v] for k, v in spec.items()}
            else:
                name, grid = parse_spec(spec)
            models.extend(ModelSpec.from_any({"forest": name, **p}) for p in expand_grid(grid))
    return models


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
