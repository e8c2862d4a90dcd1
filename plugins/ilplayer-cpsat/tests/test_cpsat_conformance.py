import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.testing import SolverConformance, assert_agrees_with_bruteforce, make_instances


class TestCpSatConformance(SolverConformance):
    solver_name = "cpsat"


@pytest.fixture
def cpsat():
    pytest.importorskip("ortools", reason="ortools is not installed")
    return ilplayer.get_solver


def test_coarse_scaling_is_repaired_to_feasible_answers_within_the_documented_bound(cpsat):
    instances = make_instances("binary-m8", seed=5)
    solver = cpsat("cpsat", scale=10.0)
    solver.relaxation_multipliers = lambda model, c: [None] * len(c)  # every instance to CP-SAT
    y, status = ilplayer.solve(instances.c, instances.A, instances.b, instances.lb, instances.ub,
                               solver=solver)
    y_ref, status_ref = ilplayer.solve(instances.c, instances.A, instances.b, instances.lb,
                                       instances.ub)
    assert Status.names(status) == Status.names(status_ref)
    assert solver.repairs > 0  # the coarse scale admitted infeasible points, which were cut
    assert ((y @ instances.A.T) <= instances.b + 1e-6).all()  # always feasible
    bound = 0.5 * (np.array(instances.ub) - np.array(instances.lb)).sum() / 10.0
    gap = ((instances.c * y).sum(-1) - (instances.c * y_ref).sum(-1)).numpy()
    assert (gap >= -1e-9).all() and (gap <= bound + 1e-9).all()


def test_integer_data_is_exact_at_scale_one(cpsat):
    assert_agrees_with_bruteforce(make_instances("integer-coefficients"), cpsat("cpsat", scale=1.0))


def test_overflowing_scale_is_refused_naming_the_argument(cpsat):
    c, A, b = torch.ones(1, 4), torch.full((1, 4), 1e9), torch.ones(1)
    with pytest.raises(ValueError, match=r"A: coefficients up to 1e\+09 .* pass a smaller scale"):
        ilplayer.solve(c, A, b, lb=-5, ub=5, solver="cpsat", solver_options={"scale": 1e6})


def test_unknown_parameter_is_refused(cpsat):
    with pytest.raises(ValueError, match="params: CP-SAT has no parameter 'no_such_field'"):
        cpsat("cpsat", params={"no_such_field": 1})


def test_a_value_of_the_wrong_type_is_refused_by_name(cpsat):
    with pytest.raises(ValueError, match=r"params: CP-SAT rejected search_branching='NO_SUCH'"):
        cpsat("cpsat", params={"search_branching": "NO_SUCH"})
    with pytest.raises(ValueError, match=r"params: CP-SAT rejected num_workers='two'"):
        cpsat("cpsat", params={"num_workers": "two"})


def test_enum_parameters_take_a_member_name_or_number(cpsat):
    by_name = cpsat("cpsat", params={"search_branching": "LP_SEARCH"})
    by_number = cpsat("cpsat", params={"search_branching": 3})
    assert by_name._solver.parameters.search_branching == by_number._solver.parameters.search_branching
    assert by_name._solver.parameters.search_branching.name == "LP_SEARCH"



def test_the_start_reaches_the_model_as_a_hint_and_warm_answers_match_cold_ones(cpsat):
    from ilplayer.bench import family_batch

    batch = family_batch("dense m=4", 12, seed=2)
    warm = cpsat("cpsat")
    warm.relaxation_multipliers = lambda model, c: [None] * len(c)  # every instance to CP-SAT
    cold = cpsat("cpsat", warm_start=False)
    first = warm.solve(batch)
    hints = []
    solve_instance = warm.solve_instance

    def record(model, c):  # the hint CP-SAT sees when it solves this instance
        hint = model.proto.solution_hint
        hints.append((list(hint.vars), list(hint.values)))
        return solve_instance(model, c)

    warm.solve_instance = record
    again = warm.solve(batch)
    reference = cold.solve(batch)
    assert (again.status == Status.OPTIMAL).all() and (reference.status == Status.OPTIMAL).all()
    np.testing.assert_allclose(again.objective, reference.objective, atol=1e-5)
    np.testing.assert_allclose(first.objective, reference.objective, atol=1e-5)
    # Revisited with the same costs, each instance starts from its own previous answer.
    assert all(variables == list(range(batch.num_variables)) for variables, _ in hints)
    np.testing.assert_array_equal(np.array([values for _, values in hints]), first.y)
