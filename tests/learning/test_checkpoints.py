"""A module holding an ILPLayer survives the ways a training script copies and saves it:
``copy.deepcopy`` (best-checkpoint), ``pickle``, ``torch.save``/``torch.load`` and a
``state_dict`` round trip, on every installed backend and executor, before and after a forward
pass. The copies build their own backends and pools and answer exactly as the original."""

from __future__ import annotations

import concurrent.futures
import copy
import io
import pickle

import pytest
import torch

import ilplayer

BACKENDS = ["bruteforce", "highs", "gurobi", "cpsat", "scip", "pyomo:appsi_highs"]
# A processes copy carries the backend's name and settings, not its model, to new workers: the
# same path for every backend, so two of them (a plugin and the Pyomo bridge) stand for the rest.
PROCESS_BACKENDS = ("highs", "pyomo:appsi_highs")


def problem(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    c = torch.randn(6, 8, generator=generator, dtype=torch.float64)
    A = torch.rand(2, 8, generator=generator, dtype=torch.float64)
    return c, A, torch.full((2,), 2.5, dtype=torch.float64)


def need(backend: str) -> None:
    try:
        ilplayer.get_solver(backend).close()
    except (ilplayer.SolverNotInstalledError, ilplayer.UnknownSolverError) as exc:
        pytest.skip(f"backend {backend!r} is not installed: {exc}")


def saved_and_loaded(module: torch.nn.Module) -> torch.nn.Module:
    buffer = io.BytesIO()
    torch.save(module, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


COPIES = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda m: pickle.loads(pickle.dumps(m)),
    "torch.save": saved_and_loaded,
}


@pytest.mark.parametrize("executor", ["serial", "threads", "processes"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_copies_answer_as_the_original_on_every_backend_and_executor(backend, executor):
    need(backend)
    if executor == "threads" and backend.startswith("pyomo"):
        pytest.skip("the Pyomo bridge holds the GIL: executor='threads' is refused for it")
    if executor == "processes" and backend not in PROCESS_BACKENDS:
        pytest.skip(f"processes copies are checked on {', '.join(PROCESS_BACKENDS)}: the same path")
    c, A, b = problem()
    # one process a pool: each copy starts its own, and a worker's start (an interpreter
    # importing torch) is what this test pays for, not the solve
    layer = ilplayer.ILPLayer(
        0, 1, solver=backend, executor=executor, workers=1 if executor == "processes" else 2
    )
    copies = {"before a forward pass": copy.deepcopy(layer)}
    # every copy of a processes layer starts its own pool: pickle and torch.save copy by the same
    # state (__getstate__), so one of them stands for both there
    kinds = (
        COPIES
        if executor != "processes"
        else {name: COPIES[name] for name in ("deepcopy", "torch.save")}
    )
    try:
        y = layer(c, A, b)
        copies.update({name: make(layer) for name, make in kinds.items()})
        for name, other in copies.items():
            assert torch.equal(other(c, A, b), y), name
            assert torch.equal(other.last_status, layer.last_status), name
            assert other.oracle.solver is not layer.oracle.solver, name
    finally:
        for other in (layer, *copies.values()):
            other.close()
            other.close()  # twice is safe


@pytest.mark.parametrize("gradient", ["combopt", "blackbox", "identity", "perturbed"])
def test_a_model_with_a_layer_copies_with_its_gradients_and_noise_stream(gradient):
    backend = "highs" if "highs" in ilplayer.available_solvers() else "bruteforce"
    c, A, b = problem(1)
    options = {"seed": 3, "samples": 4} if gradient == "perturbed" else {}
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 8).double(),
        ilplayer.ILPLayer(0, 1, solver=backend, method=gradient, **options),
    )
    layer = model[1]

    def step(module: torch.nn.Sequential) -> tuple[torch.Tensor, torch.Tensor]:
        x = c.clone().requires_grad_()
        y = module[1](module[0](x), A, b)
        (grad,) = torch.autograd.grad((y * torch.arange(8.0, dtype=y.dtype)).sum(), x)
        return y, grad

    step(model)  # the copies start from a used layer (and, for perturbed, a moved noise stream)
    copies = [make(model) for make in COPIES.values()]
    expected = step(model)
    for other in copies:
        got = step(other)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    fresh = torch.nn.Sequential(
        torch.nn.Linear(8, 8).double(),
        ilplayer.ILPLayer(0, 1, solver=backend, method=gradient, **options),
    )
    fresh.load_state_dict(model.state_dict())
    assert torch.equal(fresh[0].weight, model[0].weight)
    for other in (layer, *[m[1] for m in copies], fresh[1]):
        other.close()


def test_a_layer_is_a_context_manager_and_rebuilds_after_close():
    c, A, b = problem(2)
    with ilplayer.ILPLayer(0, 1) as layer:
        y = layer(c, A, b)
    layer.close()
    assert torch.equal(layer(c, A, b), y)  # closed: the next forward pass builds it again
    layer.close()


def test_a_layer_with_your_own_pool_shares_it_on_deepcopy_and_refuses_pickle():
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a backend that runs in worker pools (ilplayer-highs)")
    c, A, b = problem(3)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        layer = ilplayer.ILPLayer(0, 1, solver="highs", executor=pool)
        y = layer(c, A, b)
        twin = copy.deepcopy(layer)
        assert (
            twin.oracle.executor is layer.oracle.executor
            and twin.oracle.solver is not layer.oracle.solver
        )
        assert torch.equal(twin(c, A, b), y)
        with pytest.raises(TypeError, match="your own executor object cannot be pickled"):
            pickle.dumps(layer)
        twin.close()
        layer.close()


def test_a_solver_object_copies_as_a_new_solver_with_the_same_options():
    solver = ilplayer.get_solver("bruteforce", max_points=1 << 12)
    for clone in (copy.deepcopy(solver), pickle.loads(pickle.dumps(solver))):
        assert type(clone) is type(solver) and clone is not solver
        assert clone.max_points == 1 << 12
    layer = ilplayer.ILPLayer(0, 1, solver=solver)
    c, A, b = problem(4)
    assert torch.equal(pickle.loads(pickle.dumps(layer))(c, A, b), layer(c, A, b))


@pytest.mark.parametrize("release", ["v0.1.0"])
def test_layers_saved_by_a_tagged_release_load_and_answer_the_same(release):
    # Written by `python scripts/save_checkpoints.py tests/data/layers-<release>.pt` with the
    # library at that tag (`git worktree add /tmp/rel <release>`, it first on PYTHONPATH).
    from pathlib import Path

    for backend in ("highs", "bruteforce"):
        need(backend)
    saved = torch.load(
        Path(__file__).resolve().parents[1] / "data" / f"layers-{release}.pt", weights_only=False
    )
    c, A, b = saved["inputs"]
    for name, layer in saved["layers"].items():
        y_saved, status_saved = saved["answers"][name]
        with layer:
            x = c.clone().requires_grad_()
            y = layer(x, A, b)
            y.sum().backward()
        assert torch.equal(y.detach(), y_saved), name
        assert torch.equal(layer.last_status, status_saved), name
        assert x.grad is not None and torch.isfinite(x.grad).all(), name
