import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.testing import make_instances
from ilplayer.testing.conformance import SolverConformance, assert_agrees_with_bruteforce


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
    y, status = ilplayer.solve(
        instances.c, instances.A, instances.b, instances.lb, instances.ub, solver=solver
    )
    y_ref, status_ref = ilplayer.solve(
        instances.c, instances.A, instances.b, instances.lb, instances.ub
    )
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
    assert (
        by_name._solver.parameters.search_branching == by_number._solver.parameters.search_branching
    )
    assert by_name._solver.parameters.search_branching.name == "LP_SEARCH"


def test_repeated_parameters_take_a_list_and_integers_no_bool_or_fraction(cpsat):
    # Repeated fields used to end in an AttributeError from the protobuf wrapper.
    solver = cpsat(
        "cpsat", params={"restart_algorithms": ["LUBY_RESTART", 4], "subsolvers": ["default_lp"]}
    )
    assert list(solver._solver.parameters.restart_algorithms) == [1, 4]
    assert list(solver._solver.parameters.subsolvers) == ["default_lp"]
    with pytest.raises(ValueError, match=r"params: CP-SAT rejected subsolvers='default_lp'"):
        cpsat("cpsat", params={"subsolvers": "default_lp"})
    with pytest.raises(ValueError, match=r"params: CP-SAT rejected num_workers=True"):
        cpsat("cpsat", params={"num_workers": True})
    with pytest.raises(ValueError, match=r"params: CP-SAT rejected num_workers=1.5"):
        cpsat("cpsat", params={"num_workers": 1.5})


def test_none_leaves_a_parameter_at_cpsat_own_default(cpsat):
    assert cpsat("cpsat")._solver.parameters.cut_level == 0  # ilplayer's default
    assert cpsat("cpsat", params={"cut_level": None})._solver.parameters.cut_level == 1  # CP-SAT's


def test_the_start_reaches_the_model_as_a_hint_and_warm_answers_match_cold_ones(cpsat):
    from ilplayer_experiments.bench import family_batch

    batch = family_batch("dense m=4", 12, seed=2)
    warm = cpsat("cpsat")
    warm.relaxation_multipliers = lambda model, c: [None] * len(c)  # every instance to CP-SAT
    cold = cpsat("cpsat", warm_start=False)
    first = warm.solve(batch)
    hints = []
    solve_instance = warm.solve_instance

    def record(model, c, start=None):  # the hint CP-SAT saw when it solved this instance
        answer = solve_instance(model, c, start)
        hint = model.proto.solution_hint
        hints.append((list(hint.vars), list(hint.values)))
        return answer

    warm.solve_instance = record
    again = warm.solve(batch)
    reference = cold.solve(batch)
    assert (again.status == Status.OPTIMAL).all() and (reference.status == Status.OPTIMAL).all()
    np.testing.assert_allclose(again.objective, reference.objective, atol=1e-5)
    np.testing.assert_allclose(first.objective, reference.objective, atol=1e-5)
    # Revisited with the same costs, each instance starts from its own previous answer.
    assert all(variables == list(range(batch.num_variables)) for variables, _ in hints)
    np.testing.assert_array_equal(np.array([values for _, values in hints]), first.y)


@pytest.mark.parametrize("count", [1, 3, 8, 13, 40])  # one, part of, one and several blocks
def test_block_lp_multipliers_are_the_lp_optima_and_its_optimal_duals(cpsat, count):
    scipy_optimize = pytest.importorskip("scipy.optimize")
    from ilplayer.core.records import ILPBatch

    rng = np.random.default_rng(count)
    n = 7
    A, A_eq = rng.normal(size=(3, n)), rng.uniform(0.5, 1.0, (1, n))
    A[1] = 0.0  # an empty row: no entries in its block rows of the sparse matrix
    batch = ILPBatch(
        c=rng.normal(size=(count, n)),
        A=A,
        b=rng.uniform(0.5, 2.0, 3),
        lb=np.full(n, -2.0),
        ub=np.full(n, 3.0),
        A_eq=A_eq,
        b_eq=np.array([1.5]),
    )
    solver = cpsat("cpsat")
    found = solver.relaxation_multipliers(solver.build_model(batch), batch.c)
    assert len(found) == count
    for c, (lam, mu, x) in zip(batch.c, found):
        lp = scipy_optimize.linprog(
            c,
            A_ub=batch.A,
            b_ub=batch.b,
            A_eq=batch.A_eq,
            b_eq=batch.b_eq,
            bounds=list(zip(batch.lb, batch.ub)),
            method="highs",
        )
        assert c @ x == pytest.approx(lp.fun, abs=1e-7)
        assert (
            (batch.A @ x <= batch.b + 1e-7).all()
            and (batch.lb - 1e-9 <= x).all()
            and (x <= batch.ub + 1e-9).all()
        )
        assert (lam >= -1e-9).all()
        # Optimal duals: the Lagrangian over the box alone reaches the LP optimum (the bound the
        # core's search around a start relies on).
        reduced = c + lam @ batch.A + mu @ batch.A_eq
        lagrangian = (
            np.where(reduced >= 0, batch.lb, batch.ub) @ reduced - lam @ batch.b - mu @ batch.b_eq
        )
        assert lagrangian == pytest.approx(lp.fun, abs=1e-7)
