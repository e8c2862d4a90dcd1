"""CaVE: the binding normals ilplayer finds itself, the cone projection (exact: its KKT
conditions; CaVE+: Clarabel's 3 steps), and the loss against PyEPO's on PyEPO's shortest path."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from ilplayer import ILPLayer
from ilplayer.losses import CaVE, binding_normals, cone_projection
from tests.host_solvers import require
from tests.losses.test_pool_losses import A, B, argbest, data


def test_binding_normals_are_the_tight_rows_equalities_and_bounds():
    layer = ILPLayer(0, 1, solver="bruteforce")
    A1 = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    A_eq = torch.tensor([[1.0, 0.0, 1.0]])
    problem = layer.oracle.min_problem(
        torch.zeros(1, 3), A1, torch.tensor([1.0, 2.0]), A_eq, torch.tensor([1.0])
    )
    normals = binding_normals(torch.tensor([[1.0, 0.0, 0.0]]), problem)[0]
    expected = {
        (1.0, 1.0, 0.0),
        (1.0, 0.0, 1.0),
        (-1.0, -0.0, -1.0),
        (1.0, 0.0, 0.0),
        (-0.0, -1.0, -0.0),
        (-0.0, -0.0, -1.0),
    }
    assert {tuple(row + 0.0) for row in normals} == {tuple(np.array(row) + 0.0) for row in expected}


def test_exact_cone_projection_meets_its_optimality_conditions():
    rng = np.random.default_rng(0)
    for _ in range(20):
        normals = rng.normal(size=(4, 6))
        v = rng.normal(size=6)
        p = cone_projection(v, normals)
        residual = v - p
        assert (normals @ residual <= 1e-9).all()  # v - p in the polar cone
        assert abs(p @ residual) <= 1e-9  # p is orthogonal to its residual


@pytest.mark.parametrize("sense", ["min", "max"])
def test_cave_loss_is_one_minus_the_cosine_to_the_projection(sense):
    require("highs")
    layer = ILPLayer(0, 1, solver="highs", executor="serial", sense=sense)
    c_pred, c_true = data(4, seed=1)
    y = argbest(c_true, sense)
    pred = c_pred.clone().requires_grad_(True)
    value = CaVE(layer)(pred, y, A, B)
    sign = 1.0 if sense == "min" else -1.0
    problem = layer.oracle.min_problem(c_pred, A, B)
    normals = binding_normals(y, problem)
    signed = -sign * c_pred
    target = torch.from_numpy(
        np.stack([cone_projection(v, n) for v, n in zip(signed.numpy(), normals)])
    )
    expected = (1 - torch.nn.functional.cosine_similarity(signed, target, dim=1)).mean()
    assert value.item() == pytest.approx(expected.item(), abs=1e-12)
    value.backward()
    assert torch.isfinite(pred.grad).all() and pred.grad.abs().sum() > 0


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("pyepo", "gurobipy", "clarabel")),
    reason="needs PyEPO with its Gurobi model and clarabel ([pyepo] extra, gurobipy)",
)
def test_cave_plus_matches_pyepos_cave_on_the_shortest_path():
    import pyepo

    from ilplayer_experiments import decision_focused as dfl

    task = dfl.make_task("shortest-path", 16, 4)
    optmodel = pyepo.model.grb.shortestPathModel(grid=(5, 5))
    dataset = pyepo.data.dataset.optDatasetConstrs(
        optmodel, task.x_train.numpy(), task.c_train.numpy()
    )
    tight = torch.nn.utils.rnn.pad_sequence(
        [torch.as_tensor(t) for t in dataset.ctrs], batch_first=True
    )
    c_pred = torch.randn(16, 40, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    theirs = pyepo.func.coneAlignedCosine(optmodel)(c_pred, tight)
    layer = ILPLayer(0, 1, solver="gurobi", executor="serial")
    y_true = torch.as_tensor(np.asarray(dataset.sols), dtype=torch.float64)
    ours = CaVE(layer, max_iter=3)(c_pred, y_true, **task.constraints())
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-4)
    exact = CaVE(layer)(c_pred, y_true, **task.constraints())
    assert exact.item() != pytest.approx(ours.item(), abs=1e-6)  # CaVE+ stops inside the cone
