"""PostHocRegretLoss: its perturbed gradient against finite differences of the smoothed
post-hoc regret (computed exactly from the regret on a fine grid of predictions), for a
predicted right-hand side and a predicted row; its arguments checked by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.losses import PostHocRegretLoss
from ilplayer.metrics import post_hoc_regret

PRICES = torch.tensor([6.0, 5.0, 4.0, 3.0], dtype=torch.float64)
SIZES = torch.tensor([[3.0, 2.5, 2.0, 1.5]], dtype=torch.float64)
PROGRAM = ilplayer.Program(lb=0, ub=1, sense="max")


def smoothed(regret_of, at: float, sigma: float, step: float = 0.005) -> float:
    """``E[R(at + sigma e)]`` by quadrature of R on a grid 7 sigma either side."""
    grid = torch.arange(at - 7 * sigma, at + 7 * sigma, step, dtype=torch.float64)
    weights = torch.exp(-(((grid - at) / sigma) ** 2) / 2) / np.sqrt(2 * np.pi) * step / sigma
    return (regret_of(grid) * weights).sum().item()


def capacity_regret(capacities: torch.Tensor) -> torch.Tensor:
    with ilplayer.Oracle(PROGRAM, solver="bruteforce") as oracle:
        y1, _ = oracle(PRICES.expand(len(capacities), -1), SIZES, capacities[:, None])
    return post_hoc_regret(
        PROGRAM,
        y1,
        PRICES,
        SIZES,
        torch.tensor([5.0]),
        penalty=0.3,
        changes="drop",
        solver="bruteforce",
    ).regret


@pytest.mark.parametrize("at", [4.2, 5.6])
def test_the_gradient_for_a_predicted_capacity_is_the_smoothed_regrets_slope(at):
    sigma, h = 1.0, 0.05
    slope = (
        smoothed(capacity_regret, at + h, sigma) - smoothed(capacity_regret, at - h, sigma)
    ) / (2 * h)
    loss = PostHocRegretLoss(
        PROGRAM, solver="bruteforce", changes="drop", sigma=sigma, samples=3000, seed=1
    )
    b_pred = torch.tensor([[at]], dtype=torch.float64, requires_grad=True)
    value = loss(b_pred, c=PRICES, A=SIZES, b=torch.tensor([5.0]), penalty=0.3)
    value.backward()
    assert value.item() == pytest.approx(smoothed(capacity_regret, at, sigma), abs=0.08)
    assert b_pred.grad.item() == pytest.approx(slope, abs=0.1)
    assert abs(slope) > 0.3  # a slope worth checking


def test_a_known_row_of_scale_zero_is_not_perturbed_and_gets_no_gradient():
    # a second row, y1 + y2 <= 2, known (sigma 0): perturbed, its right-hand side 2 -+ e would
    # cut off packings; left alone, the first row's gradient is the one-row case's
    at, sigma, h = 4.2, 1.0, 0.05
    slope = (
        smoothed(capacity_regret, at + h, sigma) - smoothed(capacity_regret, at - h, sigma)
    ) / (2 * h)
    rows = torch.cat([SIZES, torch.tensor([[1.0, 1.0, 0.0, 0.0]], dtype=torch.float64)])
    loss = PostHocRegretLoss(
        PROGRAM,
        solver="bruteforce",
        changes="drop",
        sigma=torch.tensor([sigma, 0.0]),
        samples=3000,
        seed=1,
    )
    b_pred = torch.tensor([[at, 2.0]], dtype=torch.float64, requires_grad=True)
    loss(b_pred, c=PRICES, A=rows, b=torch.tensor([5.0, 2.0]), penalty=0.3).backward()
    assert b_pred.grad[0, 1].item() == 0.0
    assert b_pred.grad[0, 0].item() == pytest.approx(slope, abs=0.1)


def test_the_gradient_for_a_predicted_row_is_the_smoothed_regrets_slope():
    # one item of price 6 and true size 3 under a capacity of 5: predicted larger than 5, Stage 1
    # leaves it out and Stage 2 (drops only) cannot take it: a regret of 6 (else 0). Smoothed:
    # 6 P(a + sigma e > 5), whose slope is 6 phi((5 - a) / sigma) / sigma.
    sigma, at = 0.5, 4.6
    slope = 6 * np.exp(-(((5 - at) / sigma) ** 2) / 2) / np.sqrt(2 * np.pi) / sigma
    program = ilplayer.Program(lb=0, ub=1, sense="max")
    loss = PostHocRegretLoss(
        program, solver="bruteforce", changes="drop", sigma=sigma, samples=3000, seed=2
    )
    A_pred = torch.tensor([[[at]]], dtype=torch.float64, requires_grad=True)
    value = loss(
        A_pred=A_pred,
        c=torch.tensor([6.0], dtype=torch.float64),
        A=torch.tensor([[3.0]]),
        b=torch.tensor([5.0]),
    )
    value.backward()
    assert value.item() == pytest.approx(
        6 * (1 - 0.5 * (1 + math.erf((5 - at) / sigma / np.sqrt(2)))), abs=0.1
    )
    assert A_pred.grad.item() == pytest.approx(slope, abs=0.25)


def test_the_gradient_for_a_predicted_cost_is_the_smoothed_regrets_slope():
    # two items of size 3 under a capacity of 5 (one fits), true prices 6 and 4; the second's
    # price predicted as a (the first's known, scale 0): above 6, Stage 1 packs the second and
    # Stage 2 keeps it, a regret of 2. Smoothed: 2 P(a + sigma e > 6), slope 2 phi((6 - a) / sigma) / sigma.
    sigma, at = 0.5, 5.7
    slope = 2 * np.exp(-(((6 - at) / sigma) ** 2) / 2) / np.sqrt(2 * np.pi) / sigma
    loss = PostHocRegretLoss(
        PROGRAM,
        solver="bruteforce",
        changes="drop",
        sigma={"c": torch.tensor([0.0, sigma])},
        samples=3000,
        seed=4,
    )
    c_pred = torch.tensor([[6.0, at]], dtype=torch.float64, requires_grad=True)
    value = loss(
        c_pred=c_pred,
        c=torch.tensor([6.0, 4.0], dtype=torch.float64),
        A=torch.tensor([[3.0, 3.0]]),
        b=torch.tensor([5.0]),
    )
    value.backward()
    assert value.item() == pytest.approx(
        2 * (1 - 0.5 * (1 + math.erf((6 - at) / sigma / np.sqrt(2)))), abs=0.05
    )
    assert c_pred.grad[0, 0].item() == 0.0
    assert c_pred.grad[0, 1].item() == pytest.approx(slope, abs=0.1)


def test_a_network_trained_on_the_loss_moves_its_prediction_where_the_regret_is_lower():
    torch.manual_seed(0)
    capacity = torch.nn.Parameter(torch.tensor([[3.0]], dtype=torch.float64))
    loss = PostHocRegretLoss(
        PROGRAM, solver="bruteforce", changes="drop", sigma=0.5, samples=64, seed=3
    )
    optimiser = torch.optim.Adam([capacity], lr=0.1)
    first = None
    for _ in range(30):
        optimiser.zero_grad()
        value = loss(capacity, c=PRICES, A=SIZES, b=torch.tensor([5.0]), penalty=0.3)
        first = value.item() if first is None else first
        value.backward()
        optimiser.step()
    assert (
        capacity_regret(capacity.detach()[0]).item() < capacity_regret(torch.tensor([3.0])).item()
    )
    assert value.item() < first


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        PostHocRegretLoss(PROGRAM, sigma=0.0)
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        PostHocRegretLoss(PROGRAM, sigma=torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        PostHocRegretLoss(PROGRAM, samples=0)
    with pytest.raises(ValueError, match="changes must be one of"):
        PostHocRegretLoss(PROGRAM, changes="swap")
    with pytest.raises(ValueError, match="b_pred, A_pred and c_pred are all None"):
        PostHocRegretLoss(PROGRAM, solver="bruteforce")(c=PRICES, A=SIZES, b=torch.tensor([5.0]))
    with pytest.raises(ValueError, match="sigma's keys must be among"):
        PostHocRegretLoss(PROGRAM, sigma={"rows": 1.0})
    with pytest.raises(ValueError, match=r"sigma\['c'\] must be a positive number"):
        PostHocRegretLoss(PROGRAM, sigma={"c": -1.0})
    with pytest.raises(ValueError, match=r"sigma has no scale for the predicted \['b'\]"):
        PostHocRegretLoss(PROGRAM, solver="bruteforce", sigma={"c": 1.0})(
            torch.tensor([[5.0]]), c=PRICES, A=SIZES, b=torch.tensor([5.0])
        )
