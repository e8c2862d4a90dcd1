"""Equality constraints A_eq y = b_eq, passed natively: solve, the layer, the losses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.losses import SPOPlus

# A 2x2 assignment: x_ij in {0, 1}, each row and each column sums to 1.
A_EQ = torch.tensor([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]], dtype=torch.float64)
B_EQ = torch.ones(4, dtype=torch.float64)
NO_ROWS = (torch.zeros(0, 4, dtype=torch.float64), torch.zeros(0, dtype=torch.float64))


def assignment(c: torch.Tensor, maximise: bool = False) -> torch.Tensor:
    options = torch.tensor([[1.0, 0, 0, 1], [0, 1, 1, 0]], dtype=torch.float64)
    values = c @ options.T
    return options[(values.argmax(-1) if maximise else values.argmin(-1))]


def test_solve_with_equalities_on_every_backend_and_in_both_senses():
    c = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (6, 4)))
    installed = [
        s for s in ("highs", "gurobi", "cpsat", "scip") if s in ilplayer.available_solvers()
    ]
    for solver in ["bruteforce", *installed]:
        y, status = ilplayer.solve(c, *NO_ROWS, lb=0, ub=1, solver=solver, A_eq=A_EQ, b_eq=B_EQ)
        assert (status == 0).all() and torch.equal(y, assignment(c)), solver
        y, _ = ilplayer.solve(
            c, *NO_ROWS, lb=0, ub=1, solver=solver, A_eq=A_EQ, b_eq=B_EQ, sense="max"
        )
        assert torch.equal(y, assignment(c, maximise=True)), solver


def test_equalities_nobody_can_meet_are_infeasible_and_zero_rows_are_decided_by_the_core():
    c = torch.randn(2, 4, dtype=torch.float64)
    b_eq = torch.tensor([1.0, 1.0, 1.0, 3.0], dtype=torch.float64)  # a column sum of 3 in {0,1}^2
    _, status = ilplayer.solve(c, *NO_ROWS, lb=0, ub=1, A_eq=A_EQ, b_eq=b_eq)
    assert ilplayer.Status.names(status) == ["infeasible", "infeasible"]
    zero = torch.zeros(1, 4, dtype=torch.float64)
    _, status = ilplayer.solve(
        c, *NO_ROWS, lb=0, ub=1, A_eq=zero, b_eq=torch.tensor([0.5], dtype=torch.float64)
    )
    assert ilplayer.Status.names(status) == ["infeasible", "infeasible"]
    _, status = ilplayer.solve(
        c, *NO_ROWS, lb=0, ub=1, A_eq=zero, b_eq=torch.zeros(1, dtype=torch.float64)
    )
    assert ilplayer.Status.names(status) == ["optimal", "optimal"]


def test_per_instance_equalities_are_grouped():
    c = torch.randn(4, 4, dtype=torch.float64)
    b_eq = torch.tensor(
        [[1.0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.float64
    )
    y, status = ilplayer.solve(c, *NO_ROWS, lb=0, ub=1, A_eq=A_EQ, b_eq=b_eq, solver="bruteforce")
    assert torch.equal(y[:2], assignment(c[:2])) and (y[2:] == 0).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"A_eq": A_EQ}, "A_eq and b_eq must both be given"),
        ({"A_eq": A_EQ[:, :3], "b_eq": B_EQ}, r"A_eq has 3 columns but c has 4 variables"),
        ({"A_eq": A_EQ, "b_eq": B_EQ[:3]}, r"b_eq must have shape \(4,\) or \(batch, 4\)"),
        ({"A_eq": A_EQ * float("nan"), "b_eq": B_EQ}, "A_eq must be finite"),
    ],
)
def test_bad_equalities_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ilplayer.solve(torch.randn(2, 4, dtype=torch.float64), *NO_ROWS, lb=0, ub=1, **kwargs)


def test_combopt_sees_equalities_in_its_feasibility_test_and_learns_only_a_and_b():
    c = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    A = torch.tensor([[1.0, 0, 0, 1]], dtype=torch.float64, requires_grad=True)  # x00 + x11 <= 2.5
    b = torch.tensor([2.5], dtype=torch.float64, requires_grad=True)
    y = ilplayer.ILPLayer(0, 1)(c, A, b, A_EQ, B_EQ)
    assert torch.equal(y, assignment(c.detach()))
    ((y - torch.tensor([1.0, 0, 0, 1])) ** 2).sum().backward()
    assert c.grad is not None and A.grad is not None and b.grad is not None
    assert A.grad.shape == (1, 4) and b.grad.shape == (1,)


def test_regret_through_equalities_learns_with_blackbox_and_spo_plus():
    rng = np.random.default_rng(1)
    c_true = torch.from_numpy(rng.uniform(0, 1, (8, 4)))
    c_pred = torch.from_numpy(rng.uniform(0, 1, (8, 4))).requires_grad_()
    layer = ilplayer.ILPLayer(0, 1, method="blackbox", blackbox_lambda=5.0)
    (c_true * layer(c_pred, *NO_ROWS, A_EQ, B_EQ)).sum().backward()
    assert c_pred.grad.any()
    c_pred.grad = None
    loss = SPOPlus(ilplayer.ILPLayer(0, 1))(c_pred, c_true, *NO_ROWS, A_eq=A_EQ, b_eq=B_EQ)
    loss.backward()
    w_true, w_hat = assignment(c_true), assignment(2 * c_pred.detach() - c_true)
    torch.testing.assert_close(c_pred.grad, 2 * (w_true - w_hat) / 8)


def test_every_equality_backend_declares_it():
    for name in ilplayer.available_solvers():
        if name in ("pyomo", "knapsack"):  # knapsack: one inequality row, it refuses A_eq
            continue
        solver = ilplayer.get_solver(name)
        assert ilplayer.core.records.Capability.EQUALITY_CONSTRAINTS in solver.capabilities, name
        solver.close()
