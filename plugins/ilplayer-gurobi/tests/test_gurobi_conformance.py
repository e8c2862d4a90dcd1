import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.plugin_api import LicenseStatus
from ilplayer.testing.conformance import SolverConformance


class TestGurobiConformance(SolverConformance):
    solver_name = "gurobi"


def test_size_limited_licence_gives_a_clear_error_before_solving():
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    from ilplayer_gurobi.solver import GurobiSolver

    if GurobiSolver.license_status() != LicenseStatus.SIZE_LIMITED:
        pytest.skip(f"Gurobi licence is {GurobiSolver.license_status().value}, not size-limited")
    c, A, b = torch.zeros(1, 2001), torch.ones(1, 2001), torch.ones(1)
    with pytest.raises(
        ValueError,
        match=r"A: 1 constraints x 2001 variables exceed Gurobi's "
        r"size-limited licence",
    ):
        ilplayer.solve(c, A, b, lb=0, ub=1, solver="gurobi")


def test_unknown_parameter_is_refused_with_its_name():
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    with pytest.raises(ValueError, match="params: Gurobi rejected NoSuchParam"):
        ilplayer.get_solver("gurobi", params={"NoSuchParam": 1})


def test_a_value_gurobi_would_convert_silently_is_refused():
    # gurobipy stored Presolve=0.7 as 0; a string or a list ended in a bare TypeError.
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    for key, value, expected in [
        ("Presolve", 0.7, "an integer"),
        ("MIPGap", "0", "a real number"),
        ("MIPGap", [0], "a real number"),
    ]:
        with pytest.raises(
            ValueError, match=rf"params: Gurobi rejected {key}=.*: expected {expected}"
        ):
            ilplayer.get_solver("gurobi", params={key: value})
    assert (
        ilplayer.get_solver("gurobi", params={"mipgap": 0}) is not None
    )  # names as Gurobi spells them


def test_rounded_answers_stay_feasible_on_a_dense_box():
    """With Gurobi's default IntFeasTol (1e-5) instance 865 of this dataset came back as
    2.99999-style values whose rounding violated A y <= b (and was demoted to ERROR)."""
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    from ilplayer.learning.constraints import sample_random_constraints
    from ilplayer.testing.instances import random_costs

    g = torch.Generator().manual_seed(2)
    corner = torch.where(torch.rand(16, generator=g) < 0.5, -5.0, 5.0)
    normals, offsets, origins = sample_random_constraints(
        4, 16, -5, 5, generator=g, feasible_point=corner
    )
    A, b = normals, offsets + (normals * origins).sum(-1)
    c = random_costs(2600, 16, g)[[865, 2277]]
    y, status = ilplayer.solve(c, A, b, -5, 5, solver="gurobi")
    assert ilplayer.Status.names(status) == ["optimal", "optimal"]
    assert ((y @ A.T) <= b + 1e-6).all()


def test_block_relaxations_fit_the_size_limited_licence_with_equalities():
    """Each equality is two rows of the block LP: counted as one, a 10 x 10 grid's shortest path
    (180 arcs, 100 equalities) made 11 blocks of 200 rows, over the licence's 2 000: every
    block LP failed, its gate closed and each instance went to the MIP."""
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    from ilplayer.testing.formulations import grid_network

    solver = ilplayer.get_solver("gurobi")
    A_eq, b_eq = grid_network(10)
    c = np.random.default_rng(0).uniform(0.1, 1.0, (16, A_eq.shape[1]))
    batch = ilplayer.core.records.ILPBatch(
        c=c,
        A=np.zeros((0, 180)),
        b=np.zeros(0),
        lb=np.zeros(180),
        ub=np.ones(180),
        A_eq=A_eq.toarray(),
        b_eq=b_eq,
    )
    answers = solver.solve_relaxations(solver.model_for(batch), c)
    assert all(answer is not None for answer in answers)  # network LPs are integral
    solver.close()
