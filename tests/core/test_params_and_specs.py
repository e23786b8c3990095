"""Parameter constraints and the name[param=value] syntax."""

from __future__ import annotations

import pytest

from harness.core.errors import BadInputError, InvalidParameterError
from harness.core.params import Interval, NoneValue, Options, Param, validate_params
from harness.core.spec import expand_grid, format_spec, parse_spec
from harness.forest.models import ModelSpec

DECLARED = {
    "n_repeats": Param(5, (Interval(int, 1, None, "left"),)),
    "mode": Param("a", (Options({"a", "b"}),)),
    "rate": Param(None, (Interval(float, 0, 1, "right"), NoneValue())),
}


def test_defaults_and_coercion():
    assert validate_params("m", DECLARED, {}) == {"n_repeats": 5, "mode": "a", "rate": None}
    assert validate_params("m", DECLARED, {"n_repeats": 3.0})["n_repeats"] == 3


@pytest.mark.parametrize("given, message", [
    ({"n_repeats": 0}, "The 'n_repeats' parameter of m must be an int in [1, inf). Got 0 "
                       "instead."),
    ({"n_repeats": True}, "must be an int in [1, inf). Got True instead."),
    ({"mode": "c"}, "must be a str among {'a', 'b'}. Got 'c' instead."),
    ({"rate": 0.0}, "must be a float in (0, 1] or None. Got 0.0 instead."),
    ({"rate": float("nan")}, "Got nan instead."),
])
def test_messages(given, message):
    with pytest.raises(InvalidParameterError) as info:
        validate_params("m", DECLARED, given)
    assert message in str(info.value)


def test_parse_and_format_round_trip():
    name, grid = parse_spec("treeshap[perturbation=interventional,n_background=[10,20]]")
    assert name == "treeshap"
    assert grid == {"perturbation": ["interventional"], "n_background": [10, 20]}
    combos = expand_grid(grid)
    assert [c["n_background"] for c in combos] == [10, 20]
    assert format_spec(name, combos[0]) == "treeshap[n_background=10,perturbation=interventional]"
    assert parse_spec("mdi[normalize=true]")[1] == {"normalize": [True]}
    assert parse_spec("linear_gaussian[coef=[[1,2.5]]]")[1] == {"coef": [[1, 2.5]]}
    assert parse_spec("led") == ("led", {})


@pytest.mark.parametrize("value", [
    "interventional", "1", "true", "None", "nan", "1_000", "a,b", "x[1]", "k=v", " padded ",
    "", "it's", 3, 2.5, 1.0, True, None, [1.0, 2.0], [["X1", "a,b"], ["7"]], [[]],
])
def test_a_formatted_value_parses_back_to_itself(value):
    name, grid = parse_spec(format_spec("m", {"v": value}))
    assert (name, grid) == ("m", {"v": [value]})


@pytest.mark.parametrize("kind, name, params", [
    ("method", "loco", {"groups": [["X1", "X2"], ["3"]], "n_folds": 3}),
    ("method", "treeshap", {"perturbation": "interventional", "n_background": 30}),
    ("dataset", "linear_gaussian", {"coef": [1.0, 2.0, 0.0, 0.0, 0.0, 0.0], "rho": 0.5}),
])
def test_a_label_given_back_as_a_spec_makes_the_same_configuration(kind, name, params):
    # the labels of reports and Importances.method can be pasted into --method, --dataset
    # and explain: a list-valued parameter is one value, not a grid of its elements
    from harness.core import registry

    make = registry.make_method if kind == "method" else registry.make_dataset
    made = make(name, **params)
    parsed_name, grid = parse_spec(repr(made))
    (config,) = expand_grid(grid)
    again = make(parsed_name, **config)
    assert again.params == made.params and repr(again) == repr(made)


@pytest.mark.parametrize("text", ["", "mdi[normalize]", "9abc", "mdi[[x=1]"])
def test_unparseable_specs(text):
    with pytest.raises(BadInputError):
        parse_spec(text)


def test_model_spec_validation_and_repr():
    spec = ModelSpec.from_any("extra_trees[n_estimators=10,max_features=1]")
    assert repr(spec) == "extra_trees[max_features=1,n_estimators=10]"
    assert ModelSpec.from_any({"forest": "random_forest"}).params["n_estimators"] == 100
    with pytest.raises(InvalidParameterError, match="'n_estimators' parameter of extra_trees"):
        ModelSpec.from_any({"n_estimators": 0})
    with pytest.raises(BadInputError, match="criterion"):
        ModelSpec.from_any({"criterion": "gini"}).estimator("regression", 0)
