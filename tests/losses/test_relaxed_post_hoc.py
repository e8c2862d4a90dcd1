"""RelaxedPostHocLoss (2S's surrogate): its gradients for predicted rows, right-hand sides and
costs against finite differences of the relaxations, its value against the LP's as the barrier
vanishes, the backward on the meta device, and its arguments checked by name."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import torch

import ilplayer
from ilplayer.losses import RelaxedPostHocLoss

KNAPSACK = ilplayer.Program(lb=0, ub=1, sense="max")
COVER = ilplayer.Program(lb=0, ub=2, sense="min")


def instances(B: int, m: int, n: int, seed: int, cover: bool) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    A = torch.rand(B, m, n, generator=generator, dtype=torch.float64) * 3 + 0.5
    b = A.sum(-1) * 0.5
    if cover:  # sum a y >= r as -a y <= -r
        A, b = -A, -b
    c = torch.rand(B, n, generator=generator, dtype=torch.float64) + 0.5
    return {"c": c, "A": A, "b": b}


def finite_difference(
    loss,
    name: str,
    predictions: dict[str, torch.Tensor],
    truth: dict[str, torch.Tensor],
    index: int,
    h: float = 1e-6,
) -> float:
    values = []
    for sign in (1, -1):
        moved = dict(predictions)
        flat = predictions[name].detach().flatten().clone()
        flat[index] += sign * h
        moved[name] = flat.reshape(predictions[name].shape)
        values.append(loss(**moved, **truth, penalty=0.4, drop_penalty=0.1).item())
    return (values[0] - values[1]) / (2 * h)


@pytest.mark.parametrize("changes", ["any", "add", "drop"])
@pytest.mark.parametrize("cover", [False, True])
def test_gradients_match_finite_differences_of_the_relaxations(changes, cover):
    program = COVER if cover else KNAPSACK
    truth = instances(3, 2, 4, seed=len(changes) + cover, cover=cover)
    noise = torch.Generator().manual_seed(9)
    predictions = {
        "A_pred": truth["A"]
        * (0.7 + 0.6 * torch.rand(truth["A"].shape, generator=noise, dtype=torch.float64)),
        "b_pred": truth["b"]
        * (0.8 + 0.4 * torch.rand(truth["b"].shape, generator=noise, dtype=torch.float64)),
        "c_pred": truth["c"]
        * (0.5 + torch.rand(truth["c"].shape, generator=noise, dtype=torch.float64)),
    }
    predictions = {name: value.requires_grad_() for name, value in predictions.items()}
    loss = RelaxedPostHocLoss(program, changes=changes, mu=0.05)
    loss(**predictions, **truth, penalty=0.4, drop_penalty=0.1).backward()
    for name, value in predictions.items():
        for index in range(0, value.numel(), 5):
            numeric = finite_difference(loss, name, predictions, truth, index)
            assert value.grad.flatten()[index].item() == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_the_value_is_the_lps_as_the_barrier_vanishes():
    # predictions equal to the truth: Stage 1 is the LP optimum and Stage 2 keeps it
    truth = instances(4, 3, 6, seed=3, cover=False)
    lp = [
        scipy.optimize.linprog(
            -truth["c"][i].numpy(),
            A_ub=truth["A"][i].numpy(),
            b_ub=truth["b"][i].numpy(),
            bounds=(0, 1),
        ).fun
        for i in range(4)
    ]
    loss = RelaxedPostHocLoss(KNAPSACK, changes="drop", mu=1e-5)
    value = loss(b_pred=truth["b"].clone(), **truth, penalty=0.3)
    assert value.item() == pytest.approx(float(np.mean(lp)), abs=1e-2)
    optimal = -torch.tensor(lp, dtype=torch.float64)  # the LP's optimal values, in the max sense
    regret = loss(b_pred=truth["b"].clone(), **truth, penalty=0.3, optimal=optimal)
    assert abs(regret.item()) < 1e-2  # the relaxed regret against the LP's optimum: about 0


def test_an_overestimated_capacity_costs_the_repair_and_its_gradient_says_lower():
    prices = torch.tensor([[6.0, 5.0, 4.0, 3.0]], dtype=torch.float64)
    sizes = torch.tensor([[[3.0, 2.5, 2.0, 1.5]]], dtype=torch.float64)
    capacity = torch.tensor([[5.0]], dtype=torch.float64)
    loss = RelaxedPostHocLoss(KNAPSACK, changes="drop", mu=0.01)
    right = loss(b_pred=capacity.clone(), c=prices, A=sizes, b=capacity, penalty=1.0)
    high = torch.tensor([[6.5]], dtype=torch.float64, requires_grad=True)
    wrong = loss(b_pred=high, c=prices, A=sizes, b=capacity, penalty=1.0)
    wrong.backward()
    assert wrong.item() > right.item() + 0.2  # max program: the loss is the negated net value
    assert high.grad.item() > 0


def test_the_loss_and_its_backward_run_on_the_meta_device():
    meta = {"device": "meta", "dtype": torch.float64}
    for changes in ("any", "add", "drop"):
        A_pred = torch.ones(3, 2, 4, **meta, requires_grad=True)
        b_pred = torch.ones(3, 2, **meta, requires_grad=True)
        value = RelaxedPostHocLoss(KNAPSACK, changes=changes)(
            A_pred,
            b_pred,
            c=torch.ones(3, 4, **meta),
            A=torch.ones(3, 2, 4, **meta),
            b=torch.ones(3, 2, **meta),
            penalty=0.3,
        )
        value.backward()
        assert A_pred.grad.device.type == "meta" and b_pred.grad.shape == (3, 2)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="changes must be one of"):
        RelaxedPostHocLoss(KNAPSACK, changes="swap")
    with pytest.raises(ValueError, match="mu must be a positive number"):
        RelaxedPostHocLoss(KNAPSACK, mu=0)
    with pytest.raises(ValueError, match="inequality rows only"):
        RelaxedPostHocLoss(ilplayer.Program(lb=0, ub=1, A_eq=torch.ones(1, 2), b_eq=torch.ones(1)))
    with pytest.raises(TypeError, match=r"program must be an ilplayer\.Program"):
        RelaxedPostHocLoss("knapsack")
    truth = instances(2, 1, 3, seed=0, cover=False)
    with pytest.raises(ValueError, match="needs a finite box"):
        RelaxedPostHocLoss(ilplayer.Program(lb=0, ub=float("inf")))(b_pred=truth["b"], **truth)
    with pytest.raises(ValueError, match="all None"):
        RelaxedPostHocLoss(KNAPSACK)(**truth)
    with pytest.raises(ValueError, match="differ from the true parameters'"):
        RelaxedPostHocLoss(KNAPSACK)(b_pred=torch.ones(2, 3, dtype=torch.float64), **truth)
