"""The dataset plugin contract: a named, parametrised, seeded generator of a Dataset."""

from __future__ import annotations

from typing import Any, ClassVar

from harness.core.params import Param, validate_params
from harness.core.spec import format_spec
from harness.core.types import Dataset


class DatasetSource:
    """Base class of dataset plugins.

    Subclasses declare ``name``, ``task``, ``parameters`` and implement
    ``_load(params, seed) -> Dataset``; randomness comes from ``seed`` only.
    """

    name: ClassVar[str] = ""
    task: ClassVar[str] = "classification"
    parameters: ClassVar[dict[str, Param]] = {}
    summary: ClassVar[str] = ""
    #: Raised by one whenever a change makes the dataset generate other rows (or another
    #: truth) for the same parameters and seed: it enters the cell key
    #: (:attr:`harness.run.cells.Cell.key`), so a resumed run does not reuse the cells of the
    #: earlier rows, as :attr:`harness.core.method.Method.version` does for a method.
    version: ClassVar[int] = 1

    def __init__(self, **params: Any) -> None:
        self.params = validate_params(self.name, self.parameters, params)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.params.items() if v != self.parameters[k].default}
        return format_spec(self.name, changed)

    def load(self, seed: int = 0) -> Dataset:
        dataset = self._load(self.params, seed)
        dataset.name = repr(self)
        dataset.params = dict(self.params)
        return dataset

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:  # pragma: no cover
        raise NotImplementedError
