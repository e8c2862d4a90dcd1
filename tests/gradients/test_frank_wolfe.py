"""method="frank-wolfe" (PyEPO's RFWO) and RegularizedFenchelYoung (RFY) against the exact
Euclidean projection onto the hull of the feasible points (a non-negative least squares here)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import nnls

from ilplayer import ILPLayer
from ilplayer.gradients import FrankWolfe
from ilplayer.gradients.frank_wolfe import face_projection
from ilplayer.losses import RegularizedFenchelYoung
from tests.host_solvers import require
from tests.losses.test_pool_losses import FEASIBLE, A, B, N, argbest, data


def hull_projection(theta: np.ndarray) -> np.ndarray:
    """argmin |mu - theta| over conv(FEASIBLE): weights >= 0 summing to 1, by NNLS with the
    sum as a heavily weighted row."""
    points = FEASIBLE.numpy()
    weight = 1e4
    matrix = np.vstack([points.T, weight * np.ones(len(points))])
    weights, _ = nnls(matrix, np.concatenate([theta, [weight]]), maxiter=10_000)
    return weights @ points


@pytest.mark.parametrize("sense", ["min", "max"])
def test_frank_wolfe_layer_is_the_projection_and_its_face_gradient(sense):
    require("highs")
    lam = 0.8
    layer = ILPLayer(
        0,
        1,
        solver="highs",
        executor="serial",
        sense=sense,
        method=FrankWolfe(lambd=lam, tol=1e-12, max_iter=5000),
    )
    c, _ = data(4, seed=3)
    pred = c.clone().requires_grad_(True)
    mu = layer(pred, A, B)
    sign = 1.0 if sense == "min" else -1.0
    exact = np.array([hull_projection(-sign * row / lam) for row in c.numpy()])
    np.testing.assert_allclose(mu.detach().numpy(), exact, atol=2e-4)
    assert (layer.last_status == 0).all()
    # the gradient: that of the projection, by central differences of the exact one
    dy = torch.randn(4, N, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    (got,) = torch.autograd.grad(mu, pred, dy)
    eps = 1e-4
    for i, j in [(0, 1), (2, 4), (3, 0)]:
        step = np.zeros(N)
        step[j] = eps
        high = hull_projection(-sign * (c[i].numpy() + step) / lam)
        low = hull_projection(-sign * (c[i].numpy() - step) / lam)
        numeric = float(dy[i].numpy() @ (high - low) / (2 * eps))
        assert got[i, j].item() == pytest.approx(numeric, abs=5e-3), (i, j)


def test_face_projection_projects_onto_the_vertex_differences():
    vertices = torch.tensor(
        [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]], dtype=torch.float64
    )
    weights = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)  # the edge between the first two
    dy = torch.tensor([[1.0, 0.0, 3.0]], dtype=torch.float64)
    torch.testing.assert_close(
        face_projection(vertices, weights, dy),
        torch.tensor([[0.5, -0.5, 0.0]], dtype=torch.float64),
        atol=1e-5,
        rtol=0,
    )


@pytest.mark.parametrize("sense", ["min", "max"])
def test_regularized_fenchel_young_matches_its_definition(sense):
    require("highs")
    lam = 1.5
    layer = ILPLayer(0, 1, solver="highs", executor="serial", sense=sense)
    loss = RegularizedFenchelYoung(layer, lambd=lam, tol=1e-12, max_iter=5000)
    c_pred, c_true = data(5, seed=8)
    y = argbest(c_true, sense)
    pred = c_pred.clone().requires_grad_(True)
    value = loss(pred, y, A, B)
    sign = 1.0 if sense == "min" else -1.0
    mu = torch.tensor(np.array([hull_projection(-sign * row / lam) for row in c_pred.numpy()]))
    omega = lambda v: 0.5 * lam * (v * v).sum(-1)
    expected = (omega(y) - omega(mu) + (sign * c_pred * (y - mu)).sum(-1)).mean()
    assert value.item() == pytest.approx(expected.item(), abs=1e-6)
    (got,) = torch.autograd.grad(value, pred)
    torch.testing.assert_close(got, sign * (y - mu) / 5, atol=2e-4, rtol=0)


def test_frank_wolfe_options_are_checked():
    with pytest.raises(ValueError, match="lambd must be a positive number"):
        FrankWolfe(lambd=-1)
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        FrankWolfe(max_iter=0)
    with pytest.raises(ValueError, match="lambd must be a positive number"):
        RegularizedFenchelYoung(ILPLayer(0, 1, solver="highs"), lambd=0)


@pytest.mark.parametrize("backend", ["gurobi", "scip", "cpsat", "pyomo:appsi_highs"])
def test_frank_wolfe_agrees_across_backends(backend):
    from ilplayer.core.records import Capability

    solver = require(backend)
    executor = "threads" if Capability.RELEASES_GIL in solver.capabilities else "processes"
    Ai, Bi = (A * 10).round(), (B * 10).round()
    c, _ = data(3, seed=5)
    results = []
    for name, ex in ((backend, executor), ("bruteforce", "serial")):
        layer = ILPLayer(0, 1, solver=name, executor=ex, method=FrankWolfe(tol=1e-9, max_iter=2000))
        pred = c.clone().requires_grad_(True)
        mu = layer(pred, Ai, Bi)
        results.append((mu.detach(), torch.autograd.grad(mu.sum(), pred)[0]))
        layer.close()
    torch.testing.assert_close(results[0][0], results[1][0], atol=1e-6, rtol=0)
    torch.testing.assert_close(results[0][1], results[1][1], atol=1e-4, rtol=0)
