"""The post-hoc regret through relaxations, in the spirit of Hu, Lee & Lee's 2S (NeurIPS 2023):
Stage 1 and Stage 2 relaxed to log-barrier linear programs, solved by Newton's method in torch and
differentiated implicitly, the gradient reaching the predictions through both stages."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from ilplayer.core.bounds import as_bounds
from ilplayer.core.threads import library_threads
from ilplayer.metrics.two_stage import CHANGES
from ilplayer.program import Program

__all__ = ["RelaxedPostHocLoss", "barrier_solve"]

_NEWTON_STEPS = 60
_DECREMENT_TOL = 1e-10  # half the squared Newton decrement at which an instance has converged


def barrier_solve(
    q: torch.Tensor,
    G: torch.Tensor,
    h: torch.Tensor,
    z0: torch.Tensor,
    mu: torch.Tensor,
    steps: int = _NEWTON_STEPS,
) -> torch.Tensor:
    """``argmin q.z - mu sum log(h - G z)`` per instance, from the strictly feasible ``z0``
    (``G z0 < h``): damped Newton with backtracking, then one implicit step,
    ``z* - H^-1 grad f(z*)`` with ``H`` held fixed: its value is ``z*`` (the gradient vanishes
    there) and its gradient in ``q``, ``G``, ``h`` and ``mu`` the implicit function theorem's.
    Batched: q (B, N), G (B, K, N), h (B, K), z0 (B, N), mu (B,). Pure torch, any device."""
    threads = library_threads() if z0.device.type == "cpu" else contextlib.nullcontext()
    with torch.no_grad(), threads:  # many small steps: torch's threads chosen as for a solve
        z = z0.clone()
        qd, Gd, hd, mud = q.detach(), G.detach(), h.detach(), mu.detach()
        for _ in range(steps):
            grad, hessian = _derivatives(qd, Gd, hd, z, mud)
            step = torch.linalg.solve(hessian, -grad.unsqueeze(-1)).squeeze(-1)
            decrement = -(grad * step).sum(-1) / 2
            if not decrement.is_meta and bool((decrement <= _DECREMENT_TOL).all()):
                break  # (meta tensors hold no values: every step runs)
            z = z + _feasible_fraction(Gd, hd, z, step).unsqueeze(-1) * step
    grad, hessian = _derivatives(q, G, h, z, mu)
    return z - torch.linalg.solve(hessian.detach(), grad.unsqueeze(-1)).squeeze(-1)


def _derivatives(
    q: torch.Tensor, G: torch.Tensor, h: torch.Tensor, z: torch.Tensor, mu: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    inverse = 1.0 / (h - torch.einsum("bkn,bn->bk", G, z))
    grad = q + mu.unsqueeze(-1) * torch.einsum("bkn,bk->bn", G, inverse)
    hessian = mu[:, None, None] * torch.einsum("bkn,bk,bkl->bnl", G, inverse**2, G)
    ridge = 1e-12 * torch.eye(z.shape[-1], dtype=z.dtype, device=z.device)
    return grad, hessian + ridge


def _feasible_fraction(
    G: torch.Tensor, h: torch.Tensor, z: torch.Tensor, step: torch.Tensor
) -> torch.Tensor:
    """Per instance, the step length of 1 or less that keeps 1 % of every slack (the barrier's
    self-concordance makes the full Newton step safe near the optimum; far from it, this guard)."""
    slack = h - torch.einsum("bkn,bn->bk", G, z)
    rate = torch.einsum("bkn,bn->bk", G, step)
    limit = torch.where(
        rate > 0, 0.99 * slack / rate.clamp(min=torch.finfo(z.dtype).tiny), torch.inf
    )
    return limit.amin(-1).clamp(max=1.0)


class RelaxedPostHocLoss(torch.nn.Module):
    """The post-hoc regret of a program relaxed in both stages, differentiated through them (2S).

    Stage 1 relaxes the program with the predicted ``c_pred``, ``A_pred``, ``b_pred`` to the
    log-barrier LP ``min c.x - mu sum log(slacks)`` over ``A x <= b`` and the box; Stage 2, under
    the true parameters, starts from that relaxed decision ``x1`` and pays ``penalty`` per unit
    changed (``changes`` as in [post_hoc_regret][ilplayer.metrics.post_hoc_regret]), relaxed
    the same way. Rows that a relaxed decision cannot meet (a predicted polytope without an
    interior, a true row no repair allows) are elastic: a violation costs ``elastic`` per unit.
    The loss is the mean relaxed Stage-2 cost with its penalty (the program's sense: a max
    program's value is negated), less ``optimal`` where given; its gradient is exact for the
    relaxations (implicit differentiation of both Newton solves). No solver is called: what the
    surrogate needs is a bounded box and inequality rows; integrality is relaxed away.

    Args:
        program: the [Program][ilplayer.Program]: a finite box, no equality rows.
        changes: what Stage 2 may change (``"any"``, ``"add"``, ``"drop"``).
        mu: the barrier's weight, relative to the mean absolute true cost of each instance
            (smaller: closer to the LP, sparser gradients).
        elastic: the price of a unit of row violation, relative to the same mean.
    """

    def __init__(
        self, program: Program, changes: str = "any", mu: float = 0.05, elastic: float = 100.0
    ) -> None:
        super().__init__()
        if not isinstance(program, Program):
            raise TypeError(f"program must be an ilplayer.Program, got {type(program).__name__}")
        if changes not in CHANGES:
            raise ValueError(f"changes must be one of {CHANGES}, got {changes!r}")
        for name, value in (("mu", mu), ("elastic", elastic)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if program.A_eq is not None and np.shape(program.A_eq)[0] > 0:
            raise ValueError("program: RelaxedPostHocLoss takes inequality rows only (no A_eq)")
        self.program, self.changes, self.mu, self.elastic = (
            program,
            changes,
            float(mu),
            float(elastic),
        )

    def forward(
        self,
        A_pred: torch.Tensor | None = None,
        b_pred: torch.Tensor | None = None,
        c_pred: torch.Tensor | None = None,
        *,
        c: Any = None,
        A: Any = None,
        b: Any = None,
        penalty: Any = 0.0,
        drop_penalty: Any = None,
        optimal: Any = None,
    ) -> torch.Tensor:
        """The mean relaxed post-hoc cost of the batch (a scalar on the predictions' device).

        Args:
            A_pred: (B, m, n) the predicted rows (None: the true ``A``).
            b_pred: (B, m) their predicted right-hand sides (None: the true ``b``).
            c_pred: (B, n) the predicted costs (None: the true ``c``).
            c: the true costs (shared or per instance; omitted: the program's).
            A: the true rows (omitted with ``b``: the program's).
            b: their true right-hand sides.
            penalty: Stage 2's price of a unit added (and dropped, without ``drop_penalty``): a
                scalar, (n,) or (B, n).
            drop_penalty: its price of a unit dropped, where it differs.
            optimal: (B,) the true optima: given, the loss is the relaxed regret against them.
        """
        made = next((value for value in (A_pred, b_pred, c_pred) if value is not None), None)
        if made is None:
            raise ValueError(
                "A_pred, b_pred and c_pred are all None: give the predicted parameters the loss is for"
            )
        B = made.shape[0]
        like: dict[str, Any] = {"device": made.device, "dtype": made.dtype}
        program = self.program
        if A is None and b is None:
            A, b = program.A, program.b
        c = program.c if c is None else c
        if c is None or A is None or b is None:
            raise ValueError(
                "c, A and b: the true costs and rows are needed (the program has none)"
            )
        sign = program.sign  # minimised inside
        c_true = sign * _batched(c, B, 1, like)
        A_true, b_true = _batched(A, B, 2, like), _batched(b, B, 1, like)
        A1 = A_true if A_pred is None else A_pred
        b1 = b_true if b_pred is None else b_pred
        c1 = c_true if c_pred is None else sign * c_pred
        n = c_true.shape[-1]
        if A1.shape != A_true.shape or b1.shape != b_true.shape or c1.shape != c_true.shape:
            raise ValueError(
                f"the predictions' shapes {tuple(A1.shape)}, {tuple(b1.shape)}, {tuple(c1.shape)} "
                f"differ from the true parameters' {tuple(A_true.shape)}, {tuple(b_true.shape)}, "
                f"{tuple(c_true.shape)}"
            )
        box = [as_bounds(program.lb, n, "lb"), as_bounds(program.ub, n, "ub")]
        if not all(np.isfinite(bound).all() for bound in box):
            raise ValueError(
                "program: RelaxedPostHocLoss needs a finite box (lb and ub), for its barrier"
            )
        lb, ub = (torch.as_tensor(bound, **like).expand(B, n) for bound in box)
        scale = c_true.detach().abs().mean(-1).clamp(min=1e-12)
        mu, price = self.mu * scale, self.elastic * scale
        x1 = self._stage1(c1, A1, b1, lb, ub, mu, price)
        add = _batched(penalty, B, 1, like, n)
        drop = add if drop_penalty is None else _batched(drop_penalty, B, 1, like, n)
        cost = self._stage2(x1, c_true, A_true, b_true, lb, ub, add, drop, mu, price)
        if optimal is not None:
            cost = cost - sign * torch.as_tensor(optimal, **like)
        return cost.mean()

    def close(self) -> None:
        """Nothing to release (it calls no solver); there for code that closes every
        two-stage loss alike."""

    @staticmethod
    def _stage1(
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: torch.Tensor,
        ub: torch.Tensor,
        mu: torch.Tensor,
        price: torch.Tensor,
    ) -> torch.Tensor:
        """Stage 1's relaxed decision: z = (x, s), elastic rows ``A x - s <= b``."""
        B, m, n = A.shape
        eye_n, eye_m = (
            torch.eye(k, dtype=A.dtype, device=A.device).expand(B, k, k) for k in (n, m)
        )
        zeros_nm, zeros_mn = A.new_zeros(B, n, m), A.new_zeros(B, m, n)
        G = torch.cat(
            [
                torch.cat([A, -eye_m], -1),
                torch.cat([zeros_mn, -eye_m], -1),
                torch.cat([eye_n, zeros_nm], -1),
                torch.cat([-eye_n, zeros_nm], -1),
            ],
            1,
        )
        h = torch.cat([b, A.new_zeros(B, m), ub, -lb], 1)
        x0 = (lb + ub) / 2
        s0 = torch.relu(torch.einsum("bmn,bn->bm", A.detach(), x0) - b.detach()) + 1.0
        q = torch.cat([c, price.unsqueeze(-1).expand(B, m)], -1)
        return barrier_solve(q, G, h, torch.cat([x0, s0], -1), mu)[:, :n]

    def _stage2(
        self,
        x1: torch.Tensor,
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: torch.Tensor,
        ub: torch.Tensor,
        add: torch.Tensor,
        drop: torch.Tensor,
        mu: torch.Tensor,
        price: torch.Tensor,
    ) -> torch.Tensor:
        """Stage 2's relaxed cost with its penalty (and elastic violations), per instance."""
        elastic = price.unsqueeze(-1).expand(*A.shape[:2])
        if self.changes == "any":
            return _stage2_any(x1, c, A, b, (lb, ub), (add, drop), mu, elastic)
        return _stage2_one_way(self.changes, x1, c, A, b, (lb, ub), (add, drop), mu, elastic)


def _blocks(A: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The identity and zero blocks of Stage 2's rows: ``eye_n, eye_m, zeros_nm, zeros_mn,
    zeros_nn``, batched as ``A`` (B, m, n)."""
    B, m, n = A.shape
    eye_n, eye_m = (torch.eye(k, dtype=A.dtype, device=A.device).expand(B, k, k) for k in (n, m))
    return eye_n, eye_m, A.new_zeros(B, n, m), A.new_zeros(B, m, n), A.new_zeros(B, n, n)


def _stage2_any(
    x1: torch.Tensor,
    c: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    box: tuple[torch.Tensor, torch.Tensor],
    penalties: tuple[torch.Tensor, torch.Tensor],
    mu: torch.Tensor,
    elastic: torch.Tensor,
) -> torch.Tensor:
    """``changes="any"``: z = (up, down, s), x2 = x1 + up - down."""
    B, m, n = A.shape
    (lb, ub), (add, drop) = box, penalties
    eye_n, eye_m, zeros_nm, zeros_mn, zeros_nn = _blocks(A)
    G = torch.cat(
        [
            torch.cat([A, -A, -eye_m], -1),
            torch.cat([zeros_mn, zeros_mn, -eye_m], -1),
            torch.cat([-eye_n, zeros_nn, zeros_nm], -1),
            torch.cat([zeros_nn, -eye_n, zeros_nm], -1),
            torch.cat([eye_n, -eye_n, zeros_nm], -1),
            torch.cat([-eye_n, eye_n, zeros_nm], -1),
        ],
        1,
    )
    h = torch.cat(
        [
            b - torch.einsum("bmn,bn->bm", A, x1),
            A.new_zeros(B, m),
            A.new_zeros(B, 2 * n),
            ub - x1,
            x1 - lb,
        ],
        1,
    )
    moves = (ub - lb) / 4
    s0 = torch.relu(torch.einsum("bmn,bn->bm", A, x1.detach()) - b) + 1.0
    q = torch.cat([c + add, -c + drop, elastic], -1)
    z = barrier_solve(q, G, h, torch.cat([moves, moves, s0], -1), mu)
    up, down, s = z[:, :n], z[:, n : 2 * n], z[:, 2 * n :]
    return (c * (x1 + up - down)).sum(-1) + (add * up + drop * down).sum(-1) + (elastic * s).sum(-1)


def _stage2_one_way(
    changes: str,
    x1: torch.Tensor,
    c: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    box: tuple[torch.Tensor, torch.Tensor],
    penalties: tuple[torch.Tensor, torch.Tensor],
    mu: torch.Tensor,
    elastic: torch.Tensor,
) -> torch.Tensor:
    """``changes="drop"`` or ``"add"``: z = (x2, s) within [lb, x1] or [x1, ub]."""
    B, m, n = A.shape
    (lb, ub), (add, drop) = box, penalties
    eye_n, eye_m, zeros_nm, zeros_mn, zeros_nn = _blocks(A)
    # z = (x2, s) within [lb, x1] (drops) or [x1, ub] (additions)
    low, high = (lb, x1) if changes == "drop" else (x1, ub)
    G = torch.cat(
        [
            torch.cat([A, -eye_m], -1),
            torch.cat([zeros_mn, -eye_m], -1),
            torch.cat([eye_n, zeros_nm], -1),
            torch.cat([-eye_n, zeros_nm], -1),
        ],
        1,
    )
    h = torch.cat([b, A.new_zeros(B, m), high, -low], 1)
    x0 = (low.detach() + high.detach()) / 2
    s0 = torch.relu(torch.einsum("bmn,bn->bm", A, x0) - b) + 1.0
    moved = -drop if changes == "drop" else add
    z = barrier_solve(torch.cat([c + moved, elastic], -1), G, h, torch.cat([x0, s0], -1), mu)
    x2, s = z[:, :n], z[:, n:]
    change = (x1 - x2) * drop if changes == "drop" else (x2 - x1) * add
    return (c * x2).sum(-1) + change.sum(-1) + (elastic * s).sum(-1)


def _batched(
    value: Any, B: int, ndim: int, like: dict[str, Any], n: int | None = None
) -> torch.Tensor:
    """``value`` as a tensor like the predictions, with a leading batch of B (a shared one of
    ``ndim`` dims expanded; with ``n``, a scalar becomes (B, n))."""
    tensor = torch.as_tensor(
        np.asarray(value) if not isinstance(value, torch.Tensor) else value
    ).to(**like)
    if n is not None and tensor.dim() == 0:
        tensor = tensor.expand(n)
    return tensor.expand(B, *tensor.shape) if tensor.dim() == ndim else tensor
