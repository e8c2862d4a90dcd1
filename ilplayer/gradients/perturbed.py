"""Perturbed optimisers (Berthet et al., NeurIPS 2020): the forward pass is
``E[argmin (c + sigma Z)·y]``, ``Z ~ N(0, I)``, estimated from ``samples`` draws solved as one
batch, and its Jacobian is ``E[y(c + sigma Z) Z^T] / sigma``, so ``dc = E[(y_s·dy) Z_s] / sigma``.
A gradient for ``c`` only; pure torch on the inputs' device."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.gradients.base import (
    GradientMethod,
    MethodRun,
    has_solution,
    is_number,
    seeded_generator,
)
from ilplayer.problem import validate_problem

if TYPE_CHECKING:
    from ilplayer.bounds import Bounds
    from ilplayer.problem import ProblemTensors

__all__ = ["NOISES", "Perturbed", "away_from_zero", "perturb", "perturbed_gradient", "perturbed_mean",
           "solve_samples", "standard_noise"]


def solve_samples(run: MethodRun, problem: ProblemTensors, costs: torch.Tensor
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


def perturbed_gradient(dy: torch.Tensor, y_samples: torch.Tensor, noise: torch.Tensor,
                       sigma: float, has_solution: torch.Tensor, baseline: bool = False) -> torch.Tensor:
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


def standard_noise(samples: int, shape: tuple[int, ...], generator: torch.Generator | None,
                   device: torch.device | str = "cpu") -> torch.Tensor:
    """Standard normal noise (samples, *shape) for costs of ``shape`` (B, n), drawn with each
    row's samples together (PyEPO's order), so that PyEPO's seed gives PyEPO's draws."""
    noise = torch.randn((*shape[:-1], samples, shape[-1]), generator=generator, dtype=torch.float64, device=device)
    return noise.movedim(-2, 0)


NOISES = ("additive", "multiplicative")
TINY = 1e-7  # |c| below this divides as +-TINY in the multiplicative gradient (PyEPO's _EPS)


def perturb(c: torch.Tensor, noise: torch.Tensor, sigma: float, kind: str) -> torch.Tensor:
    """The perturbed costs (S, B, n) from ``c`` (B, n) and standard normal ``noise``:
    ``c + sigma Z`` (additive) or ``c * exp(sigma Z - sigma^2 / 2)`` (multiplicative: signs
    kept, mean ``c``)."""
    if kind == "multiplicative":
        return c[None] * torch.exp(sigma * noise - 0.5 * sigma ** 2)
    return c[None] + sigma * noise


def away_from_zero(c: torch.Tensor) -> torch.Tensor:
    """``c`` with entries smaller than TINY in size set to +-TINY (sign kept, 0 -> +TINY)."""
    return torch.where(c.abs() < TINY, torch.where(c >= 0, TINY, -TINY).to(c.dtype), c)


@dataclass(frozen=True)
class Perturbed(GradientMethod):
    """``gradient="perturbed"``: the forward returns the mean of ``samples`` solutions under
    Gaussian noise of scale ``sigma`` (``noise="additive"``, or ``"multiplicative"``: the costs
    times ``exp(sigma Z - sigma^2 / 2)``, signs kept, PyEPO's DPOMul), solved as one batch;
    ``seed`` fixes the noise stream (one per device, copied with the layer);
    ``variance_reduction``: PyEPO's leave-one-out baseline in the backward (its default)."""

    sigma: float = 1.0
    samples: int = 8
    seed: int | None = None
    noise: str = "additive"
    variance_reduction: bool = False
    _generators: dict[str, torch.Generator] = field(default_factory=dict, repr=False, compare=False)
    name: ClassVar[str] = "perturbed"
    no_signal_hint: ClassVar[str] = "The perturbed solutions did not move; raise sigma"

    def __post_init__(self) -> None:
        if not (is_number(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be a positive number, got {self.sigma!r}")
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise ValueError(f"samples must be a positive integer, got {self.samples!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral)):
            raise ValueError(f"seed must be an integer or None, got {self.seed!r}")
        if not isinstance(self.variance_reduction, bool):
            raise ValueError(f"variance_reduction must be True or False, got {self.variance_reduction!r}")
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}")
        object.__setattr__(self, "sigma", float(self.sigma))
        object.__setattr__(self, "seed", None if self.seed is None else int(self.seed))

    def noise_generator(self, device: torch.device) -> torch.Generator | None:
        """The noise stream: seeded once per device when ``seed`` is given."""
        return seeded_generator(self._generators, self.seed, device)

    def forward(self, ctx: Any, run: MethodRun, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds,
                ub: Bounds, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None,
                integrality: Any) -> tuple[torch.Tensor, torch.Tensor]:
        problem = validate_problem(c, A, b, lb, ub, A_eq, b_eq, integrality, cost_map=run.cost_map)
        samples, sigma = self.samples, self.sigma
        noise = standard_noise(samples, tuple(c.shape), self.noise_generator(c.device), c.device)
        costs = perturb(c.detach().double(), noise, sigma, self.noise)
        y_samples, solved, status = solve_samples(run, problem, costs)
        y = perturbed_mean(y_samples, solved).to(c.dtype)
        ctx.save_for_backward(y_samples, noise, solved, c.detach().double())
        ctx.mark_non_differentiable(status)
        return y, status

    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if not ctx.needs_input_grad[0]:
            return ()
        y_samples, noise, solved, c = ctx.saved_tensors
        dc = perturbed_gradient(dy.double(), y_samples, noise, self.sigma, solved, self.variance_reduction)
        if self.noise == "multiplicative":  # the noise is additive in log c: the chain rule's 1 / c
            dc = dc / away_from_zero(c)
        return (dc.to(dy.dtype),)

    def options(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "samples": self.samples, "noise": self.noise}
