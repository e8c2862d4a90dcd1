"""Losses: between the layer's solutions and target solutions (learning constraints, paper
supplementary A, on solutions scaled by :func:`normalize_solution`), and for learning costs
(:class:`SPOPlus`, :class:`FenchelYoung`), which solve their own batches through a layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from ilplayer.layer import ILPLayer

__all__ = ["LOSSES", "FenchelYoung", "SPOPlus", "normalize_solution"]


def normalize_solution(y: torch.Tensor, lb: float | torch.Tensor, ub: float | torch.Tensor) -> torch.Tensor:
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


def _as_float64(value: Any) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        value = torch.as_tensor(value)
    return value.to(torch.float64)


class SPOPlus(torch.nn.Module):
    """The SPO+ loss (Elmachtoub & Grigas, "Smart 'Predict, then Optimize'", 2022) for
    predicted costs, solved with ``layer``'s backend and executor in its ``sense``.

    For minimisation, with ``w*(c) = argmin c·y``:
    ``SPO+(c_pred, c) = max_y (c - 2 c_pred)·y + 2 c_pred·w*(c) - c·w*(c)``, a convex upper
    bound of the regret whose gradient in ``c_pred`` is ``2 (w*(c) - w*(2 c_pred - c))``.
    Maximisation is the same loss on the negated costs. Returns the batch mean.

    Example:
        >>> layer = ILPLayer(0, 1, solver="highs")                       # doctest: +SKIP
        >>> loss = SPOPlus(layer)(c_pred, c_true, A, b)                   # doctest: +SKIP
    """

    def __init__(self, layer: ILPLayer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any, b: Any,
                y_true: torch.Tensor | None = None, A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        sign = -1.0 if self.layer.sense == "max" else 1.0
        c_true = _as_float64(c_true).to(c_pred.device)
        if y_true is None:
            y_true, status = self.layer.solve_batch(c_true, A, b, A_eq, b_eq)
            if not bool((status == 0).all()):
                raise ValueError("SPOPlus: some true-cost instances have no optimal solution "
                                 f"(statuses {sorted(set(status.tolist()))}); pass y_true")
        y_true = _as_float64(y_true).to(c_pred.device)
        pred, true = sign * c_pred.to(torch.float64), sign * c_true  # minimisation form
        y_hat, _ = self.layer.solve_batch(sign * (2 * pred - true), A, b, A_eq, b_eq)  # argmin (2ĉ - c)·y
        y_hat = y_hat.to(c_pred.device)
        loss = ((true - 2 * pred) * y_hat).sum(-1) + 2 * (pred * y_true).sum(-1) - (true * y_true).sum(-1)
        return loss.mean().to(c_pred.dtype)


class FenchelYoung(torch.nn.Module):
    """The perturbed Fenchel-Young loss (Berthet et al., NeurIPS 2020) between predicted costs
    and observed solutions, with ``samples`` Gaussian perturbations of scale ``sigma`` solved
    as one batch through ``layer``'s backend and executor, in its ``sense``.

    For minimisation: ``FY(c_pred, y) = c_pred·y - E[min_y' (c_pred + sigma Z)·y']`` (>= 0 in
    expectation), whose gradient in ``c_pred`` is ``y - E[argmin (c_pred + sigma Z)·y']``.
    Maximisation is the same loss on the negated costs. Returns the batch mean.
    """

    def __init__(self, layer: ILPLayer, sigma: float = 1.0, samples: int = 8,
                 seed: int | None = None) -> None:
        super().__init__()
        if not (isinstance(sigma, (int, float)) and sigma > 0):
            raise ValueError(f"sigma must be a positive number, got {sigma!r}")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be a positive integer, got {samples!r}")
        self.layer, self.sigma, self.samples = layer, float(sigma), samples
        self.generator = None if seed is None else torch.Generator().manual_seed(seed)

    def forward(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any, b: Any,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        sign = -1.0 if self.layer.sense == "max" else 1.0
        pred = sign * c_pred.to(torch.float64)  # minimisation form
        y_true = _as_float64(y_true).to(c_pred.device)
        noise = torch.randn((self.samples, *pred.shape), generator=self.generator,
                            dtype=torch.float64).to(c_pred.device)
        perturbed = (pred.detach()[None] + self.sigma * noise).reshape(-1, pred.shape[-1])
        y_samples, _ = self.layer.solve_batch(sign * perturbed, A, b, A_eq, b_eq, copies=self.samples)
        y_samples = y_samples.reshape(self.samples, *pred.shape).to(c_pred.device)
        inner = ((pred[None] + self.sigma * noise) * y_samples).sum(-1).mean(0)  # E[min]
        loss = (pred * y_true).sum(-1) - inner
        return loss.mean().to(c_pred.dtype)
