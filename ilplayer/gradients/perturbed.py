"""Perturbed optimisers (Berthet et al., NeurIPS 2020): the forward pass is
``E[argmin (c + sigma Z)·y]``, ``Z ~ N(0, I)``, estimated from ``samples`` draws solved as one
batch, and its Jacobian is ``E[y(c + sigma Z) Z^T] / sigma``, so ``dc = E[(y_s·dy) Z_s] / sigma``.
A gradient for ``c`` only; pure torch on the inputs' device."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.gradients.base import GradientMethod, LayerSolves, has_solution, is_number, torch_threads
from ilplayer.problem import validate_problem

if TYPE_CHECKING:
    from ilplayer.problem import Bounds

__all__ = ["Perturbed", "perturbed_gradient", "perturbed_mean"]


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


class _PerturbedFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds, ub: Bounds,
                run: LayerSolves, method: Perturbed, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None,
                integrality: Any) -> tuple[torch.Tensor, torch.Tensor]:
        problem = validate_problem(c, A, b, lb, ub, A_eq, b_eq, integrality)
        ctx.run, ctx.sigma = run, method.sigma
        samples, sigma = method.samples, method.sigma
        noise = torch.randn((samples, *c.shape), generator=method.noise_generator(c.device),
                            dtype=torch.float64, device=c.device)
        many = problem.repeat(samples, (c.detach().double()[None] + sigma * noise).reshape(-1, c.shape[-1]))
        y64, status64, _ = run.solve(many)
        y_samples = y64.reshape(samples, *c.shape)
        solved = has_solution(status64).reshape(samples, c.shape[0])
        status = status64.reshape(samples, c.shape[0]).amax(0)  # the most severe outcome
        y = perturbed_mean(y_samples, solved).to(c.dtype)
        ctx.save_for_backward(y_samples, noise, solved)
        ctx.mark_non_differentiable(status)
        return y, status

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor, _dstatus: torch.Tensor | None) -> tuple[Any, ...]:
        if not ctx.needs_input_grad[0]:
            return (None,) * 10
        y_samples, noise, solved = ctx.saved_tensors
        with torch_threads(ctx.run.threads, dy.device):
            dc = perturbed_gradient(dy.double(), y_samples, noise, ctx.sigma, solved)
        ctx.run.check_signal(dc, dy)
        return dc.to(dy.dtype), None, None, None, None, None, None, None, None, None


@dataclass(frozen=True)
class Perturbed(GradientMethod):
    """``gradient="perturbed"``: the forward returns the mean of ``samples`` solutions under
    Gaussian noise of scale ``sigma``, solved as one batch; ``seed`` fixes the noise stream
    (one per device, copied with the layer)."""

    sigma: float = 1.0
    samples: int = 8
    seed: int | None = None
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
        object.__setattr__(self, "sigma", float(self.sigma))
        object.__setattr__(self, "seed", None if self.seed is None else int(self.seed))

    def noise_generator(self, device: torch.device) -> torch.Generator | None:
        """The perturbations' stream: seeded once per device when ``seed`` is given."""
        if self.seed is None or device.type == "meta":
            return None
        key = str(device)
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[key]

    def apply(self, run: LayerSolves, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds,
              ub: Bounds, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None,
              integrality: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        return _PerturbedFunction.apply(c, A, b, lb, ub, run, self, A_eq, b_eq, integrality)

    def options(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "samples": self.samples}
