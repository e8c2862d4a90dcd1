"""Losses between the layer's solutions and target solutions, for learning constraints (paper,
supplementary A): on solutions scaled to [-0.5, 0.5] by `normalize_solution`, by name in `LOSSES`."""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["LOSSES", "normalize_solution"]


def normalize_solution(
    y: torch.Tensor, lb: float | torch.Tensor, ub: float | torch.Tensor
) -> torch.Tensor:
    """Map the box to [-0.5, 0.5]^n (supplementary A, the loss's scale). A fixed variable
    (``lb == ub``) maps to -0.5."""
    if isinstance(lb, torch.Tensor) or isinstance(ub, torch.Tensor):
        width = torch.clamp(torch.as_tensor(ub) - torch.as_tensor(lb), min=1)
        return (y - lb) / width - 0.5
    return (y - lb) / (ub - lb) - 0.5


def _l0_loss(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The reference code's "L0" loss: the largest absolute error per instance, batch mean."""
    return (y - target).abs().amax(dim=-1).mean()


LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "mse": torch.nn.functional.mse_loss,
    "l1": torch.nn.functional.l1_loss,
    # Supplementary, "Random Constraints dense with various loss functions" (Huber, beta 0.3).
    "huber": lambda y, target: torch.nn.functional.smooth_l1_loss(y, target, beta=0.3),
    "l0": _l0_loss,
}
"""Losses between normalised solutions for learning constraints, by name (``TrainingConfig.loss``)."""
