"""Learning a constraint set from ``(c, y*)`` pairs: the settings, the data, and the loop.

`fit_epochs` is the loop every trainer shares (the demonstrations' baselines included);
`train_static_constraints` learns a [`StaticConstraints`][ilplayer.learning.constraints.StaticConstraints]
through an [`ILPLayer`][ilplayer.layer.ILPLayer] with the paper's settings (supplementary A).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ilplayer.core.records import Status
from ilplayer.core.seeding import derive_seed, torch_generator
from ilplayer.core.threads import library_threads
from ilplayer.layer import ILPLayer
from ilplayer.learning.checkpoint import EpochCheckpoint
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.separation import separating_hyperplanes
from ilplayer.learning.settings import (
    BackendConfig,
    TrainingConfig,
)
from ilplayer.losses import LOSSES, normalize_solution
from ilplayer.metrics import exact_match
from ilplayer.solvers.registry import preferred_backend

if TYPE_CHECKING:
    pass

__all__ = [
    "box_points",
    "fit_epochs",
    "initial_constraints",
    "keep_if_best",
    "train_static_constraints",
]


def fit_epochs(
    num_examples: int,
    *,
    epochs: int,
    batch_size: int,
    seed: int,
    optimizer: torch.optim.Optimizer,
    batch_loss: Callable[[torch.Tensor], tuple[torch.Tensor, dict[str, int]]],
    evaluate: Callable[[], dict[str, float]],
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    stop: Callable[[dict[str, float]], bool] | None = None,
    checkpoint: EpochCheckpoint | None = None,
    loop: dict[str, Any] | None = None,
) -> list[dict[str, float]]:
    """The loop every trainer shares: per epoch, shuffle (from a stream of ``seed``
    independent of the initialisation's), take the gradient step of ``batch_loss(rows)`` on
    each batch, then ``evaluate()`` without gradients.

    ``batch_loss`` returns the batch's mean loss and counts to report as fractions of the
    epoch (``{"infeasible": 2}`` becomes ``"infeasible_fraction"``). A loss without a gradient
    (every instance of the batch failed) skips the step. Each record holds the epoch, the mean
    training loss, what ``evaluate`` returned and those fractions; ``stop(record)`` ends early.
    With a ``checkpoint``, the state is saved after every epoch (with ``loop``, a dict of what
    the caller's closures keep, restored into it in place) and a run finds its finished epochs
    there and goes on from the next, or not at all when it had stopped (``on_epoch`` sees the
    new epochs only).
    """
    g = torch_generator(seed, 2)
    history: list[dict[str, float]] = (
        [] if checkpoint is None else checkpoint.restore(optimizer, g, loop)
    )
    start_epoch = epochs if checkpoint is not None and checkpoint.finished else len(history)
    for epoch in range(start_epoch, epochs):
        order = torch.randperm(num_examples, generator=g)
        total, counts = 0.0, dict[str, int]()
        with library_threads():  # as many of torch's threads as the machine has cores free
            for start in range(0, num_examples, batch_size):
                rows = order[start : start + batch_size]
                loss, batch_counts = batch_loss(rows)
                optimizer.zero_grad()
                if loss.requires_grad:
                    loss.backward()
                    optimizer.step()
                total += loss.item() * len(rows)
                for key, count in batch_counts.items():
                    counts[key] = counts.get(key, 0) + count
            with torch.no_grad():
                record = {
                    "epoch": epoch + 1,
                    "loss": total / num_examples,
                    **evaluate(),
                    **{f"{key}_fraction": count / num_examples for key, count in counts.items()},
                }
        history.append(record)
        stopping = stop is not None and stop(record)
        if checkpoint is not None:
            checkpoint.save(optimizer, g, history, loop, finished=stopping)
        if on_epoch is not None:
            on_epoch(record)
        if stopping:
            break
    return history


def keep_if_best(best: dict[str, Any], model: torch.nn.Module, score: float, **extra: Any) -> bool:
    """Copy ``model``'s parameters into ``best["state"]`` (with ``score`` as ``best["accuracy"]``
    and ``extra``) when ``score`` beats ``best["accuracy"]``; ties keep the earlier model. ``best``
    is a loop's own state, so an [`EpochCheckpoint`][ilplayer.learning.checkpoint.EpochCheckpoint] keeps it."""
    if score <= best["accuracy"]:
        return False
    best.update(
        accuracy=score,
        state={k: v.detach().clone() for k, v in model.state_dict().items()},
        **extra,
    )
    return True


def known_equalities(data: Any) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``data``'s fixed equality rows ``(A_eq, b_eq)``, ``(None, None)`` where it has none: every
    solve in training passes them beside the learned rows."""
    return getattr(data, "A_eq", None), getattr(data, "b_eq", None)


def box_points(lb: Any, ub: Any, n: int) -> int:
    """The number of integer points of the box (for `preferred_backend`)."""
    widths = np.broadcast_to(
        np.asarray(ub, dtype=np.int64) - np.asarray(lb, dtype=np.int64) + 1, (n,)
    )
    return math.prod(int(w) for w in widths)


def _adam(
    model: StaticConstraints, config: TrainingConfig, lb: Any, ub: Any, n: int
) -> torch.optim.Adam:
    if not config.box_relative_steps:
        return torch.optim.Adam(model.parameters(), lr=config.lr)
    width = float(
        np.mean(
            np.broadcast_to(
                np.asarray(ub, dtype=np.float64) - np.asarray(lb, dtype=np.float64), (n,)
            )
        )
    )
    positions: list[torch.nn.Parameter] = [
        p for name, p in model.named_parameters() if name != "normals"
    ]
    groups: list[dict[str, Any]] = [
        {"params": [model.normals]},
        {"params": positions, "lr": config.lr * width},
    ]
    return torch.optim.Adam(groups, lr=config.lr)


def initial_constraints(
    config: TrainingConfig,
    count: int,
    c: torch.Tensor,
    y: torch.Tensor,
    lb: Any,
    ub: Any,
    seed: int,
) -> StaticConstraints:
    """``count`` constraints to start training from, as ``config.init`` says (float64).

    ``"separating"`` puts the hyperplanes of `separating_hyperplanes`
    (tight at the observed ``y``) in the first rows, each origin at the mean of the observed
    solutions on its hyperplane, and moves every other row's offset out until no observed
    solution violates it."""
    n = c.shape[1]
    # init streams independent of the dataset's, whatever the seed
    model = StaticConstraints(
        count, n, lb, ub, origin=config.origin, seed=derive_seed(seed, 1), dtype=torch.float64
    )
    if config.init == "random":
        return model
    c_np, y_np = c.detach().cpu().numpy(), y.detach().cpu().numpy()
    normals, tops = separating_hyperplanes(c_np, y_np, lb, ub, count, seed=derive_seed(seed, 2))
    found = len(normals)
    with torch.no_grad():
        if found:
            model.normals[:found] = torch.as_tensor(normals)
            if config.origin == "learnable":
                on_plane = np.abs(normals @ y_np.T - tops[:, None]) <= 1e-9 * (
                    1 + np.abs(tops[:, None])
                )
                model.origins[:found] = torch.as_tensor(
                    (on_plane @ y_np) / on_plane.sum(axis=1, keepdims=True)
                )
        # every row: the offset that makes the largest a·(y - o) over the observed y its boundary
        unit = model.normals / torch.linalg.vector_norm(model.normals, dim=-1, keepdim=True)
        model.normals.copy_(unit)
        reach = (y.to(unit)[None] - model.origins[:, None]) @ unit[..., None]
        model.offsets.copy_(reach.squeeze(-1).amax(dim=1))
    return model


def _check_loop_options(test_every: Any, target_accuracy: float | None) -> None:
    if isinstance(test_every, bool) or not isinstance(test_every, int) or test_every < 1:
        raise ValueError(f"test_every must be a positive integer, got {test_every!r}")
    if target_accuracy is not None and test_every != 1:
        raise ValueError("target_accuracy stops on the held-out accuracy: it needs test_every=1")


def _box_for_normalising(lb: Any, ub: Any, n: int) -> tuple[Any, Any]:
    """The box as `normalize_solution` takes it: integers as they are, else (n,) tensors."""
    if isinstance(lb, int) and isinstance(ub, int):
        return lb, ub
    return tuple(  # type: ignore[return-value]
        torch.as_tensor(np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy())
        for v in (lb, ub)
    )


def _training_layer(
    config: TrainingConfig, backend: BackendConfig, lb: Any, ub: Any, n: int
) -> ILPLayer:
    """The layer training solves through: CombOptNet with the config's tau and basis, on the
    backend named (else the preferred one for the box)."""
    solver = backend.solver or preferred_backend(box_points(lb, ub, n))
    return ILPLayer(
        lb,
        ub,
        solver=solver,
        solver_options=backend.solver_options,
        tau=config.tau,
        basis=config.basis,
        executor=backend.executor,
        workers=backend.workers,
    )


def _start_record(
    solved: Callable[[torch.Tensor], torch.Tensor],
    data: Any,
    validation: tuple[torch.Tensor, torch.Tensor],
) -> dict[str, float]:
    """Epoch 0's record: the start's held-out and validation accuracies."""
    with torch.no_grad():
        return {
            "epoch": 0,
            "accuracy": exact_match(solved(data.c_test), data.y_test),
            "validation_accuracy": exact_match(solved(validation[0]), validation[1]),
        }


def _evaluator(
    solved: Callable[[torch.Tensor], torch.Tensor],
    model: StaticConstraints,
    data: Any,
    validation: tuple[torch.Tensor, torch.Tensor] | None,
    best: dict[str, Any],
    every: tuple[int, int],
) -> Callable[[], dict[str, float]]:
    """The loop's ``evaluate``: the held-out accuracy on every ``every[0]``-th epoch and the last
    (``every[1]``), the validation accuracy on each, the best validation model kept in ``best``."""
    test_every, epochs = every

    def evaluate() -> dict[str, float]:
        best["evaluated"] += 1
        evaluated = best["evaluated"]
        scores = {}
        if evaluated % test_every == 0 or evaluated == epochs:
            scores["accuracy"] = exact_match(solved(data.c_test), data.y_test)
        if validation is not None:
            scores["validation_accuracy"] = exact_match(solved(validation[0]), validation[1])
            keep_if_best(best, model, scores["validation_accuracy"])
        return scores

    return evaluate


def train_static_constraints(
    data: Any,
    config: TrainingConfig | None = None,
    backend: BackendConfig | None = None,
    *,
    seed: int = 0,
    num_constraints: int | None = None,
    model: StaticConstraints | None = None,
    target_accuracy: float | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    validation: tuple[torch.Tensor, torch.Tensor] | None = None,
    test_every: int = 1,
    checkpoint: EpochCheckpoint | None = None,
) -> tuple[StaticConstraints, list[dict[str, float]]]:
    """Adam on the loss between normalised solutions, as in the supplementary's table.

    ``data`` has ``lb``, ``ub`` (scalars or one per variable) and the float64 tensors
    ``c_train``, ``y_train``, ``c_test``, ``y_test`` (a `HiddenConstraintsData` or
    `SolutionData`). Learns ``config.k * m`` constraints, ``m`` being
    ``num_constraints`` or the number of hidden ones in ``data.A``, starting from ``model``
    when given. Stops early once the held-out accuracy reaches ``target_accuracy``.

    With ``validation = (c_val, y_val)`` (pairs taken from the training data, never the test
    set) each epoch also records ``validation_accuracy``, and the model returned is the one of
    the epoch with the best validation accuracy (the earliest among ties), not the last one.
    The history then begins with the start's record (epoch 0, no loss): a start read off the
    data can score better than any epoch after it, and [`learn_constraints`][ilplayer.learning.learn.learn_constraints]
    weighs it against the returned epoch.

    The held-out accuracy is measured on every ``test_every``-th epoch and the last one (with
    1 000 held-out pairs its solves took 15-27 % of the training time on dense m = 4); the
    other records lack ``accuracy``. It never steers training, so the model is the same.

    With a ``checkpoint`` every epoch is saved (the best validation model so far with it) and
    a run stopped part-way goes on from its last epoch, ``model`` being the same start.

    Returns the model and one record per epoch (loss, accuracy, infeasible fraction), after
    the start's record when there is a validation split.
    """
    config = config or TrainingConfig()
    _check_loop_options(test_every, target_accuracy)
    loss_fn = LOSSES[config.loss]
    n = data.c_train.shape[1]
    m = num_constraints if num_constraints is not None else data.A.shape[0]
    lb, ub = _box_for_normalising(data.lb, data.ub, n)
    if model is None:
        model = initial_constraints(
            config, config.k * m, data.c_train, data.y_train, data.lb, data.ub, seed
        )
    layer = _training_layer(config, backend or BackendConfig(), data.lb, data.ub, n)
    y_true = normalize_solution(data.y_train, lb, ub)
    equalities = known_equalities(data)
    solved = lambda c: layer(c, *model(), *equalities)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        y = solved(data.c_train[rows])
        status = layer.last_status
        assert status is not None  # set by the forward pass above
        infeasible = int((status == Status.INFEASIBLE).sum())
        return loss_fn(normalize_solution(y, lb, ub), y_true[rows]), {"infeasible": infeasible}

    best: dict[str, Any] = {"accuracy": -1.0, "state": None, "evaluated": 0}  # checkpointed
    evaluate = _evaluator(solved, model, data, validation, best, (test_every, config.epochs))
    reached = None if target_accuracy is None else (lambda r: r["accuracy"] >= target_accuracy)
    try:
        start = [] if validation is None else [_start_record(solved, data, validation)]
        history = fit_epochs(
            len(data.c_train),
            epochs=config.epochs,
            batch_size=config.batch_size,
            seed=seed,
            optimizer=_adam(model, config, data.lb, data.ub, n),
            batch_loss=batch_loss,
            evaluate=evaluate,
            on_epoch=on_epoch,
            stop=reached,
            checkpoint=checkpoint,
            loop=best,
        )
    finally:
        layer.close()
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    return model, start + history
