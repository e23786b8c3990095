"""Small real datasets shipped with scikit-learn (no download): no ground truth."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn import datasets as sk_datasets

from harness.core.dataset import DatasetSource
from harness.core.errors import InvalidParameterError
from harness.core.params import Interval, NoneValue, Param
from harness.core.types import Dataset


class BundledDataset(DatasetSource):
    """A scikit-learn bundled dataset, whole or as a seeded subsample without replacement.

    Used by Sutera et al. (2021), Sec. 6 and Appendix E.2 (digits, iris, wine, breast cancer).
    """

    loader: ClassVar[str] = ""
    parameters = {
        "n_samples": Param(
            None,
            (NoneValue(), Interval(int, 1, None)),
            "None: all rows; an int: that many rows drawn at random without replacement",
        ),
    }

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        bunch = getattr(sk_datasets, self.loader)()
        X = np.asarray(bunch.data, dtype=np.float64)
        dtype = np.int64 if self.task == "classification" else np.float64
        y = np.asarray(bunch.target, dtype=dtype)
        n = params["n_samples"]
        if n is not None:
            if n > len(X):
                raise InvalidParameterError(
                    f"The 'n_samples' parameter of {self.name} must be None or an int in "
                    f"[1, {len(X)}] (the rows available). Got {n!r} instead."
                )
            rows = np.sort(np.random.default_rng(seed).choice(len(X), size=n, replace=False))
            X, y = X[rows], y[rows]
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            task=self.task,
            feature_names=[str(f) for f in bunch.feature_names],
            description=f"scikit-learn {self.loader}()",
        )


class Digits(BundledDataset):
    name = "digits"
    task = "classification"
    loader = "load_digits"
    summary = "8x8 handwritten digits, 1797 rows, 64 integer pixels, 10 classes"


class Iris(BundledDataset):
    name = "iris"
    task = "classification"
    loader = "load_iris"
    summary = "Fisher's iris, 150 rows, 4 real features, 3 classes"


class Wine(BundledDataset):
    name = "wine"
    task = "classification"
    loader = "load_wine"
    summary = "Wine recognition, 178 rows, 13 features, 3 classes"


class BreastCancer(BundledDataset):
    name = "breast_cancer"
    task = "classification"
    loader = "load_breast_cancer"
    summary = "Wisconsin diagnostic breast cancer, 569 rows, 30 real features, 2 classes"


class Diabetes(BundledDataset):
    name = "diabetes"
    task = "regression"
    loader = "load_diabetes"
    summary = "Diabetes progression, 442 rows, 10 standardised features, regression"
