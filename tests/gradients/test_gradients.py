"""The backward math: Proposition P:basis, agreement with the naive implementation, devices."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_backward import naive_backward

from ilplayer import Status
from ilplayer.gradients import (
    combopt_backward,
    decompose,
    project_onto_box,
    softmin,
    softmin_weights,
)

# Values drawn from a small set force ties and zeros; the float range covers the rest.
entries = st.one_of(
    st.sampled_from([0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0]),
    st.floats(-100, 100, allow_nan=False, width=64),
)
gradients = st.integers(1, 12).flatmap(
    lambda n: st.lists(st.lists(entries, min_size=n, max_size=n), min_size=1, max_size=4)
)


@settings(max_examples=300, deadline=None)
@given(gradients, st.sampled_from(["delta", "canonical"]))
def test_decomposition_reconstructs_dy_with_nonnegative_lambdas(rows, basis):
    dy = torch.tensor(rows, dtype=torch.float64)
    delta, lam = decompose(dy, basis)
    assert (lam >= 0).all()
    assert set(delta.unique().tolist()) <= {-1.0, 0.0, 1.0}
    torch.testing.assert_close((lam[..., None] * delta).sum(dim=1), dy, rtol=0, atol=1e-12)


def test_delta_basis_is_the_signed_indicator_of_the_k_dominant_directions():
    dy = torch.tensor([[0.1, -3.0, 0.0, 2.0]])
    delta, lam = decompose(dy, "delta")
    expected = torch.tensor(
        [[[0, -1, 0, 0], [0, -1, 0, 1], [1, -1, 0, 1], [1, -1, 0, 1]]], dtype=dy.dtype
    )
    torch.testing.assert_close(delta, expected)
    torch.testing.assert_close(lam, torch.tensor([[1.0, 1.9, 0.1, 0.0]]))


def test_box_projection_follows_supplementary_b1():
    y = torch.tensor([[0.0, 1.0, 1.0, -5.0]])
    dy = torch.tensor([[0.3, -0.3, 4.0, -7.0]])
    lb, ub = torch.tensor([0.0, 0, 0, -5]), torch.tensor([1.0, 1, 1, 5])
    # y - dy = [-0.3, 1.3, -3, 2] -> clipped [0, 1, 0, 2] -> dy_proj = y - clipped
    torch.testing.assert_close(
        project_onto_box(y, dy, lb, ub), torch.tensor([[0.0, 0.0, 1.0, -7.0]])
    )


def test_softmin_matches_supplementary_a1_and_its_weights_are_its_gradient():
    x = torch.tensor([[0.3, 1.2, 0.1]], dtype=torch.float64, requires_grad=True)
    tau = 0.5
    value = softmin(x, tau)
    torch.testing.assert_close(value, -tau * torch.log(torch.exp(-x / tau).sum(-1)))
    (grad,) = torch.autograd.grad(value.sum(), x)
    torch.testing.assert_close(softmin_weights(x.detach(), tau), grad)
    torch.testing.assert_close(softmin(x, None), torch.tensor([0.1], dtype=torch.float64))


def random_backward_case(seed: int, B=6, m=3, n=5, lo=-1, hi=2, shared=False, dtype=torch.float64):
    """Feasible y for rows that have a solution; every status; some zero gradient entries."""
    g = torch.Generator().manual_seed(seed)
    lb = torch.full((n,), float(lo), dtype=dtype)
    ub = torch.full((n,), float(hi), dtype=dtype)
    y = torch.randint(lo, hi + 1, (B, n), generator=g).to(dtype)
    status = torch.randint(0, 5, (B,), generator=g, dtype=torch.int8)
    if shared:
        A = torch.randn(m, n, generator=g, dtype=dtype)
        b = (y @ A.T).amax(0) + torch.rand(m, generator=g, dtype=dtype) + 0.01
    else:
        A = torch.randn(B, m, n, generator=g, dtype=dtype)
        b = (A @ y[..., None]).squeeze(-1) + 1.5 * torch.rand(B, m, generator=g, dtype=dtype) + 0.01
    dy = torch.randn(B, n, generator=g, dtype=dtype) * (torch.rand(B, n, generator=g) > 0.2)
    return dy, A, b, y, status, lb, ub


@pytest.mark.parametrize("basis", ["delta", "canonical"])
@pytest.mark.parametrize("tau", [None, 0.5, 2.0])
@pytest.mark.parametrize("project_to_box", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_vectorised_backward_agrees_with_naive_loops(basis, tau, project_to_box, seed):
    dy, A, b, y, status, lb, ub = random_backward_case(seed)
    options = dict(tau=tau, basis=basis, project_to_box=project_to_box)
    fast = combopt_backward(dy, A, b, y, status, lb, ub, **options)
    slow = naive_backward(dy, A, b, y, status, lb, ub, **options)
    for got, expected in zip(fast, slow):
        torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-10)


def test_shared_constraints_get_the_batch_sum_of_per_instance_gradients():
    dy, A, b, y, status, lb, ub = random_backward_case(7, B=5, shared=True)
    dc, dA, db = combopt_backward(dy, A, b, y, status, lb, ub)
    B = dy.shape[0]
    ndc, ndA, ndb = naive_backward(
        dy,
        A.expand(B, -1, -1),
        b.expand(B, -1),
        y,
        status,
        lb,
        ub,
        tau=0.5,
        basis="delta",
        project_to_box=True,
    )
    assert dA.shape == A.shape and db.shape == b.shape
    torch.testing.assert_close(dc, ndc)
    torch.testing.assert_close(dA, ndA.sum(0))
    torch.testing.assert_close(db, ndb.sum(0))


def test_rows_without_a_solution_get_zero_gradients_and_infeasible_rows_push_outwards():
    dy, A, b, y, status, lb, ub = random_backward_case(3)
    status[:] = Status.ERROR
    status[1] = Status.TIME_LIMIT_NO_SOLUTION
    status[2] = Status.INFEASIBLE
    b[2] = -10.0  # every target violates every constraint of row 2
    dc, dA, db = combopt_backward(dy, A, b, y, status, lb, ub)
    others = [0, 1, 3, 4, 5]
    assert (dc[others] == 0).all() and (dA[others] == 0).all() and (db[others] == 0).all()
    assert (dc[2] == 0).all()  # no feasible target: no cost update
    assert (db[2] < 0).all()  # descent raises every b_j: the region grows outwards


def test_hard_minimum_moves_only_the_closest_constraint():
    # One instance, feasible target: y = 0, y' = e_1; constraints at distances 1 and 3 from y.
    A = torch.tensor([[[0.0, 1.0], [0.0, -1.0]]], dtype=torch.float64)
    b = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    y = torch.zeros(1, 2, dtype=torch.float64)
    dy = torch.tensor([[-1.0, 0.0]], dtype=torch.float64)
    status = torch.tensor([Status.OPTIMAL], dtype=torch.int8)
    lb, ub = torch.full((2,), -5.0, dtype=torch.float64), torch.full((2,), 5.0, dtype=torch.float64)
    dc, dA, db = combopt_backward(dy, A, b, y, status, lb, ub, tau=None)
    torch.testing.assert_close(db, torch.tensor([[1.0, 0.0]], dtype=torch.float64))
    torch.testing.assert_close(dc, -dy)  # dP/dc = y' - y = -Delta_1, and lambda_1 = 1
    _, _, db_soft = combopt_backward(dy, A, b, y, status, lb, ub, tau=0.5)
    assert db_soft[0, 1] > 0 and db_soft[0, 0] > db_soft[0, 1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shared", [True, False])
def test_backward_runs_on_the_meta_device_and_keeps_the_dtype(dtype, shared):
    """The meta device has no data: any host copy or sync (.item(), .cpu(), .numpy(), boolean
    indexing) would raise, so this proves the backward is pure torch on the inputs' device."""
    B, m, n = 8, 4, 16
    meta = torch.device("meta")
    A = torch.empty((m, n) if shared else (B, m, n), dtype=dtype, device=meta)
    b = torch.empty((m,) if shared else (B, m), dtype=dtype, device=meta)
    y, dy = torch.empty(B, n, dtype=dtype, device=meta), torch.empty(B, n, dtype=dtype, device=meta)
    status = torch.empty(B, dtype=torch.int8, device=meta)
    lb, ub = torch.empty(n, dtype=dtype, device=meta), torch.empty(n, dtype=dtype, device=meta)
    for basis in ("delta", "canonical"):
        for tau in (None, 0.5):
            dc, dA, db = combopt_backward(dy, A, b, y, status, lb, ub, tau=tau, basis=basis)
            assert dc.device == meta and dA.device == meta and db.device == meta
            assert (dc.shape, dA.shape, db.shape) == (dy.shape, A.shape, b.shape)
            assert dc.dtype == dA.dtype == db.dtype == dtype
