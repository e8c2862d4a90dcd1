"""The built-in exact backend against an independent itertools enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.plugin_api import ILPBatch


def enumerate_reference(c, A, b, lb, ub):
    """Plain Python optimum value per instance (None when infeasible)."""
    values = []
    for i in range(len(c)):
        Ai = A[i] if A.ndim == 3 else A
        bi = b[i] if b.ndim == 2 else b
        best = None
        for point in itertools.product(*[range(l, u + 1) for l, u in zip(lb, ub)]):
            y = np.array(point, dtype=float)
            if (Ai @ y - bi <= 1e-6).all():
                value = float(c[i] @ y)
                best = value if best is None else min(best, value)
        values.append(best)
    return values


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("bounds", [((0,) * 5, (1,) * 5), ((-2, -1, 0, -3, 1), (1, 2, 2, 0, 2))])
def test_bruteforce_finds_the_optimum_and_reports_infeasible_instances(shared, bounds):
    rng = np.random.default_rng(0)
    lb, ub = bounds
    B, m, n = 12, 3, 5
    c = rng.uniform(-1, 1, (B, n))
    A = rng.uniform(-5, 5, (m, n) if shared else (B, m, n))
    b = rng.uniform(-4, 6, (m,) if shared else (B, m))
    y, status = ilplayer.solve(
        torch.tensor(c), torch.tensor(A), torch.tensor(b), lb=list(lb), ub=list(ub)
    )
    expected = enumerate_reference(c, A, b, lb, ub)
    assert (
        any(v is None for v in expected) or shared
    )  # the per-instance draw covers infeasible rows
    for i, value in enumerate(expected):
        if value is None:
            assert status[i] == Status.INFEASIBLE
            torch.testing.assert_close(
                y[i], torch.floor((torch.tensor(lb) + torch.tensor(ub)) / 2.0).double()
            )
        else:
            assert status[i] == Status.OPTIMAL
            assert float(c[i] @ y[i].numpy()) == pytest.approx(value, abs=1e-9)
            Ai = A if shared else A[i]
            bi = b if shared else b[i]
            assert (Ai @ y[i].numpy() <= bi + 1e-6).all()


def test_single_point_feasible_set_is_found():
    # y1 + y2 <= 1, -y1 - y2 <= -1, y1 - y2 <= -1  ->  only (0, 1)
    A = torch.tensor([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    b = torch.tensor([1.0, -1.0, -1.0])
    y, status = ilplayer.solve(torch.tensor([[5.0, 5.0], [-5.0, -5.0]]), A, b, lb=0, ub=1)
    assert Status.names(status) == ["optimal", "optimal"]
    assert y.tolist() == [[0.0, 1.0], [0.0, 1.0]]


def test_host_path_and_device_path_agree():
    solver = ilplayer.get_solver("bruteforce")
    rng = np.random.default_rng(1)
    batch = ILPBatch(
        c=rng.normal(size=(6, 4)),
        A=rng.normal(size=(2, 4)),
        b=rng.normal(size=2),
        lb=np.full(4, -1),
        ub=np.full(4, 1),
    )
    host = solver.solve(batch)
    y, status = ilplayer.solve(
        torch.tensor(batch.c),
        torch.tensor(batch.A),
        torch.tensor(batch.b),
        lb=-1,
        ub=1,
        solver=solver,
    )
    assert host.status.tolist() == status.tolist()
    solved = host.status == Status.OPTIMAL
    np.testing.assert_array_equal(host.y[solved], y.numpy()[solved])


def test_large_box_is_refused_before_solving_with_a_clear_error():
    c, A, b = torch.zeros(1, 16), torch.ones(1, 16), torch.ones(1)
    with pytest.raises(
        ValueError,
        match=r"lb/ub: the box holds 4\.59e\+16 integer points "
        r"\(16 variables with 11 values each\).*max_points=1048576.*"
        r"solver 'knapsack' for a program of one row",
    ):
        ilplayer.solve(c, A, b, lb=-5, ub=5)
    y, status = ilplayer.solve(
        c[:, :4], A[:, :4], b, lb=-5, ub=5, solver_options={"max_points": 11**4}
    )
    assert status.item() == Status.OPTIMAL


@pytest.mark.parametrize("shared", [True, False], ids=["shared rows", "rows per instance"])
@pytest.mark.parametrize("chunk", [1, None], ids=["one head point per block", "default blocks"])
@pytest.mark.parametrize(
    "sparse_ratio", [0, None, 10**9], ids=["price feasible only", "default", "price all"]
)
def test_enumeration_by_head_and_tail_tables_matches_a_plain_enumeration(
    monkeypatch, shared, chunk, sparse_ratio
):
    from ilplayer.solvers import bruteforce

    if chunk is not None:
        monkeypatch.setattr(bruteforce, "_CHUNK_ELEMENTS", chunk)
    if sparse_ratio is not None:
        monkeypatch.setattr(bruteforce, "SPARSE_RATIO", sparse_ratio)
    rng = np.random.default_rng(2)
    lb, ub = np.array([-1, 0, -2, 0, 1, -1, 0]), np.array([1, 1, 1, 2, 2, 0, 1])  # uneven sizes
    c = rng.normal(size=(6, 7))
    A = rng.normal(size=(3, 7) if shared else (6, 3, 7))
    b = rng.uniform(-0.5, 2.0, size=3 if shared else (6, 3))
    if not shared:
        b[0] = -100.0  # one instance without a feasible point
    y, status = ilplayer.solve(
        torch.tensor(c), torch.tensor(A), torch.tensor(b), lb=lb, ub=ub, solver="bruteforce"
    )
    points = np.array(
        list(itertools.product(*[range(lo, hi + 1) for lo, hi in zip(lb, ub)])), dtype=float
    )
    for i in range(len(c)):
        rows, bound = (A, b) if shared else (A[i], b[i])
        feasible = (points @ rows.T <= bound + 1e-6).all(axis=1)
        if not feasible.any():
            assert status[i] == ilplayer.Status.INFEASIBLE
            continue
        best = np.flatnonzero(feasible)[np.argmin(points[feasible] @ c[i])]
        assert status[i] == ilplayer.Status.OPTIMAL
        np.testing.assert_array_equal(y[i].numpy(), points[best])
    assert (status == ilplayer.Status.OPTIMAL).any()
    assert (
        shared or (status == ilplayer.Status.INFEASIBLE).any()
    )  # both kinds of answer were checked


@pytest.mark.parametrize("sparse_ratio", [0, 10**9], ids=["price feasible only", "price all"])
def test_a_tie_goes_to_the_first_point_in_box_order(monkeypatch, sparse_ratio):
    from ilplayer.solvers import bruteforce

    monkeypatch.setattr(bruteforce, "SPARSE_RATIO", sparse_ratio)
    monkeypatch.setattr(
        bruteforce, "_CHUNK_ELEMENTS", 1
    )  # tied points in later blocks must not win
    c = torch.zeros(2, 6, dtype=torch.float64)  # every feasible point costs 0
    A, b = (
        -torch.ones(1, 6, dtype=torch.float64),
        torch.tensor([-2.0], dtype=torch.float64),
    )  # sum(y) >= 2
    y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver="bruteforce")
    assert (status == Status.OPTIMAL).all()
    assert y.tolist() == [[0, 0, 0, 0, 1, 1]] * 2  # the last variable runs fastest
