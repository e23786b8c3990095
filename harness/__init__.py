"""A benchmark and comparison harness for variable-importance measures of tree ensembles.

Public API (see DESIGN.md)::

    import harness
    harness.list_methods()
    ds = harness.load_dataset("led")
    model = harness.fit_model({"forest": "extra_trees", "max_features": 1}, ds, seed=0)
    imp = harness.explain("local_mdi", model, ds.X, ds.y, seed=0)
    harness.compare(datasets=["led"], models=["extra_trees"], methods=["mdi"], out="runs/x")
    df = harness.load_results("runs/x")
"""

# first: numba's fork-safe threading layer, before anything starts numba's threads
import harness.core.threading_layer  # noqa: F401, I001
from harness.api import explain, list_datasets, list_methods, load_dataset
from harness.core.dataset import DatasetSource
from harness.core.errors import (
    BadInputError,
    HarnessError,
    InvalidParameterError,
    MethodSkipped,
    NotInstalledError,
    UnknownNameError,
)
from harness.core.method import ExplainData, Method
from harness.core.params import Boolean, Interval, NoneValue, Options, Param
from harness.core.types import Dataset, GroundTruth, Importances, TruthVector
from harness.forest.models import ModelSpec, fit_model
from harness.forest.view import ForestView, forest_view
from harness.run.results import load_results
from harness.run.runner import compare

__version__ = "0.1.0"

__all__ = [
    "Boolean", "DatasetSource", "Interval", "NoneValue", "Options", "Param",
    "BadInputError", "Dataset", "ExplainData", "ForestView", "GroundTruth", "HarnessError",
    "Importances", "InvalidParameterError", "Method", "MethodSkipped", "ModelSpec",
    "NotInstalledError", "TruthVector", "UnknownNameError", "compare", "explain", "fit_model",
    "forest_view", "list_datasets", "list_methods", "load_dataset", "load_results",
]

# last, once every name above exists: the first import of an environment compiles the
# kernels numba's cache lacks, with a progress line (harness.run.first_import)
from harness.run.first_import import compile_at_first_import  # noqa: E402

compile_at_first_import()
del compile_at_first_import

