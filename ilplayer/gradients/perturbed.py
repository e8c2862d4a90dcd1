"""Perturbed optimisers (Berthet et al., NeurIPS 2020): the forward pass is
``E[argmin (c + sigma Z)·y]``, ``Z ~ N(0, I)``, estimated from ``samples`` draws solved as one
batch, and its Jacobian is ``E[y(c + sigma Z) Z^T] / sigma``, so ``dc = E[(y_s·dy) Z_s] / sigma``.
A gradient for ``c`` only; pure torch on the inputs' device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.core.records import has_solution
from ilplayer.gradients.base import GradientMethod, MethodRun
from ilplayer.gradients.perturbation import Perturbation, away_from_zero

if TYPE_CHECKING:
    from ilplayer.core.batch import ProblemTensors
    from ilplayer.core.bounds import Bounds

__all__ = ["Perturbed", "perturbed_gradient", "perturbed_mean", "solve_samples"]


def solve_samples(
    run: MethodRun, problem: ProblemTensors, costs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The perturbed costs (S, B, n) of ``problem``'s instances solved as one batch: the
    solutions (S, B, n) float64, which have one (S, B), and each instance's most severe status (B,)."""
    samples, batch = costs.shape[0], costs.shape[1]
    y64, status64, _ = run.solve(problem.repeat(samples, costs.reshape(-1, costs.shape[-1])))
    solved = has_solution(status64).reshape(samples, batch)
    return y64.reshape(costs.shape), solved, status64.reshape(samples, batch).amax(0)


def perturbed_mean(y_samples: torch.Tensor, has_solution: torch.Tensor) -> torch.Tensor:
    """The mean over samples (S, B, n) of the solutions that exist (rows with none: 0)."""
    weight = has_solution.to(y_samples.dtype)[..., None]
    count = weight.sum(0).clamp(min=1)
    return (y_samples * weight).sum(0) / count


def perturbed_gradient(
    dy: torch.Tensor,
    y_samples: torch.Tensor,
    noise: torch.Tensor,
    sigma: float,
    has_solution: torch.Tensor,
    baseline: bool = False,
) -> torch.Tensor:
    """``E[(y_s·dy) Z_s] / sigma`` over the samples (S, B, n) that have a solution; with
    ``baseline``, ``y_s·dy`` minus its mean over the samples, times ``S / (S - 1)`` (PyEPO's
    leave-one-out variance reduction: the same expectation, as ``E[Z] = 0``)."""
    weight = has_solution.to(dy.dtype)
    inner = (y_samples * dy[None]).sum(-1) * weight  # (S, B)
    count = weight.sum(0).clamp(min=1)  # (B,)
    if baseline:
        centred = (inner - inner.sum(0) / count) * weight
        inner = torch.where(count > 1, centred * count / (count - 1).clamp(min=1), inner)
    return (inner[..., None] * noise).sum(0) / (count[:, None] * sigma)


@dataclass(frozen=True)
class Perturbed(Perturbation, GradientMethod):
    """``method="perturbed"``: the forward returns the mean of the solutions of its
    [`Perturbation`][ilplayer.gradients.Perturbation] (``samples`` draws of scale ``sigma``,
    ``noise="additive"`` or ``"multiplicative"``: the costs times ``exp(sigma Z - sigma^2 / 2)``,
    signs kept, PyEPO's DPOMul), solved as one batch; ``seed`` fixes the noise stream (one per
    device, copied with the layer); ``variance_reduction``: PyEPO's leave-one-out baseline in
    the backward (its default)."""

    variance_reduction: bool = False
    name: ClassVar[str] = "perturbed"
    no_signal_hint: ClassVar[str] = "The perturbed solutions did not move; raise sigma"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.variance_reduction, bool):
            raise ValueError(
                f"variance_reduction must be True or False, got {self.variance_reduction!r}"
            )
        if self.noise == "sum-of-gamma":
            raise ValueError(
                "noise='sum-of-gamma': the perturbed gradient E[y Z] / sigma holds for Gaussian noise; "
                "use 'additive' or 'multiplicative' (or IMLE, which takes any noise)"
            )

    def forward(
        self,
        ctx: Any,
        run: MethodRun,
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: Bounds,
        ub: Bounds,
        A_eq: torch.Tensor | None,
        b_eq: torch.Tensor | None,
        integrality: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        problem = run.validate(c, A, b, lb, ub, A_eq, b_eq, integrality)
        costs, noise = self.costs(c)
        y_samples, solved, status = solve_samples(run, problem, costs)
        y = perturbed_mean(y_samples, solved).to(c.dtype)
        ctx.save_for_backward(y_samples, noise, solved, c.detach().double())
        return y, status

    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if not ctx.needs_input_grad[0]:
            return ()
        y_samples, noise, solved, c = ctx.saved_tensors
        dc = perturbed_gradient(
            dy.double(), y_samples, noise, self.sigma, solved, self.variance_reduction
        )
        if self.noise == "multiplicative":  # the noise is additive in log c: the chain rule's 1 / c
            dc = dc / away_from_zero(c)
        return (dc.to(dy.dtype),)

    def options(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "samples": self.samples, "noise": self.noise}
