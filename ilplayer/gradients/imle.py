"""Implicit maximum-likelihood estimation (Niepert, Minervini & Franceschi, NeurIPS 2021) and
its adaptive form (Minervini, Franceschi & Niepert, AAAI 2023), as PyEPO 2.2.7 has them.

Forward: the mean of ``samples`` solutions under Sum-of-Gamma noise of scale ``sigma``, solved
as one batch. Backward: the upstream gradient ``dy`` moves the perturbed costs to ``c + sigma Z
+ lambd dy`` (the same noise), those are solved as one batch, and ``dc = E[y(c + sigma Z + lambd dy)
- y(c + sigma Z)] / lambd`` (``two_sides``: ``E[y(+lambd dy) - y(-lambd dy)] / 2 lambd``). The adaptive
form sets ``lambd = alpha |c| / |dy|`` and moves ``alpha`` by 1e-3 per backward towards a
gradient with a non-zero entry on average. A gradient for ``c`` only; the solves go through the
layer's backend and executor, the maths is torch on the inputs' device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.core.records import has_solution
from ilplayer.gradients.base import GradientMethod, MethodRun, is_number
from ilplayer.gradients.perturbation import TINY, Perturbation
from ilplayer.gradients.perturbed import perturbed_mean, solve_samples

if TYPE_CHECKING:
    from ilplayer.core.bounds import Bounds

__all__ = ["IMLE", "AdaptiveIMLE"]


@dataclass(frozen=True)
class IMLE(Perturbation, GradientMethod):
    """``method="imle"``: I-MLE over its [`Perturbation`][ilplayer.gradients.Perturbation]
    (by default ``samples=10`` draws of Sum-of-Gamma noise, ``kappa`` 5, ``iterations`` 10
    terms, of scale ``sigma``; any noise of [`NOISES`][ilplayer.gradients.perturbation.NOISES]
    is accepted) and the finite-difference step ``lambd`` (PyEPO's defaults: 10 samples,
    sigma 1, lambda 10, kappa 5)."""

    samples: int = 10
    noise: str = "sum-of-gamma"
    lambd: float = 10.0
    two_sides: bool = False
    name: ClassVar[str] = "imle"
    no_signal_hint: ClassVar[str] = (
        "The moved solutions equal the perturbed ones; raise lambd (or sigma)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (is_number(self.lambd) and self.lambd > 0):
            raise ValueError(f"lambd must be a positive number, got {self.lambd!r}")
        object.__setattr__(self, "lambd", float(self.lambd))
        if not isinstance(self.two_sides, bool):
            raise ValueError(f"two_sides must be True or False, got {self.two_sides!r}")

    def step(self, c: torch.Tensor, dy: torch.Tensor) -> float:
        """The finite difference's step for this backward."""
        return self.lambd

    def after_backward(self, dc: torch.Tensor) -> None:
        """What a backward teaches the method (the adaptive form's alpha)."""

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
        perturbed, _ = self.costs(c)
        y_samples, solved, status = solve_samples(run, problem, perturbed)
        ctx.problem = problem
        ctx.save_for_backward(y_samples, perturbed, solved, c.detach().double())
        return perturbed_mean(y_samples, solved).to(c.dtype), status

    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if not ctx.needs_input_grad[0]:
            return ()
        y_samples, perturbed, solved, c = ctx.saved_tensors
        samples = y_samples.shape[0]
        dy64 = dy.detach().double()
        lambd = self.step(c, dy64)
        if lambd == 0.0:
            return (torch.zeros_like(dy),)
        shift = lambd * dy64[None]
        moved = (
            torch.cat([perturbed + shift, perturbed - shift])
            if self.two_sides
            else perturbed + shift
        )
        copies = moved.shape[0]
        y64, status64, _ = ctx.run.solve(
            ctx.problem.repeat(copies, moved.reshape(-1, dy.shape[-1]))
        )
        y_moved = y64.reshape(copies, *dy.shape)
        ok = has_solution(status64).reshape(copies, dy.shape[0])
        if self.two_sides:
            high, low = y_moved[:samples], y_moved[samples:]
            usable = (ok[:samples] & ok[samples:]).to(torch.float64)[..., None]
            difference, width = (high - low) * usable, 2 * lambd + TINY  # PyEPO's _EPS in the step
        else:
            usable = (ok & solved).to(torch.float64)[..., None]
            difference, width = (y_moved - y_samples) * usable, lambd + TINY
        dc = difference.sum(0) / (usable.sum(0).clamp(min=1) * width)
        self.after_backward(dc)
        return (dc.to(dy.dtype),)

    def options(self) -> dict[str, Any]:
        return {
            "sigma": self.sigma,
            "samples": self.samples,
            "lambd": self.lambd,
            "two_sides": self.two_sides,
        }


@dataclass(frozen=True)
class AdaptiveIMLE(IMLE):
    """``method="aimle"``: I-MLE whose step is ``alpha |c| / |dy|`` (norms over the batch),
    ``alpha`` (from 1) raised by ``alpha_step`` after a backward whose gradient, averaged over
    recent ones, has zero entries, lowered otherwise (PyEPO's AIMLE). ``lambd`` is unused."""

    alpha_step: float = 1e-3
    _state: dict[str, float] = field(
        default_factory=lambda: {"alpha": 1.0, "nonzero": 1.0},
        init=False,
        repr=False,
        compare=False,
    )
    name: ClassVar[str] = "aimle"

    @property
    def alpha(self) -> float:
        return self._state["alpha"]

    def step(self, c: torch.Tensor, dy: torch.Tensor) -> float:
        size = float(torch.linalg.vector_norm(dy))
        return self.alpha * float(torch.linalg.vector_norm(c)) / size if size > 0 else 0.0

    def after_backward(self, dc: torch.Tensor) -> None:
        nonzero = float((dc.abs() > TINY).double().mean())
        self._state["nonzero"] = 0.9 * self._state["nonzero"] + 0.1 * nonzero
        if self._state["nonzero"] < 1:
            self._state["alpha"] += self.alpha_step
        else:
            self._state["alpha"] = max(0.0, self._state["alpha"] - self.alpha_step)

    def options(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "samples": self.samples, "two_sides": self.two_sides}
