"""The L2-regularised optimiser (Dalle et al., "Learning with combinatorial optimization
layers: a probabilistic approach", 2022; PyEPO's RFWO): ``mu(c) = argmin_{mu in conv(Y)} c·mu +
lambd/2 |mu|^2``, the Euclidean projection of ``-c / lambd`` onto the hull of the feasible points,
found by away-step Frank-Wolfe whose linear oracle is the layer's solver (a batch per step,
the unconverged instances only). Its Jacobian is that of the projection onto the affine hull
of the active vertices, ``-P / lambd``, ``P`` the orthogonal projector onto their differences:
``dc = -P dy / lambd``, torch on the inputs' device. A gradient for ``c`` only.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.records import Status, has_solution
from ilplayer.gradients.base import GradientMethod, MethodRun, is_number

if TYPE_CHECKING:
    from ilplayer.core.bounds import Bounds

__all__ = ["FrankWolfe", "face_projection", "frank_wolfe_projection"]

GONE = 1e-12  # a vertex weight at or below this has left the active set (PyEPO's)
SAME = 1e-6  # squared distance under which two vertices are one


Oracle = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@torch.no_grad()
def frank_wolfe_projection(
    theta: torch.Tensor, oracle: Oracle, max_iter: int, tol: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Away-step Frank-Wolfe for ``argmin_mu 1/2 |mu - theta|^2`` over the hull of the
    oracle's points, per row of ``theta`` (B, n).

    ``oracle(rows, costs)`` returns, for the instances ``rows``, ``(argmin costs·y, ok)``. An
    instance stops when its Frank-Wolfe gap is below ``tol`` (or after ``max_iter`` steps).
    Returns ``mu`` (B, n), the active vertices (B, K, n) and their weights (B, K) (zero where
    a slot is unused), and which instances the oracle answered throughout.
    """
    batch, n = theta.shape
    width = 2 * n + 2  # Carathéodory: n + 1 vertices carry any point; room for one more per step
    vertices = theta.new_zeros((batch, width, n))
    weights = theta.new_zeros((batch, width))
    rows = torch.arange(batch, device=theta.device)
    first, ok = oracle(rows, -theta)
    vertices[:, 0], weights[:, 0] = first, 1.0
    mu = first.clone()
    live = ok.clone()
    for _ in range(max_iter):
        grad = mu - theta
        gap_fw = torch.zeros(batch, dtype=theta.dtype, device=theta.device)
        todo = rows[live]
        if len(todo) == 0:
            break
        v = mu.clone()
        v[todo], answered = oracle(todo, grad[todo])
        ok[todo] &= answered
        gap_fw[todo] = (grad[todo] * (mu[todo] - v[todo])).sum(-1)
        live = live & ok & (gap_fw >= tol)
        if not bool(live.any()):
            break
        scores = torch.einsum("bkn,bn->bk", vertices, grad).masked_fill(weights <= 0, float("-inf"))
        away = scores.argmax(-1)
        v_away, alpha_away = vertices[rows, away], weights[rows, away]
        gap_away = (grad * (v_away - mu)).sum(-1)
        use_fw = gap_fw >= gap_away
        direction = torch.where(use_fw[:, None], v - mu, mu - v_away)
        gap = torch.where(use_fw, gap_fw, gap_away)
        gamma_max = torch.where(
            use_fw, torch.ones_like(alpha_away), alpha_away / (1 - alpha_away).clamp(min=GONE)
        )
        step = (gap / (direction * direction).sum(-1).clamp(min=GONE)).clamp(min=0)
        gamma = torch.minimum(step, gamma_max) * live.to(theta.dtype)
        mu = mu + gamma[:, None] * direction
        weights = weights * torch.where(use_fw, 1 - gamma, 1 + gamma)[:, None]
        gamma_fw, gamma_away = gamma * use_fw, gamma * ~use_fw
        # the Frank-Wolfe vertex: its slot if it is active already, else a free slot
        known = ((vertices - v[:, None]) ** 2).sum(-1).lt(SAME) & (weights > 0)
        has = known.any(-1)
        slot = torch.where(has, known.to(theta.dtype).argmax(-1), _free_slot(weights))
        add = ~has & use_fw & (gamma_fw > 0)
        vertices[rows, slot] = torch.where(add[:, None], v, vertices[rows, slot])
        weights[rows, slot] = torch.where(
            add, gamma_fw, weights[rows, slot] + gamma_fw * (has & use_fw)
        )
        weights[rows, away] = weights[rows, away] - gamma_away
        weights = weights.clamp(min=0)
        weights = torch.where(weights <= GONE, torch.zeros_like(weights), weights)
    return mu, vertices, weights, ok


def _free_slot(weights: torch.Tensor) -> torch.Tensor:
    """Per row: the first unused slot, or the lightest vertex's when every slot is used."""
    free = weights <= GONE
    return torch.where(free.any(-1), free.to(weights.dtype).argmax(-1), weights.argmin(-1))


def face_projection(
    vertices: torch.Tensor, weights: torch.Tensor, dy: torch.Tensor
) -> torch.Tensor:
    """``P dy`` per row: ``P`` projects onto the differences of the active vertices (the
    directions of the face ``mu`` lies in), solved with a small ridge as PyEPO does."""
    active = (weights > 0).to(vertices.dtype)
    count = active.sum(-1, keepdim=True).clamp(min=1)
    centre = (vertices * active[..., None]).sum(-2) / count
    centred = (vertices - centre[:, None]) * active[..., None]
    gram = centred @ centred.transpose(-1, -2)
    ridge = gram.diagonal(dim1=-2, dim2=-1).amax(-1, keepdim=True).clamp(min=1) * 1e-6
    gram = gram + torch.diag_embed(ridge.expand(-1, gram.shape[-1]))
    alpha = torch.linalg.solve(gram, centred @ dy[..., None])
    return (centred.transpose(-1, -2) @ alpha)[..., 0]


@dataclass(frozen=True)
class FrankWolfe(GradientMethod):
    """``method="frank-wolfe"``: the forward returns ``argmin_{mu in conv(Y)} c·mu + lambd/2
    |mu|^2`` by away-step Frank-Wolfe (to a gap of ``tol`` or ``max_iter`` steps, PyEPO's
    defaults), each step one batch of solves; the backward ``-P dy / lambd``."""

    lambd: float = 1.0
    max_iter: int = 10_000
    tol: float = 1e-6
    name: ClassVar[str] = "frank-wolfe"
    no_signal_hint: ClassVar[str] = (
        "The regularised solutions sit on vertices; lower lambd's inverse (raise "
        "lambd) to move them inside the hull"
    )

    def __post_init__(self) -> None:
        if not (is_number(self.lambd) and self.lambd > 0):
            raise ValueError(f"lambd must be a positive number, got {self.lambd!r}")
        if (
            isinstance(self.max_iter, bool)
            or not isinstance(self.max_iter, numbers.Integral)
            or self.max_iter < 1
        ):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if not (is_number(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a non-negative number, got {self.tol!r}")
        object.__setattr__(self, "lambd", float(self.lambd))

    def project(
        self,
        solve: Callable[[ProblemTensors], tuple[torch.Tensor, ...]],
        problem: ProblemTensors,
        c: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Frank-Wolfe from the costs ``c`` (minimisation form), ``solve`` (a batch of
        ``problem``'s instances -> ``(y, status, objective)``) its oracle."""

        def oracle(rows: torch.Tensor, costs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y, status, _ = solve(problem.take(rows, costs))
            return y.to(costs.dtype), has_solution(status)

        return frank_wolfe_projection(-c / self.lambd, oracle, self.max_iter, self.tol)

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
        mu, vertices, weights, ok = self.project(run.solve, problem, c.detach().double())
        # OPTIMAL (the projection found), or ERROR where an oracle call had no solution
        status = torch.where(ok, int(Status.OPTIMAL), int(Status.ERROR)).to(torch.int8)
        ctx.save_for_backward(vertices, weights, ok)
        return mu.to(c.dtype), status

    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if not ctx.needs_input_grad[0]:
            return ()
        vertices, weights, ok = ctx.saved_tensors
        dc = -face_projection(vertices, weights, dy.double()) / self.lambd * ok[:, None]
        return (dc.to(dy.dtype),)

    def options(self) -> dict[str, Any]:
        return {"lambd": self.lambd, "max_iter": self.max_iter, "tol": self.tol}
