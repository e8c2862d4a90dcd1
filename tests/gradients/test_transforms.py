"""torch.func over ILPLayer: grad and vjp run the methods' torch backward; vmap solves the
mapped calls as one batch; grad(vmap(f)) works, vmap(grad(f)) is refused with what to do."""

from __future__ import annotations

import pytest
import torch

import ilplayer

METHODS = [
    "combopt",
    "blackbox",
    "identity",
    "frank-wolfe",
]  # deterministic: the same draws each call


def setting(
    method: str,
) -> tuple[ilplayer.ILPLayer, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    layer = ilplayer.ILPLayer(
        ilplayer.Oracle(ilplayer.Program(lb=0, ub=2), solver="bruteforce"), method
    )
    c = torch.randn(6, 4, dtype=torch.float64, generator=g)
    A = torch.randn(6, 2, 4, dtype=torch.float64, generator=g)
    b = torch.rand(6, 2, dtype=torch.float64, generator=g) + 1.0
    weights = torch.randn(4, dtype=torch.float64, generator=g)
    return layer, c, A, b, weights


def eager_grads(layer, c, A, b, weights):
    c, A = c.clone().requires_grad_(), A.clone().requires_grad_(layer.method.constraint_gradients)
    ((layer(c, A, b) - 1.0) ** 2 * weights).sum().backward()
    return c.grad, A.grad


@pytest.mark.parametrize("method", METHODS)
def test_grad_and_vjp_equal_the_eager_backward(method):
    layer, c, A, b, weights = setting(method)
    loss = lambda cc, AA: ((layer(cc, AA, b) - 1.0) ** 2 * weights).sum()
    dc_eager, dA_eager = eager_grads(layer, c, A, b, weights)
    if method == "combopt":  # the constraints' gradient too
        dc, dA = torch.func.grad(loss, argnums=(0, 1))(c, A)
        assert dA_eager.abs().sum() > 0 and torch.equal(dA, dA_eager)
    else:
        dc = torch.func.grad(loss)(c, A)
    assert torch.equal(dc, dc_eager)
    y, pull = torch.func.vjp(lambda cc: layer(cc, A, b), c)
    assert torch.equal(y, layer(c, A, b))
    assert pull(torch.ones_like(y))[0].shape == c.shape


@pytest.mark.parametrize("method", METHODS)
def test_vmap_solves_the_mapped_calls_as_the_batch_does(method):
    layer, c, A, b, weights = setting(method)
    batch = layer(c, A, b)
    one_each = torch.func.vmap(lambda cc, AA, bb: layer(cc[None], AA, bb)[0])(
        c, A, b
    )  # one instance per call
    assert torch.equal(one_each, batch)
    groups = torch.func.vmap(layer)(c.reshape(2, 3, 4), A.reshape(2, 3, 2, 4), b.reshape(2, 3, 2))
    assert torch.equal(groups.reshape(6, 4), batch)
    shared = torch.func.vmap(layer, in_dims=(0, None, None))(
        c.reshape(3, 2, 4), A[0], b[0]
    )  # rows not mapped
    assert torch.equal(shared.reshape(6, 4), layer(c, A[0], b[0]))
    # Gradients through the vmapped forward, eager or by grad(vmap(f)), equal the batch's.
    dc_eager, _ = eager_grads(layer, c, A, b, weights)
    mapped_loss = lambda cc: (
        (torch.func.vmap(layer)(cc, A.reshape(2, 3, 2, 4), b.reshape(2, 3, 2)) - 1.0) ** 2 * weights
    ).sum()
    assert torch.equal(torch.func.grad(mapped_loss)(c.reshape(2, 3, 4)).reshape(6, 4), dc_eager)
    leaf = c.reshape(2, 3, 4).clone().requires_grad_()
    mapped_loss(leaf).backward()
    assert torch.equal(leaf.grad.reshape(6, 4), dc_eager)


def test_per_example_gradients_by_vmap_of_grad_are_refused_saying_what_to_do():
    layer, c, A, b, weights = setting("combopt")
    per_example = torch.func.vmap(
        torch.func.grad(lambda cc, AA, bb: (layer(cc[None], AA, bb) * weights).sum())
    )
    with pytest.raises(
        RuntimeError,
        match=r"vmap\(grad\(f\)\).* not supported; .*each row of c.grad is its "
        r"instance's gradient",
    ):
        per_example(c, A, b)
    from ilplayer.gradients.base import vmapped

    with pytest.raises(ValueError, match=r"lb, ub: torch\.func\.vmap maps over c, A, b"):
        vmapped(
            2,
            (0, None, None, 0, None, None, None, None, None, None, None),
            c,
            A,
            b,
            None,
            None,
            None,
            None,
            (),
            None,
            None,
            None,
        )


def test_the_cost_losses_under_grad_equal_their_eager_backward():
    g = torch.Generator().manual_seed(5)
    program = ilplayer.Program(
        lb=0, ub=1, A=torch.ones(1, 5, dtype=torch.float64), b=torch.tensor([2.0])
    )
    oracle = ilplayer.Oracle(program, solver="bruteforce")
    c = torch.randn(4, 5, dtype=torch.float64, generator=g)
    c_true = torch.randn(4, 5, dtype=torch.float64, generator=g)
    y_true = oracle(c_true)[0]
    losses = {
        "spo+": lambda: (ilplayer.losses.SPOPlus(ilplayer.ILPLayer(oracle, "identity")), c_true),
        "fenchel-young": lambda: (
            ilplayer.losses.FenchelYoung(oracle, sigma=0.5, samples=3, seed=0),
            y_true,
        ),
    }
    for name, make in losses.items():
        loss, target = make()
        by_grad = torch.func.grad(lambda cc, loss=loss, target=target: loss(cc, target))(c)
        loss, target = make()  # the same noise draws
        leaf = c.clone().requires_grad_()
        loss(leaf, target).backward()
        assert torch.equal(by_grad, leaf.grad), name


def test_torch_compile_of_a_model_holding_a_layer_leaves_the_solve_untraced():
    import logging
    import warnings

    layer, c, A, b, weights = setting("combopt")
    loss = ilplayer.losses.SPOPlus(
        ilplayer.ILPLayer(
            ilplayer.Oracle(ilplayer.Program(lb=0, ub=2, A=A[0], b=b[0]), solver="bruteforce"),
            "identity",
        )
    )
    net = torch.nn.Linear(3, 4, dtype=torch.float64)
    x = torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def step(features: torch.Tensor) -> torch.Tensor:
        costs = net(features)
        return ((layer(costs, A, b) - 1.0) ** 2 * weights).sum() + loss(costs, c)

    logged: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = logged.append  # type: ignore[method-assign]
    dynamo = logging.getLogger("torch._dynamo")  # torch's loggers do not propagate to the root
    dynamo.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = torch.compile(step, backend="eager")(x)
    finally:
        dynamo.removeHandler(handler)
    # dynamo used to try the solve line by line: a warning and a logged traceback per line it could not trace
    assert not [w for w in caught if "Dynamo" in str(w.message)]
    assert not logged
    assert torch.equal(compiled, step(x))
    grads = torch.autograd.grad(compiled, net.weight)[0]
    assert torch.equal(grads, torch.autograd.grad(step(x), net.weight)[0])
