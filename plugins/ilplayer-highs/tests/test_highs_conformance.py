import pytest

import ilplayer
from ilplayer.testing.conformance import SolverConformance


class TestHighsConformance(SolverConformance):
    solver_name = "highs"


@pytest.fixture
def highs():
    pytest.importorskip("highspy", reason="highspy is not installed")
    return ilplayer.get_solver


def test_unknown_option_is_refused_with_its_name(highs):
    with pytest.raises(
        ValueError, match="params: HiGHS rejected option no_such_option=1: HiGHS has no option"
    ):
        highs("highs", params={"no_such_option": 1})


def test_option_values_are_checked_against_the_option_type(highs):
    # A list reached highspy's setOptionValue and ended in pybind11's TypeError.
    for key, value, expected in [
        ("mip_rel_gap", [0.1], "a real number"),
        ("threads", 1.5, "an integer"),
        ("presolve", False, "a string"),
    ]:
        with pytest.raises(
            ValueError, match=rf"params: HiGHS rejected {key}=.*: expected {expected}"
        ):
            highs("highs", params={key: value})
    with pytest.raises(
        ValueError,
        match=r"params: HiGHS rejected option mip_rel_gap=-1.0: a value out of its range",
    ):
        highs("highs", params={"mip_rel_gap": -1.0})
    assert highs("highs", params={"threads": 1.0}).options["threads"] == 1  # integral: taken as 1
