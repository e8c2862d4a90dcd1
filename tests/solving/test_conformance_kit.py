"""The conformance kit itself: its families are what they claim, and it passes a correct
host-side backend registered in-process."""

from __future__ import annotations

import pytest
import torch
from host_solvers import EnumerationSolver

import ilplayer
from ilplayer import Status
from ilplayer.testing import FAMILIES, make_instances
from ilplayer.testing.conformance import SolverConformance, exhaustive_optimum


@pytest.mark.parametrize("family", FAMILIES)
def test_family_is_deterministic_and_bruteforce_matches_plain_enumeration(family):
    first, again = make_instances(family, seed=4), make_instances(family, seed=4)
    assert torch.equal(first.c, again.c) and torch.equal(first.A, again.A)
    y, status = ilplayer.solve(first.c, first.A, first.b, first.lb, first.ub)
    for row in range(len(first.c)):
        expected = exhaustive_optimum(first, row)
        if expected is None:
            assert status[row] == Status.INFEASIBLE
        else:
            assert float((first.c[row] * y[row]).sum()) == pytest.approx(expected, abs=1e-9)


def test_families_cover_infeasible_single_point_and_set_cover_cases():
    infeasible = make_instances("infeasible")
    _, status = ilplayer.solve(
        infeasible.c, infeasible.A, infeasible.b, infeasible.lb, infeasible.ub
    )
    assert (status[1::2] == Status.INFEASIBLE).all() and (status[0::2] == Status.OPTIMAL).all()
    single = make_instances("single-point")
    y, _ = ilplayer.solve(single.c, single.A, single.b, single.lb, single.ub)
    assert (y == y[0]).all()  # every cost vector gets the only feasible point
    cover = make_instances("set-cover")
    y, _ = ilplayer.solve(cover.c, cover.A, cover.b, cover.lb, cover.ub)
    assert ((-cover.A) @ y.T >= 1).all()  # every element covered


@pytest.fixture(scope="module", autouse=True)
def enumeration_backend():
    ilplayer.register_solver("kit-enumeration", EnumerationSolver, replace=True)
    yield
    ilplayer.solvers.registry.unregister_solver("kit-enumeration")


class TestKitOnAHostBackend(SolverConformance):
    solver_name = "kit-enumeration"
