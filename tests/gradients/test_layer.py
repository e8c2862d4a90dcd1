"""ILPLayer and solve(): dtypes, devices, shapes, statuses and the autograd wiring."""

from __future__ import annotations

import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.gradients import combopt_backward


def problem(dtype=torch.float32, B=6, m=2, n=6, shared=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(B, n, generator=g).to(dtype)
    A = torch.randn(*((m, n) if shared else (B, m, n)), generator=g).to(dtype)
    b = (torch.rand(*((m,) if shared else (B, m)), generator=g) + 0.5).to(dtype)
    return c, A, b


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("shared", [True, False])
def test_layer_keeps_dtype_and_shapes_in_both_passes(dtype, shared):
    c, A, b = (t.requires_grad_() for t in problem(dtype, shared=shared))
    layer = ilplayer.ILPLayer(lb=0, ub=1)
    y = layer(c, A, b)
    assert y.dtype == dtype and y.shape == c.shape and y.device == c.device
    assert layer.last_status.dtype == torch.int8 and layer.last_status.shape == (6,)
    (y * torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(dtype)).sum().backward()
    for tensor in (c, A, b):
        assert tensor.grad is not None and tensor.grad.dtype == dtype
        assert tensor.grad.shape == tensor.shape


def test_layer_backward_is_the_combopt_backward_of_its_forward():
    c, A, b = problem(torch.float64, shared=False)
    A.requires_grad_()
    b.requires_grad_()
    c.requires_grad_()
    layer = ilplayer.ILPLayer(lb=-1, ub=2, tau=1.0, basis="canonical", project_to_box=False)
    y = layer(c, A, b)
    dy = torch.randn_like(y)
    y.backward(dy)
    lb, ub = torch.full((6,), -1.0, dtype=torch.float64), torch.full((6,), 2.0, dtype=torch.float64)
    dc, dA, db = combopt_backward(
        dy,
        A.detach(),
        b.detach(),
        y.detach(),
        layer.last_status,
        lb,
        ub,
        tau=1.0,
        basis="canonical",
        project_to_box=False,
    )
    torch.testing.assert_close(c.grad, dc)
    torch.testing.assert_close(A.grad, dA)
    torch.testing.assert_close(b.grad, db)


def test_only_requested_gradients_are_returned():
    c, A, b = problem(torch.float64)
    c.requires_grad_()
    y = ilplayer.ILPLayer()(c, A, b)
    (y.sum()).backward()
    assert c.grad is not None and A.grad is None and b.grad is None


def test_infeasible_rows_get_a_status_and_the_placeholder_without_failing_the_batch():
    c = torch.randn(3, 4, dtype=torch.float64)
    A = torch.ones(3, 1, 4, dtype=torch.float64)
    b = torch.tensor(
        [[2.0], [-1.0], [0.0]], dtype=torch.float64
    )  # row 1: sum(y) <= -1 on [-1, 3]^4
    b[1] = -5.0
    layer = ilplayer.ILPLayer(lb=-1, ub=3)
    A.requires_grad_()
    b.requires_grad_()
    y = layer(c, A, b)
    assert Status.names(layer.last_status) == ["optimal", "infeasible", "optimal"]
    assert y[1].tolist() == [1.0, 1.0, 1.0, 1.0]  # floor((lb + ub) / 2)
    ((y - 3.0) ** 2).sum().backward()
    assert b.grad[1].item() < 0  # descent raises b: the empty region grows towards the targets


def test_solve_returns_detached_results_and_accepts_a_solver_instance():
    c, A, b = problem(torch.float64)
    c.requires_grad_()
    solver = ilplayer.get_solver("bruteforce")
    y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
    assert not y.requires_grad and (status == Status.OPTIMAL).all()
    with pytest.raises(ValueError, match="solver_options only apply when solver is given by name"):
        ilplayer.solve(c, A, b, solver=solver, solver_options={"max_points": 10})


def test_status_helpers():
    codes = torch.tensor([0, 1, 2, 3, 4], dtype=torch.int8)
    assert Status.names(codes) == [
        "optimal",
        "infeasible",
        "time_limit",
        "time_limit_no_solution",
        "error",
    ]
    assert [Status(i).has_solution for i in range(5)] == [True, False, True, False, False]
    assert ((codes == Status.INFEASIBLE).nonzero().flatten().tolist()) == [1]


def test_layer_repr_names_its_settings():
    text = repr(ilplayer.ILPLayer(lb=0, ub=1, tau=None, basis="canonical"))
    assert "solver='bruteforce'" in text and "tau=None" in text and "basis='canonical'" in text
