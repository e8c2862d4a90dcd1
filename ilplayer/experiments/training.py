"""Learning a static constraint set from ``(c, y*)`` pairs (Random Constraints, weighted set
cover): the data class, the metric and the training loop of supplementary A."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from ilplayer.constraints import StaticConstraints
from ilplayer.layer import ILPLayer
from ilplayer.solver import Status

__all__ = ["LOSSES", "HiddenConstraintsData", "exact_match", "fit_epochs", "normalize_solution",
           "train_static_constraints"]


def _l0_loss(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The reference code's "L0" loss: the largest absolute error per instance, batch mean."""
    return (y - target).abs().amax(dim=-1).mean()


# Supplementary, "Random Constraints dense with various loss functions" (Huber with beta 0.3).
LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "mse": torch.nn.functional.mse_loss,
    "l1": torch.nn.functional.l1_loss,
    "huber": lambda y, target: torch.nn.functional.smooth_l1_loss(y, target, beta=0.3),
    "l0": _l0_loss,
}


@dataclass(frozen=True)
class HiddenConstraintsData:
    """A hidden constraint set ``A y <= b`` on the box ``[lb, ub]^n`` and its solved instances
    ``(c, y*)`` (all float64). Random Constraints and weighted set cover are both of this form."""

    A: torch.Tensor
    b: torch.Tensor
    lb: int
    ub: int
    c_train: torch.Tensor
    y_train: torch.Tensor
    c_test: torch.Tensor
    y_test: torch.Tensor

    def to_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @property
    def box_baseline_accuracy(self) -> float:
        """Accuracy of the box-only solution (no constraints): the "box-constrained" baseline."""
        y_box = torch.where(self.c_test < 0, float(self.ub), float(self.lb))
        return exact_match(y_box, self.y_test)


def exact_match(y: torch.Tensor, y_true: torch.Tensor) -> float:
    return (y == y_true).all(dim=-1).to(torch.float64).mean().item()


def normalize_solution(y: torch.Tensor, lb: float, ub: float) -> torch.Tensor:
    """Map the box to [-0.5, 0.5]^n (supplementary A, the loss's scale)."""
    return (y - lb) / (ub - lb) - 0.5


def fit_epochs(num_examples: int, *, epochs: int, batch_size: int, seed: int,
               optimizer: torch.optim.Optimizer,
               batch_loss: Callable[[torch.Tensor], tuple[torch.Tensor, dict[str, int]]],
               evaluate: Callable[[], dict[str, float]],
               on_epoch: Callable[[dict[str, float]], None] | None = None,
               stop: Callable[[dict[str, float]], bool] | None = None) -> list[dict[str, float]]:
    """The loop every demonstration shares: per epoch, shuffle (from a stream of ``seed``
    independent of the initialisation's), take the gradient step of ``batch_loss(rows)`` on
    each batch, then ``evaluate()`` without gradients.

    ``batch_loss`` returns the batch's mean loss and counts to report as fractions of the
    epoch (``{"infeasible": 2}`` becomes ``"infeasible_fraction"``). A loss without a gradient
    (every instance of the batch failed) skips the step. Each record holds the epoch, the mean
    training loss, what ``evaluate`` returned and those fractions; ``stop(record)`` ends early.
    """
    g = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, 2]).generate_state(1)[0]))
    history: list[dict[str, float]] = []
    for epoch in range(epochs):
        order = torch.randperm(num_examples, generator=g)
        total, counts = 0.0, {}
        for start in range(0, num_examples, batch_size):
            rows = order[start:start + batch_size]
            loss, batch_counts = batch_loss(rows)
            optimizer.zero_grad()
            if loss.requires_grad:
                loss.backward()
                optimizer.step()
            total += loss.item() * len(rows)
            for key, count in batch_counts.items():
                counts[key] = counts.get(key, 0) + count
        with torch.no_grad():
            record = {"epoch": epoch + 1, "loss": total / num_examples, **evaluate(),
                      **{f"{key}_fraction": count / num_examples for key, count in counts.items()}}
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if stop is not None and stop(record):
            break
    return history


def train_static_constraints(
    data: HiddenConstraintsData, *, epochs: int = 100, lr: float = 5e-4, batch_size: int = 8,
    tau: float | None = 0.5, basis: str = "delta", origin: str = "learnable", seed: int = 0,
    loss: str = "mse", k: int = 1,
    solver: str = "bruteforce", solver_options: dict[str, Any] | None = None,
    executor: str | None = None, workers: int | None = None,
    model: StaticConstraints | None = None, target_accuracy: float | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[StaticConstraints, list[dict[str, float]]]:
    """Adam on the loss between normalised solutions, as in the supplementary's table.

    ``loss`` is one of :data:`LOSSES`; ``k`` learns ``k * m`` constraints for ``m`` hidden ones.
    Stops early once the held-out accuracy reaches ``target_accuracy`` (when given).
    Returns the model and one record per epoch (loss, accuracy, infeasible fraction).
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"k must be a positive integer, got {k!r}")
    loss_fn = LOSSES[loss]
    m, n = data.A.shape
    m *= k
    if model is None:  # an init stream independent of the dataset's, whatever the seed
        init_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
        model = StaticConstraints(m, n, data.lb, data.ub, origin=origin, seed=init_seed,
                                  dtype=torch.float64)
    layer = ILPLayer(data.lb, data.ub, solver=solver, solver_options=solver_options, tau=tau,
                     basis=basis, executor=executor, workers=workers)
    y_true = normalize_solution(data.y_train, data.lb, data.ub)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        y = layer(data.c_train[rows], *model())
        infeasible = int((layer.last_status == Status.INFEASIBLE).sum())
        return loss_fn(normalize_solution(y, data.lb, data.ub), y_true[rows]), {"infeasible": infeasible}

    def evaluate() -> dict[str, float]:
        return {"accuracy": exact_match(layer(data.c_test, *model()), data.y_test)}

    reached = None if target_accuracy is None else (lambda r: r["accuracy"] >= target_accuracy)
    try:
        history = fit_epochs(len(data.c_train), epochs=epochs, batch_size=batch_size, seed=seed,
                             optimizer=torch.optim.Adam(model.parameters(), lr=lr),
                             batch_loss=batch_loss, evaluate=evaluate, on_epoch=on_epoch, stop=reached)
    finally:
        layer.close()
    return model, history
