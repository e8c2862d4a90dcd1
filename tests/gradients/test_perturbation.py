"""One Perturbation (noise kind, sigma, samples, seed) behind the perturbed layer, I-MLE and the
perturbed Fenchel-Young loss: its draws, its checks, and the loss fed a method object."""

from __future__ import annotations

import pickle

import pytest
import torch

from ilplayer import ILPLayer, Oracle, Program
from ilplayer.gradients import IMLE, Perturbation, Perturbed
from ilplayer.gradients.perturbation import standard_noise, sum_of_gamma
from ilplayer.losses import FenchelYoung
from tests.host_solvers import require
from tests.losses.test_pool_losses import A, B, N, argbest, data, row_noise


def test_draws_follow_the_seed_and_the_kind():
    first = Perturbation(sigma=0.5, samples=3, seed=4)
    again = Perturbation(sigma=0.5, samples=3, seed=4)
    torch.testing.assert_close(first.draw((2, N)), again.draw((2, N)), rtol=0, atol=0)
    assert not torch.equal(first.draw((2, N)), again.draw((5, N))[:, :2])  # the stream moves on
    torch.testing.assert_close(
        Perturbation(samples=3, seed=4).draw((2, N)), row_noise(3, 2, 4), rtol=0, atol=0
    )
    gamma = Perturbation(samples=3, seed=9, noise="sum-of-gamma", kappa=2.0, iterations=4)
    expected = sum_of_gamma((3, 2, N), 2.0, 4, torch.Generator().manual_seed(9))
    torch.testing.assert_close(gamma.draw((2, N)), expected, rtol=0, atol=0)


def test_perturbed_costs_are_additive_or_keep_the_sign():
    c = torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.float64)
    noise = standard_noise(4, (1, 3), torch.Generator().manual_seed(0))
    additive = Perturbation(sigma=0.3).perturb(c, noise)
    torch.testing.assert_close(additive, c[None] + 0.3 * noise)
    multiplicative = Perturbation(sigma=0.3, noise="multiplicative").perturb(c, noise)
    assert bool((torch.sign(multiplicative) == torch.sign(c)).all())
    costs, drawn = Perturbation(sigma=0.3, samples=4, seed=0).costs(c)
    torch.testing.assert_close(costs, c[None] + 0.3 * drawn)
    assert costs.shape == drawn.shape == (4, 1, 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sigma": 0}, "sigma must be a positive number"),
        ({"samples": 0}, "samples must be a positive integer"),
        ({"seed": 1.5}, "seed must be an integer or None"),
        ({"noise": "gumbel"}, "noise must be one of"),
        ({"kappa": 2.0}, "kappa shapes noise='sum-of-gamma' only"),
        (
            {"iterations": 3, "noise": "multiplicative"},
            "iterations shapes noise='sum-of-gamma' only",
        ),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Perturbation(**kwargs)


def test_the_methods_are_perturbations():
    assert isinstance(Perturbed(), Perturbation) and isinstance(IMLE(), Perturbation)
    assert IMLE().noise == "sum-of-gamma" and IMLE().samples == 10
    assert Perturbed().noise == "additive" and Perturbed().samples == 8
    with pytest.raises(ValueError, match="holds for Gaussian noise"):
        Perturbed(noise="sum-of-gamma")
    with pytest.raises(ValueError, match="kappa shapes"):
        Perturbed(kappa=3.0)
    copied = pickle.loads(pickle.dumps(Perturbed(sigma=0.5, seed=2)))
    assert copied == Perturbed(sigma=0.5, seed=2)


def test_fenchel_young_takes_a_perturbation_or_a_method_object():
    """The same settings as keywords, as a Perturbation and as a Perturbed method give the same
    loss and gradient (the same seeded draws)."""
    require("highs")
    oracle = Oracle(Program(A=A, b=B, lb=0, ub=1), solver="highs", executor="serial")
    c_pred, c_true = data(4, seed=3)
    y_true = argbest(c_true)
    results = []
    for loss in (
        FenchelYoung(oracle, sigma=0.5, samples=4, seed=7),
        FenchelYoung(oracle, perturbation=Perturbation(sigma=0.5, samples=4, seed=7)),
        FenchelYoung(oracle, perturbation=Perturbed(sigma=0.5, samples=4, seed=7)),
    ):
        pred = c_pred.clone().requires_grad_(True)
        value = loss(pred, y_true)
        results.append((value.detach(), torch.autograd.grad(value, pred)[0]))
    for value, grad in results[1:]:
        torch.testing.assert_close(value, results[0][0], rtol=0, atol=0)
        torch.testing.assert_close(grad, results[0][1], rtol=0, atol=0)
    with pytest.raises(ValueError, match="sigma: set it on the perturbation"):
        FenchelYoung(oracle, sigma=0.5, perturbation=Perturbation())
    with pytest.raises(TypeError, match="perturbation must be an ilplayer"):
        FenchelYoung(oracle, perturbation=0.5)


def test_imle_takes_any_noise_and_fenchel_young_takes_imles():
    require("highs")
    layer = ILPLayer(
        Oracle(Program(A=A, b=B, lb=0, ub=1), solver="highs", executor="serial"),
        IMLE(noise="additive", samples=4, seed=1),
    )
    c = data(3, seed=1)[0].requires_grad_(True)
    y = layer(c)
    (dc,) = torch.autograd.grad((y * torch.randn(3, N, dtype=torch.float64)).sum(), c)
    assert dc.shape == (3, N) and bool(torch.isfinite(dc).all())
    loss = FenchelYoung(layer.oracle, perturbation=IMLE(samples=4, seed=1))
    assert loss.perturbation.noise == "sum-of-gamma"
    assert torch.isfinite(loss(data(3, seed=2)[0], argbest(data(3, seed=2)[1])))
