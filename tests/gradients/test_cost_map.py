"""``cost_map``: costs per entry of a decision that is not the program's variables (PyEPO's TSP:
one cost per edge; two arcs and a flow per edge). Checked against enumerating the tours in
the edges' own space, where PyEPO's methods live: the noise of the perturbed methods lands on
the edges, not on the program's variables."""

from __future__ import annotations

import copy
import itertools
import pickle

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.gradients import Perturbed
from ilplayer.losses import CaVE, FenchelYoung, PerturbationGradient, SPOPlus
from ilplayer.testing.formulations import tsp_program
from ilplayer_experiments import decision_focused as dfl
from tests.host_solvers import MILP_BACKENDS, require

NODES = 5


def tours(n: int) -> torch.Tensor:
    """Every tour from node 0 as its edges (tours, edges), edges in combinations order."""
    edge = {e: k for k, e in enumerate(itertools.combinations(range(n), 2))}
    rows = []
    for p in itertools.permutations(range(1, n)):
        if p[0] < p[-1]:
            tour, used = (0, *p), np.zeros(len(edge))
            for i, j in zip(tour, tour[1:] + tour[:1]):
                used[edge[(min(i, j), max(i, j))]] = 1
            rows.append(used)
    return torch.tensor(np.array(rows))


def best_tours(c: torch.Tensor, n: int = NODES) -> torch.Tensor:
    """The optimal tour's edges for each row of edge costs ``c`` (..., edges), by enumeration."""
    every = tours(n)
    return every[(c @ every.T).argmin(-1)]


def program(formulation: str = "gg"):
    p = tsp_program(NODES, formulation)
    t = lambda a: torch.tensor(a, dtype=torch.float64)
    constraints = {"A": t(p.A), "b": t(p.b), "A_eq": t(p.A_eq), "b_eq": t(p.b_eq)}
    return p, constraints, t(p.embed)


def edge_costs(batch: int, seed: int = 0) -> torch.Tensor:
    return (
        torch.rand(
            batch,
            NODES * (NODES - 1) // 2,
            generator=torch.Generator().manual_seed(seed),
            dtype=torch.float64,
        )
        + 0.5
    )


@pytest.mark.parametrize("formulation", ["gg", "mtz"])
@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_solve_reads_the_answer_through_the_map_on_every_milp_backend(formulation, backend):
    require(backend)
    p, constraints, embed = program(formulation)
    c = edge_costs(6)
    y, status = ilplayer.solve(
        c,
        lb=p.lb,
        ub=p.ub,
        integrality=p.integrality,
        solver=backend,
        cost_map=embed,
        **constraints,
    )
    assert y.shape == c.shape and (status == 0).all()
    assert torch.equal(y, best_tours(c))
    # the same as solving the program's costs and mapping the answer by hand
    y_program, _ = ilplayer.solve(
        c @ embed.T, lb=p.lb, ub=p.ub, integrality=p.integrality, solver=backend, **constraints
    )
    assert torch.equal(y, y_program @ embed)


def test_perturbed_layer_draws_its_noise_per_edge():
    require("highs")
    p, constraints, embed = program()
    c = edge_costs(4, seed=1).requires_grad_()
    samples, sigma = 6, 0.5
    layer = ilplayer.ILPLayer(
        p.lb,
        p.ub,
        solver="highs",
        integrality=p.integrality,
        cost_map=embed,
        method=Perturbed(sigma=sigma, samples=samples, seed=3),
    )
    y = layer(c, **constraints)
    dy = torch.randn(y.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    (y * dy).sum().backward()
    # Reference: the layer's noise stream, drawn in the edges' shape, solved by enumeration.
    noise = torch.randn(
        (len(c), samples, c.shape[-1]),
        generator=torch.Generator().manual_seed(3),
        dtype=torch.float64,
    ).transpose(0, 1)  # each row's samples drawn together
    w = best_tours(c.detach()[None] + sigma * noise)
    assert torch.allclose(y, w.mean(0))
    expected = ((w * dy[None]).sum(-1)[..., None] * noise).mean(0) / sigma
    assert torch.allclose(c.grad, expected)


def test_fenchel_young_loss_and_gradient_per_edge():
    require("gurobi")
    p, constraints, embed = program()
    c_pred = edge_costs(5, seed=2).requires_grad_()
    y_true = best_tours(edge_costs(5, seed=5))
    layer = ilplayer.ILPLayer(
        p.lb, p.ub, solver="gurobi", integrality=p.integrality, cost_map=embed, method="identity"
    )
    loss = FenchelYoung(layer, sigma=1.0, samples=7, seed=11)(c_pred, y_true, **constraints)
    loss.backward()
    noise = torch.randn(
        (len(c_pred), 7, c_pred.shape[-1]),
        generator=torch.Generator().manual_seed(11),
        dtype=torch.float64,
    ).transpose(0, 1)
    perturbed = c_pred.detach()[None] + noise
    w = best_tours(perturbed)
    expected = ((c_pred.detach() * y_true).sum(-1) - (perturbed * w).sum(-1).mean(0)).mean()
    assert torch.allclose(loss, expected)
    assert torch.allclose(c_pred.grad, (y_true - w.mean(0)) / len(c_pred))


@pytest.mark.parametrize("loss_name", ["spo+", "pg"])
def test_cost_losses_in_the_edges_space(loss_name):
    require("scip")
    p, constraints, embed = program("mtz")
    c_pred, c_true = edge_costs(4, seed=6).requires_grad_(), edge_costs(4, seed=7)
    layer = ilplayer.ILPLayer(
        p.lb, p.ub, solver="scip", integrality=p.integrality, cost_map=embed, method="identity"
    )
    if loss_name == "spo+":
        loss = SPOPlus(layer)(c_pred, c_true, **constraints)
        y_hat, y_star = best_tours(2 * c_pred.detach() - c_true), best_tours(c_true)
        expected = (
            ((c_true - 2 * c_pred.detach()) * y_hat + (2 * c_pred.detach() - c_true) * y_star)
            .sum(-1)
            .mean()
        )
    else:
        loss = PerturbationGradient(layer, sigma=0.1)(c_pred, c_true, **constraints)
        low = c_pred.detach() - 0.1 * c_true
        expected = (
            (
                (c_pred.detach() * best_tours(c_pred.detach())).sum(-1)
                - (low * best_tours(low)).sum(-1)
            )
            / 0.1
        ).mean()
    assert torch.allclose(loss, expected)
    loss.backward()
    assert c_pred.grad.shape == c_pred.shape


def test_the_map_travels_with_copies_and_pickles():
    require("highs")
    p, constraints, embed = program()
    layer = ilplayer.ILPLayer(
        p.lb, p.ub, solver="highs", integrality=p.integrality, cost_map=embed, method="blackbox"
    )
    c = edge_costs(3)
    for other in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert torch.equal(other.oracle.cost_map, embed)
        assert torch.equal(other(c, **constraints), best_tours(c))
        other.close()
    assert "cost_map=(40, 10)" in repr(layer)
    layer.close()


def test_a_pool_holds_decisions_per_edge():
    require("highs")
    p, constraints, embed = program()
    known = best_tours(edge_costs(20, seed=8))
    layer = ilplayer.ILPLayer(
        p.lb, p.ub, solver="highs", integrality=p.integrality, cost_map=embed, method="identity"
    )
    spo = SPOPlus(layer, solve_ratio=0.0, pool=known)
    c_pred, c_true = edge_costs(4, seed=9).requires_grad_(), edge_costs(4, seed=10)
    spo(c_pred, c_true, y_true=best_tours(c_true), **constraints).backward()
    assert spo.pool_rule.pooled_batches == 1 and c_pred.grad.shape == c_pred.shape
    other = ilplayer.ILPLayer(
        p.lb,
        p.ub,
        solver="highs",
        integrality=p.integrality,
        cost_map=2 * embed,
        method="identity",
    )
    with pytest.raises(ValueError, match="cost map"):
        SPOPlus(other, pool=spo.pool_rule)(c_pred, c_true, **constraints)


def test_bad_maps_are_refused_by_name():
    p, constraints, embed = program()
    c = edge_costs(2)
    solve = lambda **kw: ilplayer.solve(
        c, lb=p.lb, ub=p.ub, integrality=p.integrality, solver="highs", **constraints, **kw
    )
    with pytest.raises(ValueError, match=r"cost_map must have shape \(num_variables, num_costs\)"):
        solve(cost_map=embed[:, 0])
    with pytest.raises(ValueError, match="cost_map has 39 rows but A has 40 columns"):
        solve(cost_map=embed[1:])
    with pytest.raises(ValueError, match=r"c must have shape \(batch, 9\)"):
        solve(cost_map=embed[:, 1:])
    with pytest.raises(ValueError, match="cost_map must be finite"):
        solve(cost_map=embed * float("nan"))
    with pytest.raises(
        ValueError, match="cost_map: method='combopt' works in the program's own variables"
    ):
        ilplayer.ILPLayer(p.lb, p.ub, solver="highs", integrality=p.integrality, cost_map=embed)
    layer = ilplayer.ILPLayer(
        p.lb, p.ub, solver="highs", integrality=p.integrality, cost_map=embed, method="identity"
    )
    with pytest.raises(ValueError, match="CaVE: the layer has a cost_map"):
        CaVE(layer)


def test_perturbed_backward_with_a_map_stays_in_torch_on_meta():
    """The layer's forward runs on the host; its backward maths, fed meta tensors, never leave
    torch (the map only shapes what the solver sees)."""
    from ilplayer.gradients.perturbed import perturbed_gradient

    dy = torch.empty(3, 10, device="meta", dtype=torch.float64)
    y_samples = torch.empty(4, 3, 10, device="meta", dtype=torch.float64)
    noise = torch.empty(4, 3, 10, device="meta", dtype=torch.float64)
    solved = torch.ones(4, 3, device="meta", dtype=torch.bool)
    assert perturbed_gradient(dy, y_samples, noise, 1.0, solved).shape == (3, 10)


@pytest.mark.filterwarnings("ignore::ilplayer.errors.NoSignalWarning")  # combopt on equality rows
@pytest.mark.parametrize("method", ["pfyl", "combopt"])
def test_the_tsp_experiment_trains_per_edge(method):
    require("highs")
    task = dfl.make_task("tsp", 48, 24, nodes=NODES, formulation="gg")
    record = dfl.run_method(task, method, "highs", epochs=2, seed=0, executor="serial")
    assert np.isfinite(record["regret"]) and len(record["history"]) == 3


def test_cave_is_left_out_of_the_tsp_experiment_and_refused_by_name():
    task = dfl.make_task("tsp", 8, 8, nodes=NODES)
    assert not dfl.method_fits("cave", task) and dfl.method_fits("pfyl", task)
    with pytest.raises(ValueError, match="method 'cave' does not run on tsp"):
        dfl.run_method(task, "cave", "highs", epochs=1)
