"""FeasibilityLoss (Odece's IPL and OPL): hand-computed values, exact gradients against finite
differences, the trade-off weight's direction in training, the backward on the meta device, and
its arguments checked by name."""

from __future__ import annotations

import pytest
import torch

import ilplayer
from ilplayer.losses import FeasibilityLoss
from ilplayer.losses.feasibility import feasibility_terms

PROGRAM = ilplayer.Program(lb=0, ub=1, sense="max")
PRICES = torch.tensor([6.0, 5.0, 4.0, 3.0], dtype=torch.float64)
SIZES = torch.tensor([[3.0, 2.5, 2.0, 1.5]], dtype=torch.float64)
CAPACITY = torch.tensor([5.0], dtype=torch.float64)


def softplus(x: float, beta: float) -> float:
    return float(torch.nn.functional.softplus(torch.tensor(x), beta=beta))


def test_the_terms_are_the_hand_computed_softplus_of_the_slacks():
    # the true optimum under capacity 5 packs items 1 and 3 (sizes 5, price 10); under a
    # predicted 6.5, Stage 1 packs items 1, 3 and 4 (sizes 6.5, price 13), truly infeasible
    loss = FeasibilityLoss(PROGRAM, solver="bruteforce", alpha=0.5, margin=1.0, beta=2.0)
    b_pred = torch.tensor([[6.5]], dtype=torch.float64)
    y_hat, _ = loss.oracle(PRICES[None], SIZES, b_pred)
    assert y_hat.tolist() == [[1.0, 0.0, 1.0, 1.0]]
    ipl, opl = loss.terms(b_pred=b_pred, c=PRICES, A=SIZES, b=CAPACITY)
    y_true = torch.tensor([1.0, 0.0, 1.0, 0.0])
    assert opl.item() == pytest.approx(softplus(5.0 - 6.5 + 1.0, 2.0))  # the optimum's slack: -1.5
    assert ipl.item() == pytest.approx(softplus(1.0 - (6.5 - 6.5), 2.0))  # Stage 1's slack: 0
    value = loss(b_pred=b_pred, c=PRICES, A=SIZES, b=CAPACITY, y_true=y_true[None])
    assert value.item() == pytest.approx(0.5 * ipl.item() + 0.5 * opl.item())


def test_ipl_is_zero_when_every_decision_is_feasible_and_keeps_the_graph():
    loss = FeasibilityLoss(PROGRAM, solver="bruteforce", margin=1.0)
    b_pred = torch.tensor([[4.0]], dtype=torch.float64, requires_grad=True)
    ipl, opl = loss.terms(b_pred=b_pred, c=PRICES, A=SIZES, b=CAPACITY)
    assert ipl.item() == 0.0 and opl.item() > 0
    (ipl + opl).backward()
    assert b_pred.grad is not None and b_pred.grad.item() < 0  # OPL asks for more room


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_gradients_for_rows_and_right_hand_sides_match_finite_differences(alpha):
    torch.manual_seed(0)
    B, m, n = 5, 2, 4
    A_true = torch.rand(B, m, n, dtype=torch.float64) * 3 + 0.5
    b_true = A_true.sum(-1) * 0.5
    c = torch.rand(B, n, dtype=torch.float64) + 0.5
    A_pred = (A_true * (0.7 + 0.6 * torch.rand(B, m, n, dtype=torch.float64))).requires_grad_()
    b_pred = (b_true * (0.8 + 0.4 * torch.rand(B, m, dtype=torch.float64))).requires_grad_()
    loss = FeasibilityLoss(PROGRAM, solver="bruteforce", alpha=alpha, margin=0.5)
    value = loss(A_pred, b_pred, c=c, A=A_true, b=b_true)
    value.backward()
    h = 1e-6  # small enough that no Stage-1 decision changes
    for name, tensor in (("A_pred", A_pred), ("b_pred", b_pred)):
        flat = tensor.detach().flatten()
        for index in range(0, flat.numel(), 3):
            step = torch.zeros_like(flat)
            step[index] = h
            values = []
            for x in (flat + step, flat - step):
                args = {
                    "A_pred": A_pred.detach(),
                    "b_pred": b_pred.detach(),
                    name: x.reshape(tensor.shape),
                }
                values.append(loss(**args, c=c, A=A_true, b=b_true).item())
            numeric = (values[0] - values[1]) / (2 * h)
            assert tensor.grad.flatten()[index].item() == pytest.approx(numeric, abs=1e-5)


def test_alpha_trades_infeasibility_against_the_optimum_in_training():
    # a predicted capacity trained on IPL alone moves down (cutting off infeasible packings), on
    # OPL alone up (keeping the optimum inside)
    moved = {}
    for alpha in (0.0, 1.0):
        capacity = torch.nn.Parameter(torch.tensor([[6.5]], dtype=torch.float64))
        loss = FeasibilityLoss(PROGRAM, solver="bruteforce", alpha=alpha, margin=0.5)
        optimiser = torch.optim.SGD([capacity], lr=0.05)
        for _ in range(10):
            optimiser.zero_grad()
            loss(b_pred=capacity, c=PRICES, A=SIZES, b=CAPACITY).backward()
            optimiser.step()
        moved[alpha] = capacity.item() - 6.5
    assert moved[1.0] < 0 < moved[0.0]


def test_the_terms_and_their_backward_run_on_the_meta_device():
    # what follows the solver's answer is torch alone: no value leaves the device
    meta = {"device": "meta", "dtype": torch.float64}
    A_pred = torch.ones(3, 2, 4, **meta, requires_grad=True)
    b_pred = torch.ones(3, 2, **meta, requires_grad=True)
    ipl, opl = feasibility_terms(
        A_pred,
        b_pred,
        torch.ones(3, 4, **meta),
        torch.ones(3, 4, **meta),
        torch.ones(3, 2, 4, **meta),
        torch.ones(3, 2, **meta),
        2.0,
        5.0,
        torch.ones(3, dtype=torch.bool, device="meta"),
    )
    (0.5 * ipl + 0.5 * opl).backward()
    assert A_pred.grad.device.type == "meta" and b_pred.grad.shape == (3, 2)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"alpha must be a number in \[0, 1\]"):
        FeasibilityLoss(PROGRAM, alpha=1.5)
    with pytest.raises(ValueError, match="margin must be a number >= 0"):
        FeasibilityLoss(PROGRAM, margin=-1.0)
    with pytest.raises(ValueError, match="beta must be a number"):
        FeasibilityLoss(PROGRAM, beta=0)
    loss = FeasibilityLoss(PROGRAM, solver="bruteforce")
    with pytest.raises(ValueError, match="A_pred and b_pred are both None"):
        loss(c=PRICES, A=SIZES, b=CAPACITY)
    with pytest.raises(ValueError, match="the true rows are needed"):
        loss(b_pred=torch.tensor([[5.0]]), c=PRICES)
    with pytest.raises(
        ValueError, match=r"expected \(B, m, n\) rows and \(B, m\) right-hand sides"
    ):
        loss(b_pred=torch.tensor([[5.0, 1.0]], dtype=torch.float64), c=PRICES, A=SIZES, b=CAPACITY)
