"""The negative identity (Sahoo et al., 2023): ``dc = -dy``, as if ``dy/dc = -I``: raising a
cost lowers its variable. A gradient for ``c`` only; pure torch on the inputs' device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.core.records import has_solution
from ilplayer.gradients.base import GradientMethod, MethodRun, solve_exactly

if TYPE_CHECKING:
    from ilplayer.core.bounds import Bounds

__all__ = ["Identity", "identity_gradient"]


def identity_gradient(dy: torch.Tensor, has_solution: torch.Tensor) -> torch.Tensor:
    """``-dy`` on the rows with a solution, 0 elsewhere."""
    return torch.where(has_solution[:, None], -dy, torch.zeros_like(dy))


@dataclass(frozen=True)
class Identity(GradientMethod):
    """``method="identity"``: ``dc = -dy`` on the instances with a solution."""

    name: ClassVar[str] = "identity"
    no_signal_hint: ClassVar[str] = "No instance of the batch had a solution to move"

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
        _, _, status = ctx.saved_tensors
        dc = identity_gradient(dy.double(), has_solution(status))
        return (dc.to(dy.dtype),)
