"""The built-in exact backend against an independent itertools enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import ILPBatch, Status


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
    y, status = ilplayer.solve(torch.tensor(c), torch.tensor(A), torch.tensor(b), lb=list(lb),
                               ub=list(ub))
    expected = enumerate_reference(c, A, b, lb, ub)
    assert any(v is None for v in expected) or shared  # the per-instance draw covers infeasible rows
    for i, value in enumerate(expected):
        if value is None:
            assert status[i] == Status.INFEASIBLE
            torch.testing.assert_close(y[i], torch.floor((torch.tensor(lb) + torch.tensor(ub)) / 2.0)
                                       .double())
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
    batch = ILPBatch(c=rng.normal(size=(6, 4)), A=rng.normal(size=(2, 4)), b=rng.normal(size=2),
                     lb=np.full(4, -1), ub=np.full(4, 1))
    host = solver.solve(batch)
    y, status = ilplayer.solve(torch.tensor(batch.c), torch.tensor(batch.A), torch.tensor(batch.b),
                               lb=-1, ub=1, solver=solver)
    assert host.status.tolist() == status.tolist()
    solved = host.status == Status.OPTIMAL
    np.testing.assert_array_equal(host.y[solved], y.numpy()[solved])


def test_large_box_is_refused_before_solving_with_a_clear_error():
    c, A, b = torch.zeros(1, 16), torch.ones(1, 16), torch.ones(1)
    with pytest.raises(ValueError, match=r"lb/ub: the box holds 4\.59e\+16 integer points "
                                         r"\(16 variables with 11 values each\).*max_points=1048576"):
        ilplayer.solve(c, A, b, lb=-5, ub=5)
    y, status = ilplayer.solve(c[:, :4], A[:, :4], b, lb=-5, ub=5,
                               solver_options={"max_points": 11**4})
    assert status.item() == Status.OPTIMAL


def test_chunked_enumeration_matches_a_single_chunk(monkeypatch):
    from ilplayer.solvers import bruteforce

    rng = np.random.default_rng(2)
    c, A, b = (torch.tensor(rng.normal(size=s)) for s in ((5, 10), (5, 3, 10), (5, 3)))
    expected = ilplayer.solve(c, A, b, lb=0, ub=1)
    monkeypatch.setattr(bruteforce, "_CHUNK_ELEMENTS", 1)
    monkeypatch.setattr(bruteforce, "_CACHE_ELEMENTS", 1)
    got = ilplayer.solve(c, A, b, lb=0, ub=1)
    torch.testing.assert_close(got[0], expected[0])
    torch.testing.assert_close(got[1], expected[1])
