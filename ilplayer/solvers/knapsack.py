"""``knapsack``: exact, batched meet-in-the-middle for programs of one inequality row, in torch.

``min c·y s.t. a·y <= b, lb <= y <= ub, y integer`` (any signs, real weights) is split into a
head and a tail of the variables. Each half's box points are enumerated once, each instance
weighs and prices them (two products), the tail's points are sorted by weight and their least
cost taken as a running minimum, and each head point looks up, by binary search, the cheapest
tail point that still fits (Horowitz and Sahni's two lists). That is about 2·sqrt(points)
points per instance instead of all of them: 30 binaries are two lists of 32,768, where
``bruteforce`` would price a billion points and a branch-and-bound solver may search deep on
near-alike items (a knapsack whose items all weigh about the same). Runs on the tensors'
device, in float64; a host batch (`solve`) runs the same steps in NumPy, whose small-array
operations cost a fraction of torch's dispatch on the CPU (a training batch is a few dozen of
them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.matrices import dense
from ilplayer.core.records import Capability, ILPBatch, SolveResult, Status
from ilplayer.core.tensors import dense_tensor
from ilplayer.solvers.bruteforce import DEFAULT_FEASIBILITY_TOL, box_points_at, head_size
from ilplayer.solvers.contract import Solver

__all__ = ["DEFAULT_MAX_HALF_POINTS", "KnapsackSolver"]

DEFAULT_MAX_HALF_POINTS = 2**20
_CHUNK_ELEMENTS = 2**22  # instances per chunk: about this many half points in each (B, N) table


class KnapsackSolver(Solver):
    """Exact for programs of one inequality row over a finite box (rows of zeros aside, which
    hold or fail by their right-hand side); refuses any other.

    Args:
        max_half_points: largest number of box points in either half (2^20: binary n <= 40).
        feasibility_tol: a point is feasible when ``a·y - b <= feasibility_tol``.

    Example:
        >>> y, status = ilplayer.solve(-price, weight[:, None, :], room, 0, 1, solver="knapsack")  # doctest: +SKIP
    """

    name = "knapsack"
    capabilities = frozenset({Capability.DEVICE_TENSORS, Capability.ONE_ROW_ONLY})

    def __init__(
        self,
        max_half_points: int = DEFAULT_MAX_HALF_POINTS,
        feasibility_tol: float = DEFAULT_FEASIBILITY_TOL,
    ) -> None:
        if (
            isinstance(max_half_points, bool)
            or not isinstance(max_half_points, int)
            or max_half_points < 1
        ):
            raise ValueError(f"max_half_points must be a positive integer, got {max_half_points!r}")
        if not feasibility_tol >= 0:
            raise ValueError(f"feasibility_tol must be >= 0, got {feasibility_tol!r}")
        self.max_half_points = max_half_points
        self.feasibility_tol = float(feasibility_tol)
        self._tables: tuple[tuple, tuple[int, torch.Tensor, torch.Tensor]] | None = None

    def _check(self, A: Any, equalities: int, lb: np.ndarray, ub: np.ndarray) -> Any:
        """The mask of ``A``'s rows (a tensor or an array) with a non-zero coefficient (in any
        instance), of ``A``'s kind; refuses more than one, any equality, and halves past
        ``max_half_points``."""
        if equalities:
            raise ValueError(
                f"A_eq: {equalities} equality row(s); solver 'knapsack' solves programs of one "
                "inequality row (use a MIP backend, see ilplayer.available_solvers(), or 'bruteforce')"
            )
        used = (A != 0).any(-1)
        used = used.any(0) if used.ndim > 1 else used  # (m,): in any instance
        if int(used.sum()) > 1:
            raise ValueError(
                f"A: {int(used.sum())} rows with non-zero coefficients; solver 'knapsack' solves "
                "programs of one inequality row (use a MIP backend, see "
                "ilplayer.available_solvers(), or 'bruteforce')"
            )
        sizes = [int(u - l + 1) for l, u in zip(lb.tolist(), ub.tolist())]
        head = head_size(sizes)
        largest = max(math.prod(sizes[:head]), math.prod(sizes[head:]))
        if largest > self.max_half_points:
            raise ValueError(
                f"lb/ub: the box holds {math.prod(sizes):.3g} integer points ({len(sizes)} variables), "
                f"halves of up to {largest:.3g}, more than solver 'knapsack' enumerates "
                f"(max_half_points={self.max_half_points}). Use a MIP backend or raise "
                "solver_options={'max_half_points': ...}."
            )
        return used

    def check(self, batch: ProblemTensors) -> None:
        equalities = 0 if batch.A_eq is None else int(batch.A_eq.shape[-2])
        self._check(dense_tensor(batch.A, batch.device), equalities, batch.lb, batch.ub)

    def _halves(self, lb: torch.Tensor, ub: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
        """The head size and the (head, N_head) and (tail, N_tail) point tables, kept per box."""
        key = (tuple(lb.tolist()), tuple(ub.tolist()), lb.device)
        if self._tables is None or self._tables[0] != key:
            sizes = (ub - lb + 1).tolist()
            head = head_size(sizes)
            index = lambda count: torch.arange(count, device=lb.device)
            heads = box_points_at(lb[:head], ub[:head], index(math.prod(sizes[:head])))
            tails = box_points_at(lb[head:], ub[head:], index(math.prod(sizes[head:])))
            self._tables = (key, (head, heads.T.contiguous(), tails.T.contiguous()))
        return self._tables[1]

    def _solve(
        self,
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb_np: np.ndarray,
        ub_np: np.ndarray,
        equalities: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        used = self._check(A, equalities, lb_np, ub_np)
        device, batch = c.device, c.shape[0]
        c, A, b = (
            c.to(torch.float64),
            A.to(torch.float64),
            b.to(torch.float64).expand(batch, A.shape[-2]),
        )
        # An all-zero row holds or fails whatever y is: 0 <= b. The other row, if any, is the knapsack's.
        holds = (b[:, ~used] >= -self.feasibility_tol).all(dim=1)
        row = int(used.nonzero()[0]) if bool(used.any()) else None
        a = torch.zeros_like(c) if row is None else A[..., row, :].expand_as(c)
        cap = torch.zeros(batch, dtype=torch.float64, device=device) if row is None else b[:, row]
        lb = torch.tensor(lb_np, dtype=torch.int64, device=device)
        ub = torch.tensor(ub_np, dtype=torch.int64, device=device)
        head, heads, tails = self._halves(lb, ub)
        best = torch.empty(batch, dtype=torch.float64, device=device)
        head_index = torch.empty(batch, dtype=torch.int64, device=device)
        tail_index = torch.empty(batch, dtype=torch.int64, device=device)
        step = max(1, _CHUNK_ELEMENTS // max(heads.shape[1], tails.shape[1]))
        for first in range(0, batch, step):
            part = slice(first, first + step)
            best[part], head_index[part], tail_index[part] = self._match(
                c[part], a[part], cap[part], head, heads, tails
            )
        found = torch.isfinite(best) & holds
        # No solution: the box's first point as the placeholder, as bruteforce gives.
        y = torch.cat([heads[:, head_index].T, tails[:, tail_index].T], dim=1)
        y = torch.where(found[:, None], y, lb.to(torch.float64).expand_as(y))
        status = torch.where(found, int(Status.OPTIMAL), int(Status.INFEASIBLE)).to(torch.int8)
        objective = torch.where(found, (c * y).sum(-1), torch.full_like(best, float("nan")))
        return y, status, objective

    def _match(
        self,
        c: torch.Tensor,
        a: torch.Tensor,
        cap: torch.Tensor,
        head: int,
        heads: torch.Tensor,
        tails: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Best (cost, head point, tail point) per instance of one chunk."""
        tail_weight, order = (a[:, head:] @ tails).sort(dim=1, stable=True)  # lightest first
        tail_cost = (c[:, head:] @ tails).gather(1, order)
        cheapest, at = tail_cost.cummin(dim=1)  # least cost among the lightest k
        room = cap[:, None] - a[:, :head] @ heads + self.feasibility_tol  # (B, N_head)
        fits = (
            torch.searchsorted(tail_weight, room, right=True) - 1
        )  # heaviest tail point that fits
        cost = c[:, :head] @ heads + cheapest.gather(1, fits.clamp(min=0))
        cost = cost.masked_fill(fits < 0, float("inf"))
        best, chosen = cost.min(dim=1)
        position = at.gather(1, fits.gather(1, chosen[:, None]).clamp(min=0)).squeeze(1)
        return best, chosen, order.gather(1, position[:, None]).squeeze(1)

    def solve(self, batch: ILPBatch) -> SolveResult:
        c, A, b = batch.c, dense(batch.A), batch.b
        used = self._check(A, int(batch.A_eq.shape[-2]), batch.lb, batch.ub)
        k = len(c)
        # An all-zero row holds or fails whatever y is: 0 <= b. The other row, if any, is the knapsack's.
        holds = (b[~used] >= -self.feasibility_tol).all()
        row = int(np.flatnonzero(used)[0]) if used.any() else None
        a = np.zeros_like(c) if row is None else np.broadcast_to(A[row], c.shape)
        cap = np.full(k, 0.0 if row is None else float(b[row]))
        lb, ub = (torch.from_numpy(np.asarray(v, dtype=np.int64)) for v in (batch.lb, batch.ub))
        head, head_points, tail_points = self._halves(lb, ub)
        heads, tails = head_points.numpy(), tail_points.numpy()
        best, chosen, tail_index = np.empty(k), np.empty(k, np.int64), np.empty(k, np.int64)
        step = max(1, _CHUNK_ELEMENTS // max(heads.shape[1], tails.shape[1]))
        for first in range(0, k, step):
            part = slice(first, first + step)
            best[part], chosen[part], tail_index[part] = _match_host(
                c[part], a[part], cap[part], head, heads, tails, self.feasibility_tol
            )
        found = np.isfinite(best) & holds
        y = np.concatenate([heads[:, chosen].T, tails[:, tail_index].T], axis=1)
        y[~found] = batch.lb  # no solution: the box's first point, as bruteforce gives
        return SolveResult(
            y=y,
            status=np.where(found, int(Status.OPTIMAL), int(Status.INFEASIBLE)).astype(np.int8),
            objective=np.where(found, np.einsum("kn,kn->k", c, y), np.nan),
        )

    def solve_tensors(self, problem: ProblemTensors) -> tuple[Any, Any, Any]:
        return self._solve(
            problem.c, dense_tensor(problem.A, problem.device), problem.b, problem.lb, problem.ub
        )

    def close(self) -> None:
        self._tables = None


def _match_host(
    c: np.ndarray,
    a: np.ndarray,
    cap: np.ndarray,
    head: int,
    heads: np.ndarray,
    tails: np.ndarray,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`KnapsackSolver._match` in NumPy: the same steps and the same choice among ties."""
    tail_weight = a[:, head:] @ tails
    order = np.argsort(tail_weight, axis=1, kind="stable")  # lightest first
    tail_weight = np.take_along_axis(tail_weight, order, 1)
    tail_cost = np.take_along_axis(c[:, head:] @ tails, order, 1)
    cheapest = np.minimum.accumulate(tail_cost, axis=1)  # least cost among the lightest k
    # where it was reached, the last of equals (as torch's cummin)
    at = np.maximum.accumulate(
        np.where(tail_cost <= cheapest, np.arange(tail_cost.shape[1]), 0), axis=1
    )
    room = cap[:, None] - a[:, :head] @ heads + tol  # (B, N_head)
    fits = (
        np.stack(  # heaviest tail point that fits
            [np.searchsorted(w, r, side="right") for w, r in zip(tail_weight, room)]
        )
        - 1
    )
    cost = c[:, :head] @ heads + np.take_along_axis(cheapest, np.maximum(fits, 0), 1)
    cost[fits < 0] = np.inf
    rows = np.arange(len(c))
    chosen = cost.argmin(axis=1)
    position = at[rows, np.maximum(fits[rows, chosen], 0)]
    return cost[rows, chosen], chosen, order[rows, position]
