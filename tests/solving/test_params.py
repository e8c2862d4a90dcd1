import re

import pytest

from ilplayer import Status
from ilplayer.errors import ParameterError
from ilplayer.plugin_api import PersistentModelSolver
from ilplayer.solvers.native_params import native_value


@pytest.mark.parametrize(
    ("current", "value", "expected"),
    [
        (True, False, False),
        (False, 1, True),
        (0, 3, 3),
        (0, 2.0, 2),
        (0.5, 1, 1.0),
        (0.5, 0.25, 0.25),
        ("off", "on", "on"),
        (None, [1, 2], [1, 2]),
    ],
)
def test_values_that_fit_the_parameter_are_converted_to_its_type(current, value, expected):
    converted = native_value("X", "p", value, current)
    assert converted == expected and type(converted) is type(expected)


@pytest.mark.parametrize(
    ("current", "value", "expected"),
    [
        (True, 2, "a bool"),
        (True, "yes", "a bool"),
        (0, 1.5, r"an integer \(the library would truncate it\)"),
        (0, True, "an integer"),
        (0, "2", "an integer"),
        (0.5, True, "a real number"),
        (0.5, "x", "a real number"),
        (0.5, [1], "a real number"),
        ("off", 1, "a string"),
    ],
)
def test_values_a_library_would_convert_silently_are_refused_by_name(current, value, expected):
    with pytest.raises(
        ParameterError, match=rf"params: X rejected p={re.escape(repr(value))}: expected {expected}"
    ):
        native_value("X", "p", value, current)


def test_a_parameter_error_is_a_value_error():
    assert issubclass(ParameterError, ValueError)


class NoNativeSolver(PersistentModelSolver):
    name = "no-native"

    def build_model(self, batch):
        return None

    def solve_instance(self, model, c, start=None):
        return Status.INFEASIBLE, None


def test_native_parameter_names_must_be_strings():
    with pytest.raises(TypeError, match=r"params: native parameter names are strings, got 1"):
        NoNativeSolver(params={"a": 0, 1: 2})
    assert NoNativeSolver(params={"a": 0}).params == {"a": 0}
