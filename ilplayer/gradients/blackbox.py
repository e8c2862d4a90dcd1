"""Differentiation of blackbox solvers (Vlastelica et al., ICLR 2020): solve again at
``c' = c + lambda dy`` and return ``-(y - y') / lambda``, the gradient of a piecewise-linear
interpolation of the loss. A gradient for ``c`` only; pure torch on the inputs' device."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.core.records import has_solution
from ilplayer.gradients.base import (
    GradientMethod,
    MethodRun,
    is_number,
    solve_exactly,
)

if TYPE_CHECKING:
    from ilplayer.core.bounds import Bounds

__all__ = ["Blackbox", "blackbox_gradient"]


def blackbox_gradient(
    y: torch.Tensor, y_moved: torch.Tensor, lambd: float, has_solution: torch.Tensor
) -> torch.Tensor:
    """``-(y - y') / lambda``, ``y'`` the solution at ``c + lambda dy``."""
    return torch.where(has_solution[:, None], -(y - y_moved) / lambd, torch.zeros_like(y))


@dataclass(frozen=True)
class Blackbox(GradientMethod):
    """``method="blackbox"``: ``lambd`` is the interpolation step (PyEPO's name; the layer's
    ``lambd`` keyword; Vlastelica et al. use 10-20)."""

    lambd: float = 10.0
    name: ClassVar[str] = "blackbox"
    no_signal_hint: ClassVar[str] = (
        "The solutions did not move under the gradient step; raise lambd"
    )

    def __post_init__(self) -> None:
        if not (is_number(self.lambd) and self.lambd > 0):
            raise ValueError(f"lambd must be a positive number, got {self.lambd!r}")
        object.__setattr__(self, "lambd", float(self.lambd))

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
        return solve_exactly(ctx, run, c, A, b, lb, ub, A_eq, b_eq, integrality)

    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if not ctx.needs_input_grad[0]:
            return ()
        c, y, status = ctx.saved_tensors
        # solve again at c + lambda dy
        moved = dataclasses.replace(ctx.problem, c=c.double() + self.lambd * dy.double())
        y_moved, status_moved, _ = ctx.run.solve(moved)
        dc = blackbox_gradient(
            y, y_moved, self.lambd, has_solution(status) & has_solution(status_moved)
        )
        return (dc.to(dy.dtype),)

    def options(self) -> dict[str, Any]:
        return {"lambd": self.lambd}
