import pytest

import ilplayer
from ilplayer.testing import SolverConformance


class TestPyomoAppsiHighsConformance(SolverConformance):
    solver_name = "pyomo:appsi_highs"


class TestPyomoGurobiPersistentConformance(SolverConformance):
    solver_name = "pyomo:gurobi_persistent"


def test_unavailable_pyomo_solver_is_refused_with_its_name():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    with pytest.raises(ilplayer.SolverNotInstalledError,
                       match="Pyomo solver 'no_such_solver' is not available"):
        ilplayer.get_solver("pyomo:no_such_solver")


def test_the_family_name_is_listed_once():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    assert "pyomo" in ilplayer.list_solvers()
