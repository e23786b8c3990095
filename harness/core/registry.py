"""Registry: an explicit dict of built-ins plus entry-point groups for third parties.

Built-ins are named as ``"module:Class"`` strings and imported lazily, so that the harness
never imports a concrete method or dataset by name at import time. Third-party packages add
their own under the entry-point groups ``harness.methods`` and ``harness.datasets``. A plugin
that fails to import warns instead of crashing; a duplicate name warns and the first wins;
an unknown name raises with the sorted list of what exists.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from importlib.metadata import entry_points

from harness.core.dataset import DatasetSource
from harness.core.errors import BadInputError, unknown_name
from harness.core.method import Method
from harness.core.spec import expand_grid, parse_spec

BUILTIN_METHODS: dict[str, str] = {
    "mdi": "harness.methods.mdi:MDI",
    "local_mdi": "harness.methods.local_mdi:LocalMDI",
    "saabas": "harness.methods.saabas:Saabas",
    "treeshap": "harness.methods.treeshap:TreeSHAP",
    "mda_test": "harness.methods.mda_test:MDATrainTest",
    "mda_bc": "harness.methods.mda_bc:MDABreimanCutler",
    "mda_ik": "harness.methods.mda_ik:MDAIshwaranKogalur",
    "sobol_mda": "harness.methods.sobol_mda:SobolMDA",
    "sage": "harness.methods.sage:SAGE",
    "tree_sage": "harness.methods.tree_sage:TreeSAGE",
    "mdi_oob": "harness.methods.mdi_oob:MDIOob",
    "ufi": "harness.methods.ufi:UFI",
    "shaff": "harness.methods.shaff:SHAFF",
    "rs": "harness.methods.rs:RandomSubspace",
    "srs": "harness.methods.srs:SequentialRandomSubspace",
    "loco": "harness.methods.loco:LOCO",
    "conditional_permutation": "harness.methods.conditional_permutation:ConditionalPermutation",
}

BUILTIN_DATASETS: dict[str, str] = {
    "led": "harness.datasets.led:LED",
    "xor": "harness.datasets.xor:XOR",
    "digits": "harness.datasets.sklearn_bundled:Digits",
    "iris": "harness.datasets.sklearn_bundled:Iris",
    "wine": "harness.datasets.sklearn_bundled:Wine",
    "breast_cancer": "harness.datasets.sklearn_bundled:BreastCancer",
    "diabetes": "harness.datasets.sklearn_bundled:Diabetes",
    "friedman1": "harness.datasets.friedman:Friedman1",
    "linear_gaussian": "harness.datasets.linear_gaussian:LinearGaussian",
    "ishigami": "harness.datasets.ishigami:Ishigami",
    "madelon_like": "harness.datasets.madelon_like:MadelonLike",
    "sqrt_weights": "harness.datasets.scornet_sqrt:ScornetSqrt",
}

BUILTIN_REPORTS: dict[str, str] = {
    "per_dataset": "harness.reports.per_dataset:build",  # first: a section per dataset
    "correlation": "harness.reports.correlation:build",
    "timing": "harness.reports.timing:build",
    "accuracy": "harness.reports.accuracy:build",
    "scaling": "harness.reports.scaling:build",  # only where the folder has a scaling.json
}
REPORT_INDEX = "harness.reports.index:build_reports"
#: the figure and exponents CSV of ``bench --scaling``, written next to its scaling.json
SCALING_REPORT = "harness.reports.scaling:write_scaling_report"

BUILTIN_TARGETS: dict[str, str] = {
    "louppe2013-led": "harness.reports.targets.louppe2013_led:Louppe2013LED",
    "louppe2013-theorems": "harness.reports.targets.louppe2013_theorems:Louppe2013Theorems",
    "geurts-xor": "harness.reports.targets.geurts_xor:GeurtsXOR",
    "geurts-masking": "harness.reports.targets.geurts_masking:GeurtsMasking",
    "sutera2021-table4": "harness.reports.targets.sutera2021_table4:Sutera2021Table4",
    "sutera2021-fig1": "harness.reports.targets.sutera2021_fig1:Sutera2021Fig1",
    "sutera2021-fig2": "harness.reports.targets.sutera2021_fig2:Sutera2021Fig2",
    "sutera2021-fig3": "harness.reports.targets.sutera2021_fig3:Sutera2021Fig3",
    "sutera2021-examples": "harness.reports.targets.sutera2021_examples:Sutera2021Examples",
    "benard2022-sobol-mda": "harness.reports.targets.benard2022_sobol_mda:Benard2022SobolMDA",
    "benard2022-shaff": "harness.reports.targets.benard2022_shaff:Benard2022SHAFF",
    "scornet-mdi-bias": "harness.reports.targets.scornet_mdi_bias:ScornetMDIBias",
    "scornet-mdi-lemmas": "harness.reports.targets.scornet_mdi_lemmas:ScornetMDILemmas",
    "scornet-mda": "harness.reports.targets.scornet_mda:ScornetMDA",
    "geurts2016-srs": "harness.reports.targets.geurts2016_srs:Geurts2016SRS",
}
#: the module with the reproduction driver, page writer and gallery folders
REPRODUCTION = "harness.reports.targets.base"

GROUPS = {"method": "harness.methods", "dataset": "harness.datasets",
          "report": "harness.reports"}


def import_object(target: str):
    """The object a ``"module:qualname"`` target names (a dotted qualname walks attributes,
    e.g. a class's method)."""
    module, _, qualname = target.partition(":")
    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _entry_point_targets(group: str) -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=group)}


@functools.cache
def _classes(kind: str) -> dict[str, type]:
    builtins = BUILTIN_METHODS if kind == "method" else BUILTIN_DATASETS
    base = Method if kind == "method" else DatasetSource
    found: dict[str, type] = {}
    targets = list(builtins.items())
    for name, target in _entry_point_targets(GROUPS[kind]).items():
        if name in builtins:
            if builtins[name] != target:
                warnings.warn(
                    f"The {kind} {name!r} from entry point {target!r} is ignored: "
                    f"a built-in {kind} has that name.",
                    stacklevel=2,
                )
            continue
        targets.append((name, target))
    for name, target in targets:
        try:
            cls = import_object(target)
        except Exception as exc:  # a broken plugin must not take the harness down
            warnings.warn(f"Cannot load {kind} {name!r} from {target!r}: {exc}", stacklevel=2)
            continue
        if not (isinstance(cls, type) and issubclass(cls, base)):
            warnings.warn(
                f"{target!r} registered as {kind} {name!r} is not a {base.__name__}.",
                stacklevel=2,
            )
            continue
        found[name] = cls
    return found


def report_builders() -> dict[str, object]:
    """Report builders ``build(results, out_dir) -> ReportSection`` by name, built-ins first.

    Third parties add theirs under the entry-point group ``harness.reports``.
    """
    targets = dict(BUILTIN_REPORTS)
    for name, target in _entry_point_targets(GROUPS["report"]).items():
        targets.setdefault(name, target)
    builders = {}
    for name, target in targets.items():
        try:
            builders[name] = import_object(target)
        except Exception as exc:
            warnings.warn(f"Cannot load report {name!r} from {target!r}: {exc}", stacklevel=2)
    return builders


def build_reports(out):
    """Write every report and the index page of a run folder; returns the written paths."""
    return import_object(REPORT_INDEX)(out)


def write_scaling_report(table) -> list:
    """Draw the scaling figure and write the exponents CSV beside the bench's
    ``scaling.json`` (:mod:`harness.reports.scaling`); returns the written paths."""
    return import_object(SCALING_REPORT)(table)


def method_names() -> list[str]:
    return sorted(_classes("method"))


def installed_method_names() -> list[str]:
    """The registered methods whose optional packages are installed."""
    return [name for name in method_names() if not get_method_class(name).missing_packages()]


def dataset_names() -> list[str]:
    return sorted(_classes("dataset"))


def get_method_class(name: str) -> type[Method]:
    """The Method class registered under ``name``."""
    classes = _classes("method")
    if name not in classes:
        raise unknown_name("method", name, list(classes))
    return classes[name]


def get_dataset_class(name: str) -> type[DatasetSource]:
    """The DatasetSource class registered under ``name``."""
    classes = _classes("dataset")
    if name not in classes:
        raise unknown_name("dataset", name, list(classes))
    return classes[name]


def make_method(name: str, **params) -> Method:
    return get_method_class(name)(**params)


def method_from_spec(spec: str, **params) -> Method:
    """The one configured method that ``spec`` names: a registered name (``"treeshap"``) or
    a label as reports and :attr:`Importances.method` write it
    (``"treeshap[perturbation=interventional]"``), with ``params`` added.

    Raises
    ------
    BadInputError
        When the spec names a grid of several configurations, or sets a parameter that
        ``params`` sets too.
    """
    name, grid = parse_spec(spec)
    configurations = expand_grid(grid)
    if len(configurations) != 1:
        raise BadInputError(
            f"{spec!r} names a grid of {len(configurations)} configurations; one method "
            "takes one value per parameter (a list-valued parameter goes inside one more pair "
            "of brackets, e.g. loco[groups=[[[X1,X2]]]]; `compare --method` runs a grid).")
    (configuration,) = configurations
    both = sorted(set(configuration) & set(params))
    if both:
        raise BadInputError(
            f"{spec!r} and the keyword arguments both set {both}; give each parameter once.")
    return make_method(name, **configuration, **params)


def make_dataset(name: str, **params) -> DatasetSource:
    return get_dataset_class(name)(**params)


def load_target(name: str):
    """The built-in reproduction target called ``name``, instantiated."""
    if name not in BUILTIN_TARGETS:
        raise unknown_name("reproduction target", name, BUILTIN_TARGETS)
    return import_object(BUILTIN_TARGETS[name])()


def reproduction():
    """The reproduction module (:mod:`harness.reports.targets.base`): ``reproduce``,
    ``TARGETS``, the gallery folders."""
    return importlib.import_module(REPRODUCTION)
