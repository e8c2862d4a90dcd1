import pytest
import torch

import ilplayer
from ilplayer import LicenseStatus
from ilplayer.testing import SolverConformance


class TestGurobiConformance(SolverConformance):
    solver_name = "gurobi"


def test_size_limited_licence_gives_a_clear_error_before_solving():
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    from ilplayer_gurobi.solver import GurobiSolver

    if GurobiSolver.license_status() != LicenseStatus.SIZE_LIMITED:
        pytest.skip(f"Gurobi licence is {GurobiSolver.license_status().value}, not size-limited")
    c, A, b = torch.zeros(1, 2001), torch.ones(1, 2001), torch.ones(1)
    with pytest.raises(ValueError, match=r"A: 1 constraints x 2001 variables exceed Gurobi's "
                                         r"size-limited licence"):
        ilplayer.solve(c, A, b, lb=0, ub=1, solver="gurobi")


def test_unknown_parameter_is_refused_with_its_name():
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    with pytest.raises(ValueError, match="params: Gurobi rejected NoSuchParam"):
        ilplayer.get_solver("gurobi", params={"NoSuchParam": 1})
