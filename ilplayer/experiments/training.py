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

__all__ = ["LOSSES", "HiddenConstraintsData", "exact_match", "normalize_solution",
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
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, 2]).generate_state(1)[0]))
    y_true = normalize_solution(data.y_train, data.lb, data.ub)
    history: list[dict[str, float]] = []
    try:
        for epoch in range(epochs):
            order = torch.randperm(len(data.c_train), generator=g)
            total_loss, infeasible = 0.0, 0
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                A, b = model()
                y = layer(data.c_train[rows], A, b)
                batch_loss = loss_fn(normalize_solution(y, data.lb, data.ub), y_true[rows])
                optimizer.zero_grad()
                batch_loss.backward()
                optimizer.step()
                total_loss += batch_loss.item() * len(rows)
                infeasible += int((layer.last_status == Status.INFEASIBLE).sum())
            with torch.no_grad():
                y_test = layer(data.c_test, *model())
            record = {"epoch": epoch + 1, "loss": total_loss / len(order),
                      "accuracy": exact_match(y_test, data.y_test),
                      "infeasible_fraction": infeasible / len(order)}
            history.append(record)
            if on_epoch is not None:
                on_epoch(record)
            if target_accuracy is not None and record["accuracy"] >= target_accuracy:
                break
    finally:
        layer.close()
    return model, history
