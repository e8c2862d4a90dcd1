"""The closed-form LP relaxation of one-row programs (ilplayer.solvers.one_row): checked against
HiGHS' LP through scipy, and the layer's answers on one-row programs against exhaustive
enumeration on every backend that uses it."""

import numpy as np
import pytest
import torch
from scipy.optimize import linprog

import ilplayer
from ilplayer.core.records import ILPBatch
from ilplayer.solvers.one_row import by_two_lists, one_row_optima, solved_in_closed_form
from tests.host_solvers import require


def _random_lp(rng: np.random.Generator) -> tuple:
    n = int(rng.integers(1, 12))
    lb = rng.integers(-3, 2, n).astype(float)
    ub = lb + rng.integers(0, 4, n)
    if rng.random() < 0.5:  # integer data: ties between flips, costs of 0, rows of 0
        a = rng.integers(-4, 5, n).astype(float)
        c = rng.integers(-3, 4, (4, n)).astype(float)
    else:
        a, c = rng.normal(size=n), rng.normal(size=(4, n))
    return c, a, float(rng.normal() * 3), lb, ub


def test_one_row_optima_match_an_lp_solver_and_their_multipliers_close_the_gap():
    rng = np.random.default_rng(5)
    checked = infeasible = 0
    for _ in range(600):
        c, a, b, lb, ub = _random_lp(rng)
        x, lam, feasible = one_row_optima(c, a, b, lb, ub)
        for i in range(len(c)):
            lp = linprog(c[i], A_ub=a[None], b_ub=[b], bounds=list(zip(lb, ub)), method="highs")
            assert feasible[i] == (lp.status != 2)
            if lp.status == 2:
                infeasible += 1
                continue
            scale = 1 + abs(lp.fun)
            assert c[i] @ x[i] == pytest.approx(lp.fun, abs=1e-8 * scale)
            assert a @ x[i] <= b + 1e-9 and (lb <= x[i]).all() and (x[i] <= ub).all()
            # a vertex: at most one variable strictly inside its bounds
            assert ((x[i] > lb + 1e-12) & (x[i] < ub - 1e-12)).sum() <= 1
            # the multiplier's Lagrangian bound equals the optimum (strong duality)
            reduced = c[i] + lam[i] * a
            dual = np.minimum(reduced * lb, reduced * ub).sum() - lam[i] * b
            assert lam[i] >= 0 and dual == pytest.approx(lp.fun, abs=1e-8 * scale)
            checked += 1
    assert checked > 1500 and infeasible > 20  # both kinds were met


def test_closed_form_only_for_one_dense_row_in_a_finite_box():
    row = dict(c=np.ones((1, 2)), A=np.ones((1, 2)), b=np.ones(1))
    box = dict(lb=np.zeros(2), ub=np.ones(2))
    assert solved_in_closed_form(ILPBatch(**row, **box))
    assert not solved_in_closed_form(ILPBatch(**row, lb=np.zeros(2), ub=np.array([1, np.inf])))
    two = dict(c=np.ones((1, 2)), A=np.ones((2, 2)), b=np.ones(2))
    assert not solved_in_closed_form(ILPBatch(**two, **box))
    equality = dict(A_eq=np.ones((1, 2)), b_eq=np.ones(1))
    assert not solved_in_closed_form(ILPBatch(**row, **box, **equality))


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip", "cpsat"])
def test_one_row_programs_answer_as_exhaustive_enumeration(backend):
    require(backend)
    rng = np.random.default_rng(11)
    for step in range(16):  # a new row every step, as a learned (A, b) moves
        n = int(rng.integers(3, 9)) if step < 12 else 7
        integer_data = backend == "cpsat" or step % 2 == 0
        a = rng.integers(-5, 6, n).astype(float) if integer_data else rng.normal(size=n)
        # small boxes go to the two lists, [-3, 3]^7 through the relaxation and the search
        lb, ub = (0.0, 1.0) if step % 3 else (-2.0, 2.0)
        lb, ub = (-3.0, 3.0) if step >= 12 else (lb, ub)
        b = float(rng.integers(0, 6)) if integer_data else float(rng.normal() + 1)
        c = rng.integers(-4, 5, (16, n)).astype(float) if integer_data else rng.normal(size=(16, n))
        args = (torch.tensor(c), torch.tensor(a[None]), torch.tensor([b]))
        program = ilplayer.Program(lb=lb, ub=ub)
        y, status = ilplayer.Oracle(program, solver=backend, executor="serial").solve_batch(*args)
        y_ref, status_ref = ilplayer.Oracle(program, solver="bruteforce").solve_batch(*args)
        assert torch.equal(status, status_ref)
        solved = status == 0
        objective = (torch.tensor(c) * y).sum(1)[solved]
        expected = (torch.tensor(c) * y_ref).sum(1)[solved]
        assert torch.allclose(objective, expected, atol=1e-9)


def test_small_pure_integer_boxes_go_to_the_two_lists():
    def batch(n, lb, ub, integrality=None):
        return ILPBatch(
            c=np.ones((1, n)),
            A=np.ones((1, n)),
            b=np.ones(1),
            lb=np.full(n, lb),
            ub=np.full(n, ub),
            integrality=integrality,
        )

    assert by_two_lists(batch(16, 0.0, 1.0))  # halves of 256 points
    assert by_two_lists(batch(4, -5.0, 5.0))  # 11^2 a half
    assert not by_two_lists(batch(20, 0.0, 1.0))  # halves of 1,024: the relaxation is cheaper
    assert not by_two_lists(batch(3, 0.0, 1.5))  # a bound that is no integer
    assert not by_two_lists(batch(3, 0.0, 1.0, integrality=np.array([1, 0, 1])))


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip"])
def test_the_two_lists_answer_without_a_native_model(backend):
    require(backend)
    solver = ilplayer.get_solver(backend)
    rng = np.random.default_rng(3)
    row = lambda n: ILPBatch(
        c=rng.normal(size=(8, n)),
        A=rng.normal(size=(1, n)),
        b=np.ones(1),
        lb=np.zeros(n),
        ub=np.ones(n),
    )
    small = row(10)
    result = solver.solve(small)
    expected = ilplayer.get_solver("bruteforce").solve(small)
    assert np.array_equal(result.status, expected.status)
    assert np.allclose(result.objective, expected.objective)
    assert not solver._models  # no model built: the two lists answered
    large = row(20)
    solver.solve(large)
    assert solver._models  # the relaxation and the search keep a model per row
    solver.close()


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip"])
def test_the_two_lists_answer_in_place_of_the_mip_in_larger_boxes(backend, monkeypatch):
    # What the relaxation and the search leave open in a box of halves up to
    # MIP_TWO_LISTS_HALF_POINTS goes to the two lists, never to the backend's MIP; the answers
    # are the MIP's own (the fallback turned off), on near-tie knapsacks and on random rows.
    import ilplayer.solvers.one_row as one_row
    from ilplayer.testing.milp_cases import tie_knapsack_case

    require(backend)
    rng = np.random.default_rng(5)
    batches = []
    for seed in range(6):
        case = tie_knapsack_case(seed, items=int(rng.integers(20, 27)))
        n = case.A.shape[1]
        c = np.vstack([case.c, case.c + 1e-4 * rng.normal(size=(3, n))])
        batches.append(ILPBatch(c=c, A=case.A, b=case.b, lb=case.lb, ub=case.ub))
    for n in (6, 7, 8):  # [-5, 5]^n: halves of up to 11^4
        a = rng.normal(size=(1, n))
        box = dict(lb=np.full(n, -5.0), ub=np.full(n, 5.0))
        batches.append(ILPBatch(c=rng.normal(size=(6, n)), A=a, b=np.ones(1), **box))
    solver = ilplayer.get_solver(backend)
    asked = []
    native = type(solver).solve_instance
    monkeypatch.setattr(
        type(solver),
        "solve_instance",
        lambda self, *args: (asked.append(1), native(self, *args))[1],
    )
    results = [solver.solve(batch) for batch in batches]
    assert not asked  # every instance left open went to the two lists
    solver.close()
    monkeypatch.setattr(one_row, "MIP_TWO_LISTS_HALF_POINTS", 0)
    plain = ilplayer.get_solver(backend)
    for batch, result in zip(batches, results):
        expected = plain.solve(batch)
        assert np.array_equal(result.status, expected.status)
        assert np.allclose(result.objective, expected.objective, atol=1e-7)
    assert asked  # without the fallback the MIP answers some
    plain.close()


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip"])
def test_the_two_lists_search_the_reduced_box_where_the_search_gives_up(backend, monkeypatch):
    # [-5, 5]^16 has halves of 11^8 points, too many for the lists, but around a feasible start
    # the multiplier's reduced costs leave a small box that holds the optimum: the MIP is
    # asked for fewer instances, and every answer is the MIP's own (the fallback turned off).
    import ilplayer.solvers.one_row as one_row
    from ilplayer.testing.instances import family_batch

    require(backend)
    batches = [family_batch("dense m=1", 8, seed=1000 + s, n=16) for s in range(40)]

    def run() -> tuple[list[np.ndarray], int]:
        oracle = ilplayer.Oracle(
            ilplayer.Program(lb=-5.0, ub=5.0), solver=backend, executor="serial"
        )
        solver = oracle.backend.solver
        asked = []
        native = type(solver).solve_instance
        monkeypatch.setattr(
            type(solver),
            "solve_instance",
            lambda self, *args: (asked.append(1), native(self, *args))[1],
        )
        objectives = []
        for batch in batches:
            c = torch.tensor(batch.c)
            y, status = oracle(c, torch.tensor(batch.A), torch.tensor(batch.b))
            assert (status == 0).all()
            objectives.append((c * y).sum(1).numpy())
        oracle.close()
        monkeypatch.setattr(type(solver), "solve_instance", native)
        return objectives, len(asked)

    with_lists, asked_with = run()
    monkeypatch.setattr(one_row, "MIP_TWO_LISTS_HALF_POINTS", 0)
    without, asked_without = run()
    assert asked_with < asked_without
    np.testing.assert_allclose(np.concatenate(with_lists), np.concatenate(without), atol=1e-9)
