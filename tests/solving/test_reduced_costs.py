"""The search around a pooled start (reduced-cost fixing, then enumeration) against exhaustive
enumeration: its bound holds for *any* multipliers lam >= 0 and mu, so random ones must give
the exact optimum too, only with more candidates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ilplayer
from ilplayer import Status
from ilplayer.plugin_api import ILPBatch, PersistentModelSolver
from ilplayer.solvers.reduced_costs import reduced_box, rows_all, search_around, search_many
from ilplayer.solvers.rounding import rounded_point, rounded_points
from tests.host_solvers import EnumerationSolver


def _instance(rng):
    n = int(rng.integers(2, 6))
    lb = rng.integers(-2, 1, n)
    ub = lb + rng.integers(0, 4, n)
    points = np.array(
        list(itertools.product(*[range(lo, hi + 1) for lo, hi in zip(lb, ub)])), dtype=float
    )
    m, m_eq = int(rng.integers(0, 4)), int(rng.integers(0, 2))
    A = rng.integers(-3, 4, (m, n)).astype(float) * rng.choice([1.0, 0.37], (m, 1))
    anchor = points[rng.integers(len(points))]  # feasible by construction
    b = A @ anchor + rng.uniform(0, 3, m) * (rng.random(m) < 0.7)
    A_eq = rng.integers(-2, 3, (m_eq, n)).astype(float)
    b_eq = A_eq @ anchor
    feasible = points[
        np.all(points @ A.T <= b + 1e-6, axis=1)
        & np.all(np.abs(points @ A_eq.T - b_eq) <= 1e-6, axis=1)
    ]
    return n, lb, ub, A, b, A_eq, b_eq, feasible


@pytest.mark.parametrize("seed", range(3))
def test_the_reduced_box_holds_every_feasible_point_as_good_as_the_start(seed):
    # reduced-cost fixing is valid for any multipliers >= 0: the start and every feasible
    # point no worse than it lie in the box, whatever the rows and the costs' signs
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n, lb, ub, A, b, _, _, feasible = _instance(rng)
        feasible = feasible[np.all(feasible @ A.T <= b + 1e-6, axis=1)]
        c = rng.normal(size=n) * (rng.random(n) < 0.8)
        start = feasible[rng.integers(len(feasible))]
        lam = rng.exponential(1.0, len(A)) * (rng.random(len(A)) < 0.6)
        box = reduced_box(c, start, A, b, lb.astype(float), ub.astype(float), lam)
        assert box is not None
        lo, hi = box
        assert np.all((lb <= lo) & (lo <= hi) & (hi <= ub))
        as_good = feasible[feasible @ c <= c @ start + 1e-12]
        assert np.all((lo <= as_good) & (as_good <= hi)), (c, start, lam)


@pytest.mark.parametrize("seed", range(4))
def test_the_search_finds_the_enumerated_optimum_for_any_multipliers(seed):
    rng = np.random.default_rng(seed)
    answered = 0
    for _ in range(150):
        n, lb, ub, A, b, A_eq, b_eq, feasible = _instance(rng)
        c = rng.normal(size=n) * (rng.random(n) < 0.8)  # some zero costs: free directions
        start = feasible[rng.integers(len(feasible))]
        lam = rng.exponential(1.0, len(A)) * (rng.random(len(A)) < 0.6)
        mu = rng.normal(size=len(A_eq))
        y = search_around(c, start, A, b, lb, ub, lam, A_eq, b_eq, mu, max_points=10_000)
        assert y is not None  # at most 4**5 box points: never over the cap
        answered += 1
        assert np.all(A @ y <= b + 1e-6) and np.all(np.abs(A_eq @ y - b_eq) <= 1e-6)
        assert np.all((lb <= y) & (y <= ub))
        assert c @ y == pytest.approx((feasible @ c).min(), abs=1e-9)
    assert answered == 150


@pytest.mark.parametrize("seed", range(9))
def test_many_costs_searched_together_each_get_the_enumerated_optimum(seed):
    """search_many grows every row's candidates together, dropping those no completion makes
    feasible: rows with different movable variables, budgets (some zero) and multipliers must
    not leak into each other."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(60):
        n, lb, ub, A, b, A_eq, b_eq, feasible = _instance(rng)
        k = int(rng.integers(1, 7))
        c = rng.normal(size=(k, n)) * (rng.random((k, n)) < 0.8)
        starts = feasible[rng.integers(len(feasible), size=k)]
        starts[0] = feasible[np.argmin(feasible @ c[0])]  # a start nothing beats
        lam = rng.exponential(1.0, (k, len(A))) * (rng.random((k, len(A))) < 0.6)
        mu = rng.normal(size=(k, len(A_eq)))
        answers = search_many(c, starts, A, b, lb, ub, lam, A_eq, b_eq, mu, max_points=10_000)
        for row, y in enumerate(answers):
            assert y is not None
            assert np.all(A @ y <= b + 1e-6) and np.all(np.abs(A_eq @ y - b_eq) <= 1e-6)
            assert c[row] @ y == pytest.approx((feasible @ c[row]).min(), abs=1e-9)
            if not len(A_eq):  # the same answer as searching the row alone
                alone = search_around(
                    c[row], starts[row], A, b, lb, ub, lam[row], max_points=10_000
                )
                assert np.array_equal(alone, y)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2),
    st.integers(0, 20),
    st.integers(0, 17),
    st.floats(0.0, 1.0),
    st.integers(0, 2**32 - 1),
)
def test_rows_all_is_numpys_all_along_the_last_axis(depth, rows, width, density, seed):
    shape = (3,) * depth + (rows, width)
    mask = np.random.default_rng(seed).random(shape) < density
    assert np.array_equal(rows_all(mask), mask.all(axis=-1))
    assert np.array_equal(
        rows_all(mask[..., ::-1]), mask.all(axis=-1)
    )  # not contiguous: numpy's own


def test_a_row_over_the_cap_gives_up_alone():
    n = 12
    lb, ub = np.zeros(n), np.ones(n)
    A, b = np.ones((1, n)), np.array([float(n)])  # every point feasible
    c = np.array([-np.ones(n), -np.ones(n), np.r_[1.0, -np.ones(n - 1)]])
    starts = np.array([np.zeros(n), np.ones(n), np.zeros(n)])  # the worst, the best, a poor one
    lam = np.zeros((3, 1))
    answers = search_many(c, starts, A, b, lb, ub, lam, max_points=100)
    assert answers[0] is None  # all 4096 points are within its budget
    assert np.array_equal(answers[1], np.ones(n))
    assert answers[2] is None
    one = search_many(c[1:2], starts[1:2], A, b, lb, ub, lam[1:2], max_points=100)
    assert np.array_equal(one[0], answers[1])
    # rows within their cap but over the total: the largest gives up, the others are answered
    c2 = np.array(
        [np.r_[-np.ones(3), 10 * np.ones(n - 3)], np.r_[-np.ones(6), 10 * np.ones(n - 6)]]
    )
    starts2 = np.zeros((2, n))  # 2^3 and 2^6 points within the budgets
    both = search_many(c2, starts2, A, b, lb, ub, np.zeros((2, 1)), max_points=100)
    assert [y.sum() for y in both] == [3, 6]
    squeezed = search_many(
        c2, starts2, A, b, lb, ub, np.zeros((2, 1)), max_points=100, max_total=40
    )
    assert squeezed[0].sum() == 3 and squeezed[1] is None
    cheap = np.array([[1.0] * 10 + [-1.0, -1.0]])  # a budget of 1 from the optimum's neighbour
    near = np.r_[np.zeros(10), 1.0, 0.0][None]
    (y,) = search_many(cheap, near, A, b, lb, ub, np.zeros((1, 1)), max_points=100)
    assert np.array_equal(y, np.r_[np.zeros(10), 1.0, 1.0])


def test_the_search_gives_up_beyond_its_cap_and_keeps_a_start_nothing_beats():
    n = 12
    lb, ub = np.zeros(n), np.ones(n)
    A, b = np.ones((1, n)), np.array([float(n)])  # every point feasible
    c = -np.ones(n)
    start = np.zeros(n)  # the worst point: the budget reaches all 4096 points
    assert search_around(c, start, A, b, lb, ub, np.zeros(1), max_points=100) is None
    best = np.ones(n)
    assert search_around(c, best, A, b, lb, ub, np.zeros(1), max_points=100) is best


@pytest.mark.parametrize("seed", range(3))
def test_rounded_point_is_the_cheapest_feasible_rounding_of_any_x(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        n, lb, ub, A, b, A_eq, b_eq, feasible = _instance(rng)
        c = rng.normal(size=n)
        x = rng.uniform(lb, ub)
        x = np.where(rng.random(n) < 0.3, np.round(x), x)  # some integral entries
        roundings = np.array(
            list(itertools.product(*[sorted({np.floor(v), np.ceil(v)}) for v in x]))
        )
        ok = np.all(roundings @ A.T <= b + 1e-6, axis=1) & np.all(
            np.abs(roundings @ A_eq.T - b_eq) <= 1e-6, axis=1
        )
        y = rounded_point(x, c, A, b, lb, ub, A_eq, b_eq)
        if not ok.any():
            assert y is None
            continue
        assert y is not None and np.all(np.abs(y - x) < 1)  # a rounding of x
        assert np.all(A @ y <= b + 1e-6) and np.all(np.abs(A_eq @ y - b_eq) <= 1e-6)
        assert c @ y == pytest.approx((roundings[ok] @ c).min(), abs=1e-9)


def test_rounded_points_match_the_rounding_of_each_row_alone():
    rng = np.random.default_rng(7)
    for _ in range(80):
        n, lb, ub, A, b, A_eq, b_eq, feasible = _instance(rng)
        k = int(rng.integers(1, 6))
        x = rng.uniform(lb, ub, (k, n))
        x = np.where(rng.random((k, n)) < 0.4, np.round(x), x)  # rows with fewer fractional entries
        c = rng.normal(size=(k, n))
        together = rounded_points(x, c, A, b, lb, ub, A_eq, b_eq)
        for row in range(k):
            roundings = np.array(
                list(itertools.product(*[sorted({np.floor(v), np.ceil(v)}) for v in x[row]]))
            )
            ok = np.all(roundings @ A.T <= b + 1e-6, axis=1) & np.all(
                np.abs(roundings @ A_eq.T - b_eq) <= 1e-6, axis=1
            )
            if not ok.any():
                assert together[row] is None
            else:
                assert c[row] @ together[row] == pytest.approx(
                    (roundings[ok] @ c[row]).min(), abs=1e-9
                )


@pytest.mark.parametrize("backend", ["highs", "gurobi"])
def test_fresh_costs_are_answered_from_a_rounded_lp_optimum_without_the_mip(backend):
    if backend not in ilplayer.available_solvers():
        pytest.skip(f"backend {backend!r} is not installed")
    from ilplayer_experiments.bench import family_batch

    batch = family_batch("dense m=1", 48, seed=3, n=5)  # 11^5 box points: enumerable
    solver = ilplayer.get_solver(backend)
    calls = []
    solve_instance = solver.solve_instance
    solver.solve_instance = lambda model, c, start=None: (
        calls.append(1) or solve_instance(model, c, start)
    )
    result = solver.solve(batch)  # never seen before: no pooled point yet
    points = EnumerationSolver.feasible_points(batch)
    assert np.allclose(result.objective, (batch.c @ points.T).min(axis=1), atol=1e-9)
    assert len(calls) <= 4  # one row: a rounding of the LP optimum is feasible and close


class SearchingSolver(PersistentModelSolver):
    """Enumeration behind the persistent-model contract; offers zero multipliers (valid ones,
    if weak) and counts the instances that reach its 'MIP'."""

    name = "searching"

    def __init__(self, warm_start=None):
        super().__init__(warm_start=warm_start)
        self.mip_calls = 0

    def build_model(self, batch):
        return EnumerationSolver.feasible_points(batch), len(batch.A), len(batch.A_eq)

    accepts_start = True

    def solve_instance(self, model, c, start=None):
        self.mip_calls += 1
        points = model[0]
        return (
            (Status.OPTIMAL, points[np.argmin(points @ c)])
            if len(points)
            else (Status.INFEASIBLE, None)
        )

    def relaxation_multipliers(self, model, c):
        return [(np.zeros(model[1]), np.zeros(model[2]))] * len(c)


def test_revisited_instances_are_answered_by_the_search_without_the_mip():
    g = torch.Generator().manual_seed(0)
    c = torch.randn(6, 5, generator=g, dtype=torch.float64)
    A = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0], [2.0, -1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    b = torch.tensor([2.0, 1.0], dtype=torch.float64)
    solver = SearchingSolver()
    first, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
    reached = solver.mip_calls
    again, _ = ilplayer.solve(c * 1.01, A, b, lb=0, ub=1, solver=solver)
    assert (status == Status.OPTIMAL).all()
    assert solver.mip_calls == reached  # 32 box points: the search settles every revisit
    oracle, _ = ilplayer.solve(c * 1.01, A, b, lb=0, ub=1, solver=SearchingSolver(warm_start=False))
    assert torch.allclose((c * again).sum(1), (c * oracle).sum(1))


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip", "cpsat"])
@pytest.mark.parametrize("family", ["knapsack", "equalities"])
def test_backend_multipliers_and_lp_optimum_certify_each_other(backend, family):
    """lam >= 0 with a Lagrangian bound equal to c.x at an LP-feasible x: strong duality, so
    both are optimal for the LP relaxation, whatever the backend's sign conventions."""
    if backend not in ilplayer.available_solvers():
        pytest.skip(f"backend {backend!r} is not installed")
    from ilplayer_experiments.bench import family_batch

    batch = family_batch("knapsack", 21, seed=2, n=20)  # one block of 16 and 5 more
    if family == "equalities":  # one equality row: half of the items, exactly
        batch = ILPBatch(
            c=batch.c,
            A=batch.A,
            b=batch.b,
            lb=batch.lb,
            ub=batch.ub,
            A_eq=np.ones((1, 20)),
            b_eq=np.array([7.0]),
        )
    solver = ilplayer.get_solver(backend)
    model = solver.model_for(batch)
    found = solver.relaxation_multipliers(model, batch.c)
    found += solver.relaxation_multipliers(model, batch.c[:2])  # fewer than a block: one by one
    for c, (lam, mu, x) in zip(np.vstack([batch.c, batch.c[:2]]), found):
        assert (lam >= -1e-9).all() and len(mu) == len(batch.A_eq)
        assert (batch.A @ x <= batch.b + 1e-7).all() and np.allclose(
            batch.A_eq @ x, batch.b_eq, atol=1e-7
        )
        assert ((batch.lb - 1e-9 <= x) & (x <= batch.ub + 1e-9)).all()
        d = c + batch.A.T @ lam + batch.A_eq.T @ mu
        bound = d @ np.where(d > 0, batch.lb, batch.ub) - lam @ batch.b - mu @ batch.b_eq
        assert bound == pytest.approx(c @ x, abs=1e-7)


def test_a_closed_search_gate_whose_samples_answer_searches_the_rest_of_their_chunk():
    """After an epoch of fresh costs closed the gate, the first revisits reopen it within their
    own chunk: the rows after the samples need not wait for the next batch."""
    from ilplayer.solvers.shortcuts import SEARCH_CHUNK

    g = torch.Generator().manual_seed(1)
    c = torch.randn(SEARCH_CHUNK, 5, generator=g, dtype=torch.float64)
    A = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0], [2.0, -1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    b = torch.tensor([2.0, 1.0], dtype=torch.float64)
    solver = SearchingSolver()
    ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)  # fills the pool
    gate = next(iter(solver._search_gates.values()))
    gate.rate, gate.tries = 0.0, 1000  # as after an epoch where the search never answered
    gate.mip_seconds = {False: 1.0, True: 1.0}
    assert not gate.is_open()
    before = solver.mip_calls
    again, status = ilplayer.solve(c * 1.01, A, b, lb=0, ub=1, solver=solver)
    assert gate.is_open()
    assert (
        solver.mip_calls - before <= SEARCH_CHUNK // 8
    )  # the samples and the control MIPs at most
    oracle, _ = ilplayer.solve(c * 1.01, A, b, lb=0, ub=1, solver=SearchingSolver(warm_start=False))
    assert (status == Status.OPTIMAL).all()
    assert torch.allclose((c * again).sum(1), (c * oracle).sum(1))
