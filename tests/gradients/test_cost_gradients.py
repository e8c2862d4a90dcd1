"""Learning costs: blackbox, identity and perturbed gradients, maximisation, SPO+ and
Fenchel-Young, checked against their formulas with exhaustive enumeration as the solver."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.gradients import perturbed_gradient
from ilplayer.losses import FenchelYoung, SPOPlus
from ilplayer.metrics import regret

A = torch.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)  # choose at most two of four
B = torch.tensor([2.0], dtype=torch.float64)


def argmin(c: torch.Tensor) -> torch.Tensor:
    points = torch.tensor(list(itertools.product([0, 1], repeat=4)), dtype=torch.float64)
    points = points[(points @ A.T <= B).all(1)]
    return points[(c @ points.T).argmin(-1)]


def costs(seed: int = 0, batch: int = 5) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).uniform(-1, 1, (batch, 4)))


def test_identity_gradient_is_minus_the_incoming_one_and_plus_when_maximising():
    c = costs().requires_grad_()
    dy = torch.randn(5, 4, dtype=torch.float64)
    y = ilplayer.ILPLayer(0, 1, method="identity")(c, A, B)
    assert torch.equal(y, argmin(c.detach()))
    (dc,) = torch.autograd.grad(y, c, dy)
    assert torch.equal(dc, -dy)
    y = ilplayer.ILPLayer(0, 1, method="identity", sense="max")(c, A, B)
    assert torch.equal(y, argmin(-c.detach()))  # the maximiser
    (dc,) = torch.autograd.grad(y, c, dy)
    assert torch.equal(dc, dy)


def test_blackbox_gradient_matches_the_interpolation_formula():
    c = costs(1).requires_grad_()
    dy = torch.randn(5, 4, dtype=torch.float64)
    layer = ilplayer.ILPLayer(0, 1, method="blackbox", blackbox_lambda=3.0)
    y = layer(c, A, B)
    (dc,) = torch.autograd.grad(y, c, dy)
    moved = argmin(c.detach() + 3.0 * dy)
    torch.testing.assert_close(dc, -(y.detach() - moved) / 3.0)


def test_perturbed_forward_is_a_mean_of_solutions_and_its_gradient_the_score_estimate():
    c = costs(2).requires_grad_()
    layer = ilplayer.ILPLayer(0, 1, method="perturbed", sigma=0.5, samples=16, seed=7)
    y = layer(c, A, B)
    assert ((y >= 0) & (y <= 1)).all() and (y.sum(-1) <= 2 + 1e-9).all()
    # the same noise again: a fresh generator with the same seed, each row's samples together
    noise = torch.randn(
        (5, 16, 4), generator=torch.Generator().manual_seed(7), dtype=torch.float64
    ).transpose(0, 1)
    samples = torch.stack([argmin(c.detach() + 0.5 * z) for z in noise])
    torch.testing.assert_close(y, samples.mean(0))
    dy = torch.randn(5, 4, dtype=torch.float64)
    (dc,) = torch.autograd.grad(y, c, dy)
    expected = ((samples * dy).sum(-1)[..., None] * noise).mean(0) / 0.5
    torch.testing.assert_close(dc, expected)


def test_perturbed_gradient_is_pure_torch():
    meta = torch.device("meta")
    out = perturbed_gradient(
        torch.empty(3, 4, device=meta),
        torch.empty(2, 3, 4, device=meta),
        torch.empty(2, 3, 4, device=meta),
        1.0,
        torch.empty(2, 3, dtype=torch.bool, device=meta),
    )
    assert out.shape == (3, 4) and out.device.type == "meta"


def test_spo_plus_value_and_gradient_follow_elmachtoub_and_grigas():
    c_true, c_pred = costs(3), costs(4).requires_grad_()
    layer = ilplayer.ILPLayer(0, 1)
    loss = SPOPlus(layer)(c_pred, c_true, A, B)
    w_true, w_hat = argmin(c_true), argmin(2 * c_pred.detach() - c_true)
    expected = (
        ((c_true - 2 * c_pred.detach()) * w_hat).sum(-1)
        + 2 * (c_pred.detach() * w_true).sum(-1)
        - (c_true * w_true).sum(-1)
    )
    torch.testing.assert_close(loss, expected.mean())
    (grad,) = torch.autograd.grad(loss, c_pred)
    torch.testing.assert_close(grad, 2 * (w_true - w_hat) / 5)
    # SPO+ bounds the regret from above and is 0 at the true costs
    regret_value = ((c_true * argmin(c_pred.detach())).sum(-1) - (c_true * w_true).sum(-1)).mean()
    assert loss.item() >= regret_value.item() - 1e-12
    assert SPOPlus(layer)(c_true, c_true, A, B).item() == pytest.approx(0.0, abs=1e-12)


def test_spo_plus_when_maximising_is_the_loss_on_negated_costs():
    c_true, c_pred = costs(5), costs(6)
    maximise = SPOPlus(ilplayer.ILPLayer(0, 1, sense="max"))(c_pred, c_true, A, B)
    minimise = SPOPlus(ilplayer.ILPLayer(0, 1))(-c_pred, -c_true, A, B)
    torch.testing.assert_close(maximise, minimise)


def test_fenchel_young_gradient_is_the_target_minus_the_perturbed_mean():
    c_pred = costs(8).requires_grad_()
    y_true = argmin(costs(9))
    loss = FenchelYoung(ilplayer.ILPLayer(0, 1), sigma=0.5, samples=32, seed=3)(
        c_pred, y_true, A, B
    )
    noise = torch.randn(
        (5, 32, 4), generator=torch.Generator().manual_seed(3), dtype=torch.float64
    ).transpose(0, 1)
    samples = torch.stack([argmin(c_pred.detach() + 0.5 * z) for z in noise])
    (grad,) = torch.autograd.grad(loss, c_pred)
    torch.testing.assert_close(grad, (y_true - samples.mean(0)) / 5)
    assert loss.item() > -1e-9  # Fenchel-Young losses are non-negative (here, per sample mean)


@pytest.mark.filterwarnings("ignore::ilplayer.errors.NoSignalWarning")
@pytest.mark.parametrize("gradient", ["combopt", "blackbox", "identity", "perturbed"])
def test_an_input_that_requires_grad_but_gets_none_is_named_once_per_layer(gradient):
    A_learnt, b_learnt = A.clone().requires_grad_(), B.clone().requires_grad_()
    A_eq = torch.ones(1, 4, dtype=torch.float64, requires_grad=True)
    b_eq = torch.ones(1, dtype=torch.float64)
    layer = ilplayer.ILPLayer(0, 1, method=gradient)
    with pytest.warns(ilplayer.errors.NoGradientWarning) as caught:
        layer(costs(12), A_learnt, b_learnt, A_eq, b_eq).sum().backward()
    messages = [str(w.message) for w in caught if w.category is ilplayer.errors.NoGradientWarning]
    expected = ["A_eq"] if gradient == "combopt" else ["A", "b", "A_eq"]
    assert [m.split(" requires grad")[0].split(": ")[-1] for m in messages] == expected
    assert all(w.filename == __file__ for w in caught)
    if gradient != "combopt":
        assert "only method='combopt' gives one" in messages[0]
    assert "no method gives one" in messages[-1]
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error", ilplayer.errors.NoGradientWarning
        )  # once per layer and argument
        layer(costs(13), A_learnt, b_learnt, A_eq, b_eq)
        with torch.no_grad():  # nothing is lost where no gradient is wanted
            ilplayer.ILPLayer(0, 1, method=gradient)(costs(13), A_learnt, b_learnt, A_eq, b_eq)


def test_a_regret_loss_through_combopt_warns_once_that_it_carries_no_signal():
    # x1 + x2 = 1 as two tight rows: every CombOptNet target is infeasible or unchanged
    A_eq = torch.tensor([[1.0, 1.0], [-1.0, -1.0]], dtype=torch.float64)
    b_eq = torch.tensor([1.0, -1.0], dtype=torch.float64)
    c_true = torch.tensor([[1.0, 2.0], [3.0, 1.0]], dtype=torch.float64)
    c_pred = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64, requires_grad=True)
    layer = ilplayer.ILPLayer(0, 1)
    with pytest.warns(
        ilplayer.errors.NoSignalWarning, match="method='blackbox', 'identity' or 'perturbed'"
    ) as caught:
        (c_true * layer(c_pred, A_eq, b_eq)).sum().backward()
    assert not c_pred.grad.any()
    assert caught[0].filename == __file__  # the user's line, not torch's
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per layer
        (c_true * layer(c_pred, A_eq, b_eq)).sum().backward()
    # the same loss through the blackbox gradient moves the costs
    c_pred.grad = None
    (c_true * ilplayer.ILPLayer(0, 1, method="blackbox")(c_pred, A_eq, b_eq)).sum().backward()
    assert c_pred.grad.any()


def test_layer_reports_objectives_in_its_sense_and_refuses_bad_settings():
    c = costs(10)
    layer = ilplayer.ILPLayer(0, 1, sense="max")
    y = layer(c, A, B)
    torch.testing.assert_close(layer.last_objective, (c * y).sum(-1))
    assert regret(c, y, argmin(-c), sense="max") == pytest.approx(0.0)
    assert ilplayer.ILPLayer(0, 1, sense="MAX").sense == "max"  # any case, like solver names
    for kwargs, message in (
        ({"sense": "maximise"}, "sense must be 'min' or 'max'"),
        ({"method": "spo"}, "method must be one of"),
        ({"sigma": 0, "method": "perturbed"}, "sigma must be a positive number"),
        ({"samples": 0, "method": "perturbed"}, "samples must be a positive integer"),
        ({"blackbox_lambda": -1, "method": "blackbox"}, "lambd must be a positive number"),
        ({"blackbox_lambda": 5}, "blackbox_lambda applies to method='blackbox' only"),
        (
            {"seed": 0, "method": "blackbox"},
            "seed applies to method='perturbed' or 'imle' or 'aimle' only",
        ),
        ({"samples": 4, "method": "identity"}, "samples applies to method='perturbed'"),
        ({"tau": 1.0, "method": "perturbed"}, "tau applies to method='combopt' only"),
        ({"basis": "canonical", "method": "blackbox"}, "basis applies to method='combopt'"),
    ):
        with pytest.raises(ValueError, match=message):
            ilplayer.ILPLayer(0, 1, **kwargs)


@pytest.mark.parametrize("executor", ["serial", "threads", "processes"])
@pytest.mark.parametrize("gradient", ["blackbox", "perturbed"])
def test_cost_methods_solve_their_extra_batches_on_every_executor(executor, gradient):
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a backend that runs in worker pools (ilplayer-highs)")
    c = costs(11, batch=6).requires_grad_()
    options = {"samples": 4, "seed": 0} if gradient == "perturbed" else {}
    layer = ilplayer.ILPLayer(
        0, 1, solver="highs", method=gradient, executor=executor, workers=2, **options
    )
    try:
        y = layer(c, A, B)
        (dc,) = torch.autograd.grad(y, c, torch.ones_like(y))
    finally:
        layer.close()
    reference = ilplayer.ILPLayer(0, 1, method=gradient, **options)
    (expected,) = torch.autograd.grad(reference(c, A, B), c, torch.ones_like(y))
    torch.testing.assert_close(dc, expected)  # same answers, same gradient, whatever the pool


def test_perturbed_samples_repeat_per_instance_constraints():
    c_pred, y_true = costs(12), argmin(costs(13))
    shared = FenchelYoung(ilplayer.ILPLayer(0, 1), sigma=0.5, samples=4, seed=1)(
        c_pred, y_true, A, B
    )
    per_instance = FenchelYoung(ilplayer.ILPLayer(0, 1), sigma=0.5, samples=4, seed=1)(
        c_pred, y_true, A.expand(5, -1, -1).numpy(), B.expand(5, -1).numpy()
    )
    torch.testing.assert_close(per_instance, shared)
    layer = ilplayer.ILPLayer(0, 1, method="perturbed", samples=4, seed=1)
    torch.testing.assert_close(
        layer(c_pred, A.expand(5, -1, -1), B.expand(5, -1)),
        ilplayer.ILPLayer(0, 1, method="perturbed", samples=4, seed=1)(c_pred, A, B),
    )
    with pytest.raises(ValueError, match=r"c must have shape \(10, 4\) for 2 copies"):
        ilplayer.core.validation.validate_problem(c_pred, A, B, 0, 1).repeat(2, c_pred)


def test_a_method_object_is_the_same_as_its_name_with_the_layers_keywords():
    from ilplayer.gradients import Blackbox, CombOptNet, Perturbed

    c = costs(14).requires_grad_()
    pairs = [
        (
            ilplayer.ILPLayer(0, 1, method="perturbed", sigma=0.5, samples=4, seed=1),
            ilplayer.ILPLayer(0, 1, method=Perturbed(sigma=0.5, samples=4, seed=1)),
        ),
        (
            ilplayer.ILPLayer(0, 1, method="blackbox", blackbox_lambda=3.0),
            ilplayer.ILPLayer(0, 1, method=Blackbox(lambd=3.0)),
        ),
        (ilplayer.ILPLayer(0, 1, tau=None), ilplayer.ILPLayer(0, 1, method=CombOptNet(tau=None))),
    ]
    weights = torch.arange(4.0, dtype=torch.float64)
    for by_name, by_object in pairs:
        assert by_name.gradient == by_object.gradient and repr(by_name) == repr(by_object)
        grads = [
            torch.autograd.grad((layer(c, A, B) * weights).sum(), c)[0]
            for layer in (by_name, by_object)
        ]
        torch.testing.assert_close(grads[0], grads[1])
    with pytest.raises(
        ValueError, match="sigma is an option of the gradient method: set it on the object"
    ):
        ilplayer.ILPLayer(0, 1, method=Perturbed(), sigma=2.0)
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        Perturbed(sigma=-1)
    with pytest.raises(ValueError, match="method must be one of"):
        ilplayer.ILPLayer(0, 1, method=object())


def test_lambd_is_one_name_for_the_step_of_every_method_that_has_one():
    # PyEPO's name: what a PyEPO user types works on each method that has the weight
    from ilplayer.gradients import IMLE, Blackbox, FrankWolfe

    for gradient, kind, value in (
        ("blackbox", Blackbox, 3.0),
        ("frank-wolfe", FrankWolfe, 0.5),
        ("imle", IMLE, 2.0),
    ):
        layer = ilplayer.ILPLayer(lb=0, ub=1, method=gradient, lambd=value)
        assert isinstance(layer.method, kind) and layer.method.lambd == value
    assert ilplayer.ILPLayer(lb=0, ub=1, method="blackbox", blackbox_lambda=4.0).method.lambd == 4.0
    with pytest.raises(ValueError, match="both set blackbox's lambd: give one"):
        ilplayer.ILPLayer(lb=0, ub=1, method="blackbox", lambd=3.0, blackbox_lambda=4.0)
    with pytest.raises(ValueError, match="lambd"):
        ilplayer.ILPLayer(lb=0, ub=1, lambd=1.0)  # CombOptNet has no such step


def test_losses_refuse_a_y_true_that_is_not_the_programs_decisions():
    # FenchelYoung took a fractional y_true on a binary program and trained on it.
    oracle = ilplayer.Oracle(ilplayer.Program(lb=0, ub=1), solver="bruteforce")
    c = torch.randn(2, 4)
    A, b = torch.ones(1, 4), torch.tensor([2.0])
    with pytest.raises(
        ValueError, match=r"FenchelYoung: y_true .* integral .* row 0, variable 1 is 0.5"
    ):
        FenchelYoung(oracle)(c, torch.tensor([[1.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]), A, b)
    with pytest.raises(
        ValueError, match=r"SPOPlus: y_true .* inside the program's box .* row 1, variable 0 is 2"
    ):
        SPOPlus(oracle)(
            c, torch.randn(2, 4), A, b, y_true=torch.tensor([[1.0, 0, 0, 0], [2.0, 0, 0, 0]])
        )
    relaxed = ilplayer.Oracle(
        ilplayer.Program(lb=0, ub=1, integrality=[0, 0, 0, 0]), solver="highs"
    )
    FenchelYoung(relaxed)(
        c, torch.full((2, 4), 0.5), A, b
    )  # continuous variables: fractional is fine
