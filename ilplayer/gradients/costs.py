"""Gradients for the cost vector only, for learning ``c`` (decision-focused learning).

Pure torch on the inputs' device. Each function maps the incoming gradient ``dy`` (B, n) of
a minimisation layer ``y(c) = argmin c·y`` to ``dc`` (B, n); rows without a solution
(``has_solution`` False) get zero.

* ``identity`` -- the negative identity (Sahoo et al., 2023): ``dc = -dy``, as if
  ``dy/dc = -I``: raising a cost lowers its variable.
* ``blackbox`` -- differentiation of blackbox solvers (Vlastelica et al., ICLR 2020): solve
  again at ``c' = c + lambda dy`` and return ``-(y - y') / lambda``, the gradient of a
  piecewise-linear interpolation of the loss.
* ``perturbed`` -- perturbed optimisers (Berthet et al., NeurIPS 2020): the forward pass is
  ``E[argmin (c + sigma Z)·y]``, ``Z ~ N(0, I)``, estimated from ``samples`` draws, and its
  Jacobian is ``E[y(c + sigma Z) Z^T] / sigma``, so ``dc = E[(y_s·dy) Z_s] / sigma``.
"""

from __future__ import annotations

import torch

__all__ = ["COST_METHODS", "blackbox_gradient", "identity_gradient", "perturbed_gradient",
           "perturbed_mean"]

COST_METHODS = ("blackbox", "identity", "perturbed")


def identity_gradient(dy: torch.Tensor, has_solution: torch.Tensor) -> torch.Tensor:
    return torch.where(has_solution[:, None], -dy, torch.zeros_like(dy))


def blackbox_gradient(y: torch.Tensor, y_moved: torch.Tensor, lam: float,
                      has_solution: torch.Tensor) -> torch.Tensor:
    """``-(y - y') / lambda``, ``y'`` the solution at ``c + lambda dy``."""
    return torch.where(has_solution[:, None], -(y - y_moved) / lam, torch.zeros_like(y))


def perturbed_mean(y_samples: torch.Tensor, has_solution: torch.Tensor) -> torch.Tensor:
    """The mean over samples (S, B, n) of the solutions that exist (rows with none: 0)."""
    weight = has_solution.to(y_samples.dtype)[..., None]
    count = weight.sum(0).clamp(min=1)
    return (y_samples * weight).sum(0) / count


def perturbed_gradient(dy: torch.Tensor, y_samples: torch.Tensor, noise: torch.Tensor,
                       sigma: float, has_solution: torch.Tensor) -> torch.Tensor:
    """``E[(y_s·dy) Z_s] / sigma`` over the samples (S, B, n) that have a solution."""
    weight = has_solution.to(dy.dtype)
    inner = (y_samples * dy[None]).sum(-1) * weight  # (S, B)
    count = weight.sum(0).clamp(min=1)  # (B,)
    return (inner[..., None] * noise).sum(0) / (count[:, None] * sigma)
