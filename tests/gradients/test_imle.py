"""I-MLE and adaptive I-MLE (method="imle" | "aimle") against a reference written out here
with the exhaustive optimum, in both senses; the noise against PyEPO's sampler."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from ilplayer import ILPLayer
from ilplayer.gradients import IMLE, AdaptiveIMLE
from ilplayer.gradients.perturbation import sum_of_gamma
from tests.host_solvers import require
from tests.losses.test_pool_losses import FEASIBLE, A, B, N, argbest, data


def _reference(
    c: torch.Tensor,
    dy: torch.Tensor,
    sigma: float,
    samples: int,
    lam: float,
    two_sides: bool,
    seed: int,
    sense: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PyEPO's implicitMLEFunc, in the model's sense, with the exhaustive optimum."""
    noise = sum_of_gamma(
        (samples, *c.shape), 5.0, 10, torch.Generator().manual_seed(seed), c.device
    )
    sign = 1.0 if sense == "min" else -1.0
    # the layer perturbs the minimisation form (-c for max): its noise enters as -sigma Z there
    perturbed = c[None] + sign * sigma * noise
    solve = lambda costs: argbest(costs.reshape(-1, N), sense).reshape(costs.shape)
    y_samples = solve(perturbed)
    delta = lam * dy[None]
    if two_sides:
        grad = (solve(perturbed + sign * delta) - solve(perturbed - sign * delta)).mean(0) / (
            2 * lam + 1e-7
        )
        grad = sign * grad
    else:
        grad = sign * (solve(perturbed + sign * delta) - y_samples).mean(0) / (lam + 1e-7)
    return y_samples.mean(0), grad


@pytest.mark.parametrize("sense", ["min", "max"])
@pytest.mark.parametrize("two_sides", [False, True])
def test_imle_matches_the_reference(sense, two_sides):
    require("highs")
    sigma, samples, lam, seed = 0.7, 5, 2.0, 3
    layer = ILPLayer(
        0,
        1,
        solver="highs",
        executor="serial",
        sense=sense,
        method=IMLE(sigma=sigma, samples=samples, lambd=lam, two_sides=two_sides, seed=seed),
    )
    c, _ = data(4, seed=6)
    dy = torch.randn(4, N, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    pred = c.clone().requires_grad_(True)
    y = layer(pred, A, B)
    (got,) = torch.autograd.grad(y, pred, dy)
    y_ref, grad_ref = _reference(c, dy, sigma, samples, lam, two_sides, seed, sense)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(got, grad_ref)


def test_aimle_step_and_alpha_follow_pyepo():
    require("highs")
    method = AdaptiveIMLE(samples=3, seed=0)
    layer = ILPLayer(0, 1, solver="highs", executor="serial", method=method)
    c, _ = data(4, seed=2)
    dy = torch.randn(4, N, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    lam = float(torch.linalg.vector_norm(c) / torch.linalg.vector_norm(dy))  # alpha = 1
    pred = c.clone().requires_grad_(True)
    (got,) = torch.autograd.grad(layer(pred, A, B), pred, dy)
    noise = sum_of_gamma((3, 4, N), 5.0, 10, torch.Generator().manual_seed(0), c.device)
    perturbed = c[None] + noise
    moved = argbest((perturbed + lam * dy[None]).reshape(-1, N)).reshape(3, 4, N)
    base = argbest(perturbed.reshape(-1, N)).reshape(3, 4, N)
    torch.testing.assert_close(got, (moved - base).mean(0) / (lam + 1e-7))
    nonzero = float((got.abs() > 1e-7).double().mean())
    expected_alpha = 1.0 + 1e-3 if 0.9 + 0.1 * nonzero < 1 else 1.0 - 1e-3
    assert method.alpha == pytest.approx(expected_alpha)
    assert "method='aimle'" in repr(layer)


def test_imle_options_are_checked_and_shared_keywords_apply():
    with pytest.raises(ValueError, match="lambd must be a positive number"):
        IMLE(lambd=0)
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        ILPLayer(0, 1, solver="highs", method="imle", samples=0)
    layer = ILPLayer(0, 1, solver="highs", method="aimle", sigma=0.5, samples=4, seed=1)
    assert (layer.method.sigma, layer.method.samples, layer.method.seed) == (0.5, 4, 1)
    with pytest.raises(ValueError, match="noise applies to method='perturbed' only"):
        ILPLayer(0, 1, solver="highs", method="imle", noise="multiplicative")


def test_imle_backward_is_torch_on_the_meta_device():
    """The backward's maths never leaves torch: with the solves stubbed by exhaustive answers
    on meta tensors' shapes, the arithmetic runs on the meta device."""
    from ilplayer.gradients.base import MethodRun

    def solve(problem):
        shape = problem.c.shape
        y = torch.zeros(shape, dtype=torch.float64, device="meta")
        return (
            y,
            torch.zeros(shape[0], dtype=torch.int8, device="meta"),
            torch.zeros(shape[0], device="meta"),
        )

    run = MethodRun(solve=solve, threads=None)
    c = torch.zeros(2, N, device="meta", dtype=torch.float64, requires_grad=True)
    y, _ = IMLE(samples=2, two_sides=True).apply(
        run, c, A.to("meta"), B.to("meta"), 0, 1, None, None
    )
    (dc,) = torch.autograd.grad(y, c, torch.ones(2, N, device="meta", dtype=torch.float64))
    assert dc.device.type == "meta" and dc.shape == (2, N)


@pytest.mark.skipif(
    importlib.util.find_spec("pyepo") is None, reason="PyEPO is not installed ([pyepo] extra)"
)
def test_sum_of_gamma_is_pyepos_sampler():
    from pyepo.func.utils import sumGammaDistribution

    theirs = sumGammaDistribution(kappa=5, seed=7).sample(
        (3, 4, 6), device=torch.device("cpu"), dtype=torch.float64
    )
    ours = sum_of_gamma((3, 4, 6), 5.0, 10, torch.Generator().manual_seed(7), torch.device("cpu"))
    torch.testing.assert_close(ours, theirs)
    large = sum_of_gamma((200_000,), 5.0, 10, torch.Generator().manual_seed(0), torch.device("cpu"))
    # (Gumbel(0, 1) - ...) / kappa in the limit of many terms: mean Euler's gamma / kappa
    assert float(large.mean()) == pytest.approx(0.5772 / 5, abs=0.02) and math.isfinite(
        float(large.std())
    )
    assert FEASIBLE.shape[1] == N


def _imle_gradients(backend: str, executor: str) -> list[torch.Tensor]:
    Ai, Bi = (A * 10).round(), (B * 10).round()  # integer rows: CP-SAT's
    c, _ = data(4, seed=9)
    dy = torch.randn(4, N, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    grads = []
    for method in (
        IMLE(samples=3, lambd=1.0, seed=0),
        AdaptiveIMLE(samples=3, two_sides=True, seed=0),
    ):
        layer = ILPLayer(0, 1, solver=backend, executor=executor, method=method)
        pred = c.clone().requires_grad_(True)
        grads.append(torch.autograd.grad(layer(pred, Ai, Bi), pred, dy)[0])
        layer.close()
    return grads


@pytest.mark.parametrize("backend", ["highs", "gurobi", "scip", "cpsat", "pyomo:appsi_highs"])
@pytest.mark.parametrize("executor", ["serial", "workers"])
def test_imle_agrees_with_bruteforce_on_every_backend(backend, executor):
    from ilplayer.core.records import Capability

    solver = require(backend)
    if executor == "workers":
        executor = "threads" if Capability.RELEASES_GIL in solver.capabilities else "processes"
    for got, want in zip(
        _imle_gradients(backend, executor), _imle_gradients("bruteforce", "serial")
    ):
        torch.testing.assert_close(got, want)
