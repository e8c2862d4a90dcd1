"""The decision pool (solve_ratio), the pool losses (NCE, CMAP, LTR), the perturbation gradient
loss and multiplicative noise: each against its definition, written out independently here."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from ilplayer import ILPLayer, Status
from ilplayer.core.decision_pool import DecisionPool, PoolRule
from ilplayer.core.records import Capability
from ilplayer.losses import (
    NCE,
    ContrastiveMAP,
    FenchelYoung,
    ListwiseLTR,
    PairwiseLTR,
    PerturbationGradient,
    PointwiseLTR,
    SPOPlus,
)
from tests.host_solvers import require

N = 6
A = torch.tensor(
    [[0.4, 0.7, 0.2, 0.9, 0.5, 0.3], [0.6, 0.1, 0.8, 0.3, 0.4, 0.9]], dtype=torch.float64
)
B = torch.tensor([1.5, 1.6], dtype=torch.float64)
POINTS = torch.tensor([[(k >> j) & 1 for j in range(N)] for k in range(2**N)], dtype=torch.float64)
FEASIBLE = POINTS[(POINTS @ A.T <= B).all(1)]


def row_noise(samples: int, rows: int, seed: int) -> torch.Tensor:
    """The layer's and the losses' draws (samples, rows, N): each row's samples drawn together."""
    return torch.randn(
        (rows, samples, N), generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    ).transpose(0, 1)


def argbest(c: torch.Tensor, sense: str = "min") -> torch.Tensor:
    """The exhaustive optimum over the feasible binary points (the test's oracle)."""
    values = c.double() @ FEASIBLE.T
    return FEASIBLE[values.argmin(1) if sense == "min" else values.argmax(1)]


def data(batch: int = 5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    pred = torch.randn(batch, N, generator=g, dtype=torch.float64)
    return pred, torch.rand(batch, N, generator=g, dtype=torch.float64)


# --- the pool ---------------------------------------------------------------------------------


def test_decision_pool_keeps_distinct_decisions_and_answers_the_cheapest():
    pool = DecisionPool(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))
    assert len(pool) == 2
    pool.add(np.array([[-0.0, 1.0], [1.0, 1.0]]))  # -0.0 is 0.0
    assert len(pool) == 3
    assert pool.best(torch.tensor([[-1.0, -2.0], [3.0, 2.0]])).tolist() == [[1.0, 1.0], [0.0, 1.0]]
    with pytest.raises(ValueError, match="3 variables"):
        pool.add(torch.zeros(1, 3))
    with pytest.raises(RuntimeError, match="pool is empty"):
        DecisionPool().best(torch.zeros(1, 2))


@pytest.mark.parametrize("ratio", [-0.1, 1.5, "half", True])
def test_bad_solve_ratio_is_named(ratio):
    with pytest.raises(ValueError, match="solve_ratio must be a number in"):
        ILPLayer(0, 1, solver="highs", solve_ratio=ratio)


def test_layer_pool_follows_the_reference_rule_in_training_only():
    """Each forward in training mode draws once (np.random.RandomState(seed).uniform(), PyEPO's
    rule): below solve_ratio it solves and pools the answers, else it answers every instance
    from the pool."""
    require("highs")
    ratio, seed = 0.4, 3
    layer = ILPLayer(
        0,
        1,
        solver="highs",
        executor="serial",
        method="identity",
        pool=PoolRule(ratio, FEASIBLE[:3], seed=seed),
    )
    reference_pool, draws = {tuple(p) for p in FEASIBLE[:3].tolist()}, np.random.RandomState(seed)
    for step in range(12):
        c, _ = data(4, seed=step)
        y = layer(c, A, B)
        if draws.uniform() < ratio:
            expected, status = argbest(c), Status.OPTIMAL
            reference_pool |= {tuple(p) for p in expected.tolist()}
        else:
            pooled = torch.tensor(sorted(reference_pool), dtype=torch.float64)
            expected, status = pooled[(c @ pooled.T).argmin(1)], Status.POOLED
        assert torch.equal(y, expected), step
        assert layer.last_status.tolist() == [int(status)] * 4
    assert layer.oracle.pool_rule.pooled_batches > 0 and layer.oracle.pool_rule.solved_batches > 0
    layer.eval()  # evaluation solves exactly
    c, _ = data(4, seed=99)
    assert torch.equal(layer(c, A, B), argbest(c)) and (layer.last_status == 0).all()
    # solve_batch (the experiments' exact solves) is never pooled
    rule = layer.oracle.pool_rule
    layer.train()
    before = rule.pooled_batches + rule.solved_batches
    y, status = layer.oracle.solve_batch(c, A, B)
    assert torch.equal(y, argbest(c)) and rule.pooled_batches + rule.solved_batches == before


def test_pool_refuses_other_constraints_and_per_instance_rows():
    require("highs")
    layer = ILPLayer(
        0, 1, solver="highs", executor="serial", method="identity", solve_ratio=0.0, pool=FEASIBLE
    )
    c, _ = data(3)
    layer(c, A, B)
    with pytest.raises(ValueError, match="differ from those of the pool"):
        layer(c, A, B + 0.1)
    with pytest.raises(ValueError, match="shared by the batch"):
        ILPLayer(0, 1, solver="highs", method="identity", solve_ratio=0.0)(
            c, A.expand(3, 2, N), B.expand(3, 2)
        )


def test_spo_plus_with_a_pool_matches_the_reference_loop():
    require("highs")
    layer = ILPLayer(0, 1, solver="highs", executor="serial")
    loss = SPOPlus(layer, solve_ratio=0.5, pool=FEASIBLE[:4], seed=1)
    draws, pooled = np.random.RandomState(1), {tuple(p) for p in FEASIBLE[:4].tolist()}
    for step in range(8):
        c_pred, c_true = data(5, seed=step)
        y_true = argbest(c_true)
        value = loss(c_pred, c_true, A, B, y_true=y_true)
        costs = 2 * c_pred - c_true
        if draws.uniform() < 0.5:
            y_hat = argbest(costs)
            pooled |= {tuple(p) for p in y_hat.tolist()}
        else:
            points = torch.tensor(sorted(pooled), dtype=torch.float64)
            y_hat = points[(costs @ points.T).argmin(1)]
        expected = (
            ((c_true - 2 * c_pred) * y_hat).sum(-1)
            + 2 * (c_pred * y_true).sum(-1)
            - (c_true * y_true).sum(-1)
        )
        assert value.item() == pytest.approx(expected.mean().item(), abs=1e-9), step


# --- the losses against their definitions -------------------------------------------------------


def _reference_pool_losses(c_pred, c_true, y_true, pool, sense):
    """PyEPO 2.2.7's formulas (pyepo/func/contrastive.py, rank.py), in the model's sense."""
    minimize = sense == "min"
    obj = (c_pred * y_true).sum(-1, keepdim=True)
    pool_pred, pool_true = c_pred @ pool.T, c_true @ pool.T
    nce = ((obj - pool_pred) if minimize else (pool_pred - obj)).mean(1).mean()
    cmap = ((obj - pool_pred) if minimize else (pool_pred - obj)).max(1).values.mean()
    pointwise = ((c_true - c_pred) @ pool.T).square().mean(1).mean()
    best = (pool_true.argmin(1) if minimize else pool_true.argmax(1))[:, None]
    best_pred = pool_pred.gather(1, best)
    diff = (best_pred - pool_pred) if minimize else (pool_pred - best_pred)
    pairwise = (torch.relu(diff).sum(1) / max(pool.shape[0] - 1, 1)).mean()
    s = -1 if minimize else 1
    listwise = (
        -(torch.log_softmax(s * pool_pred, 1) * torch.softmax(s * pool_true, 1).clamp(min=1e-8))
        .sum(1)
        .mean()
    )
    return {
        "nce": nce,
        "cmap": cmap,
        "pointwise": pointwise,
        "pairwise": pairwise,
        "listwise": listwise,
    }


@pytest.mark.parametrize("sense", ["min", "max"])
def test_pool_losses_match_their_definitions_and_their_gradients(sense):
    require("highs")
    layer = ILPLayer(0, 1, solver="highs", executor="serial", sense=sense)
    c_pred, c_true = data(6, seed=4)
    y_true = argbest(c_true, sense)
    losses = {
        "nce": NCE,
        "cmap": ContrastiveMAP,
        "pointwise": PointwiseLTR,
        "pairwise": PairwiseLTR,
        "listwise": ListwiseLTR,
    }
    for name, cls in losses.items():
        pool = DecisionPool(FEASIBLE[::3])
        loss = cls(layer, solve_ratio=1.0, pool=pool)
        target = y_true if name in ("nce", "cmap") else c_true
        pred = c_pred.clone().requires_grad_(True)
        value = loss(pred, target, A, B)
        # solve_ratio = 1: the predicted costs' optima joined the pool before the loss read it
        grown = torch.unique(torch.cat([FEASIBLE[::3], argbest(c_pred, sense)]), dim=0)
        assert torch.equal(pool.decisions, grown), name
        reference_pred = c_pred.clone().requires_grad_(True)
        reference = _reference_pool_losses(reference_pred, c_true, y_true, grown, sense)[name]
        assert value.item() == pytest.approx(reference.item(), rel=1e-10, abs=1e-12), name
        (got,) = torch.autograd.grad(value, pred)
        (want,) = torch.autograd.grad(reference, reference_pred)
        torch.testing.assert_close(got, want, msg=name)


def test_pool_losses_need_a_pool():
    with pytest.raises(ValueError, match="pool: NCE compares against a pool"):
        NCE(ILPLayer(0, 1, solver="highs"))


@pytest.mark.parametrize("two_sides", [False, True])
@pytest.mark.parametrize("sense", ["min", "max"])
def test_perturbation_gradient_is_its_finite_difference(two_sides, sense):
    """PG's value is a finite difference of the optimal value along the true costs; its gradient
    in c_pred is that of the value function (the difference of the two optima over sigma),
    checked by central differences of the exhaustive value."""
    require("highs")
    layer = ILPLayer(0, 1, solver="highs", executor="serial", sense=sense)
    sigma = 0.3
    loss = PerturbationGradient(layer, sigma=sigma, two_sides=two_sides)
    c_pred, c_true = data(5, seed=7)
    sign = 1.0 if sense == "min" else -1.0
    pred = c_pred.clone().requires_grad_(True)
    value = loss(pred, c_true, A, B)

    def definition(p: torch.Tensor) -> torch.Tensor:
        m = lambda c: (sign * c) @ FEASIBLE.T  # minimisation-form objectives
        zmin = lambda c: m(c).min(1).values
        high = zmin(p + sigma * c_true) if two_sides else zmin(p)
        return ((high - zmin(p - sigma * c_true)) / (2 * sigma if two_sides else sigma)).mean()

    assert value.item() == pytest.approx(definition(c_pred).item(), abs=1e-9)
    (got,) = torch.autograd.grad(value, pred)
    eps = 1e-6
    for i, j in [(0, 0), (1, 3), (4, 5)]:
        step = torch.zeros_like(c_pred)
        step[i, j] = eps
        numeric = (definition(c_pred + step) - definition(c_pred - step)) / (2 * eps)
        assert got[i, j].item() == pytest.approx(numeric.item(), abs=1e-5), (i, j)


def test_multiplicative_fenchel_young_matches_its_definition():
    """PFYMul: perturbed costs c * F, F = exp(sigma Z - sigma^2/2); loss c·y - E[(c * F)·y_s],
    gradient y - E[F * y_s] (PyEPO's perturbedFenchelYoungMul)."""
    require("highs")
    layer = ILPLayer(0, 1, solver="highs", executor="serial")
    sigma, samples = 0.5, 6
    loss = FenchelYoung(layer, sigma=sigma, samples=samples, seed=11, noise="multiplicative")
    c_pred, c_true = data(4, seed=2)
    y_true = argbest(c_true)
    pred = c_pred.clone().requires_grad_(True)
    value = loss(pred, y_true, A, B)
    noise = row_noise(samples, 4, seed=11)
    factor = torch.exp(sigma * noise - 0.5 * sigma**2)
    perturbed = c_pred[None] * factor
    y_s = argbest(perturbed.reshape(-1, N)).reshape(samples, 4, N)
    expected = ((c_pred * y_true).sum(-1) - (perturbed * y_s).sum(-1).mean(0)).mean()
    assert value.item() == pytest.approx(expected.item(), abs=1e-10)
    (got,) = torch.autograd.grad(value, pred)
    torch.testing.assert_close(got, (y_true - (factor * y_s).mean(0)) / 4)
    with pytest.raises(ValueError, match="noise must be one of"):
        FenchelYoung(layer, noise="gumbel")


def test_multiplicative_perturbed_layer_gradient():
    """DPOMul: forward E[y(c * F)], backward E[(y_s·dy) Z_s] / (sigma c) (PyEPO's perturbedOptMul)."""
    require("highs")
    sigma, samples = 0.5, 5
    layer = ILPLayer(
        0,
        1,
        solver="highs",
        executor="serial",
        method="perturbed",
        sigma=sigma,
        samples=samples,
        seed=5,
        noise="multiplicative",
    )
    c, _ = data(3, seed=8)
    pred = c.clone().requires_grad_(True)
    y = layer(pred, A, B)
    noise = row_noise(samples, 3, seed=5)
    y_s = argbest((c[None] * torch.exp(sigma * noise - 0.5 * sigma**2)).reshape(-1, N)).reshape(
        samples, 3, N
    )
    torch.testing.assert_close(y, y_s.mean(0))
    dy = torch.randn(3, N, dtype=torch.float64)
    (got,) = torch.autograd.grad(y, pred, dy)
    expected = ((y_s * dy).sum(-1)[..., None] * noise).mean(0) / (sigma * c)
    torch.testing.assert_close(got, expected)
    assert "noise='multiplicative'" in repr(layer)
    with pytest.raises(ValueError, match="noise applies to method='perturbed' only"):
        ILPLayer(0, 1, solver="highs", noise="multiplicative")


# --- every backend, every executor ------------------------------------------------------------

BACKENDS = ["highs", "gurobi", "scip", "cpsat", "bruteforce"]


def _loss_values(backend: str, executor: str) -> list[float]:
    Ai, Bi = (A * 10).round(), (B * 10).round()  # integer rows: CP-SAT's
    points = POINTS[(Bi >= POINTS @ Ai.T).all(1)]
    layer = ILPLayer(0, 1, solver=backend, executor=executor)
    c_pred, c_true = data(6, seed=12)
    y_true = points[(c_true @ points.T).argmin(1)]
    values = []
    for loss, target in [
        (PerturbationGradient(layer, sigma=0.2, two_sides=True), c_true),
        (NCE(layer, pool=points[::4]), y_true),
        (ContrastiveMAP(layer, pool=points[::4]), y_true),
        (PairwiseLTR(layer, pool=points[::4]), c_true),
        (ListwiseLTR(layer, pool=points[::4]), c_true),
        (PointwiseLTR(layer, pool=points[::4]), c_true),
        (FenchelYoung(layer, samples=3, seed=0, noise="multiplicative"), y_true),
        (SPOPlus(layer, solve_ratio=0.5, pool=points[::4], seed=2), c_true),
    ]:
        values.append(loss(c_pred, target, Ai, Bi).item())
    layer.close()
    return values


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip", "cpsat", "pyomo:appsi_highs"])
@pytest.mark.parametrize("executor", ["serial", "workers"])
def test_new_losses_agree_with_bruteforce_on_every_backend(backend, executor):
    solver = require(backend)
    if executor == "workers":  # threads where the backend releases the GIL, else processes
        executor = "threads" if Capability.RELEASES_GIL in solver.capabilities else "processes"
    assert _loss_values(backend, executor) == pytest.approx(
        _loss_values("bruteforce", "serial"), abs=1e-9
    )


def test_perturbed_variance_reduction_is_pyepos_leave_one_out_baseline():
    """PyEPO's perturbedOpt backward: (reward - mean reward) * S / (S - 1) before the noise."""
    require("highs")
    from ilplayer.gradients import Perturbed

    sigma, samples = 0.5, 4
    layer = ILPLayer(
        0,
        1,
        solver="highs",
        executor="serial",
        method=Perturbed(sigma=sigma, samples=samples, seed=2, variance_reduction=True),
    )
    c, _ = data(3, seed=4)
    pred = c.clone().requires_grad_(True)
    y = layer(pred, A, B)
    noise = row_noise(samples, 3, seed=2)
    y_s = argbest((c[None] + sigma * noise).reshape(-1, N)).reshape(samples, 3, N)
    dy = torch.randn(3, N, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    (got,) = torch.autograd.grad(y, pred, dy)
    reward = (y_s * dy).sum(-1)
    reward = (reward - reward.mean(0)) * samples / (samples - 1)
    torch.testing.assert_close(got, (reward[..., None] * noise).sum(0) / (samples * sigma))


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("pyepo", "gurobipy")),
    reason="needs PyEPO with its Gurobi model ([pyepo] extra, gurobipy)",
)
def test_perturbation_gradient_trains_as_pyepos_on_the_same_batches():
    """Two copies of one model, one trained with ilplayer's PG and one with PyEPO's on the same
    float64 batches of PyEPO's shortest path, stay equal step after step."""
    import copy

    import pyepo

    from ilplayer_experiments import decision_focused as dfl

    require("gurobi")
    task = dfl.make_task("shortest-path", 160, 4)
    torch.manual_seed(3)
    ours_model = torch.nn.Linear(5, 40).double()
    theirs_model = copy.deepcopy(ours_model)
    ours_step = torch.optim.Adam(ours_model.parameters(), lr=1e-2)
    theirs_step = torch.optim.Adam(theirs_model.parameters(), lr=1e-2)
    ours = PerturbationGradient(ILPLayer(0, 1, solver="gurobi", executor="serial"), sigma=0.1)
    theirs = pyepo.func.perturbationGradient(
        pyepo.model.grb.shortestPathModel(grid=(5, 5)), sigma=0.1
    )
    for first in range(0, 160, 32):
        x, c = task.x_train[first : first + 32], task.c_train[first : first + 32]
        ours_step.zero_grad()
        ours(ours_model(x), c, **task.constraints()).backward()
        ours_step.step()
        theirs_step.zero_grad()
        theirs(theirs_model(x), c).backward()
        theirs_step.step()
        for mine, other in zip(ours_model.parameters(), theirs_model.parameters()):
            torch.testing.assert_close(mine, other, atol=1e-10, rtol=0)
