"""``bruteforce``: exact, batched enumeration of every integer point of the box, in torch.

It evaluates ``A y <= b`` and ``c·y`` for all points at once (in chunks) on the tensors' own
device, in float64, and keeps the first point of least cost. It is the oracle of the test
suite and a real backend for boxes of up to ``max_points`` points (binary n <= 20 by default).

The box is the product of a head box (the first variables) and a tail box (the rest), and a
point's index is ``head index x tail size + tail index``. So ``A y = A_head y_head + A_tail
y_tail`` is a sum of two small tables, each made by one product over ~sqrt(points) points, and
so is ``c·y``: an addition per point and row instead of a dot product over all n variables,
and no (n, points) matrix to read (faster than one product over all points on every box
measured: docs/records/defaults.md, "Bruteforce").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors, rows_with_equalities
from ilplayer.core.matrices import dense
from ilplayer.core.records import Capability, ILPBatch, SolveResult, Status
from ilplayer.core.tensors import dense_tensor
from ilplayer.solvers.contract import Solver

__all__ = ["DEFAULT_FEASIBILITY_TOL", "DEFAULT_MAX_POINTS", "BruteForceSolver"]

DEFAULT_MAX_POINTS = 2**20
DEFAULT_FEASIBILITY_TOL = 1e-6
# About 8 MiB of float64 per intermediate (faster than blocks of 2^22).
_CHUNK_ELEMENTS = 2**20
# Price only the feasible points when at most 1 in SPARSE_RATIO is feasible (on the demo's own
# batches 2 was faster than 4 on large batches and close on small ones).
SPARSE_RATIO = 2


def box_points_at(lb: torch.Tensor, ub: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The box points numbered ``index`` in mixed-radix order (last variable fastest)."""
    sizes = ub - lb + 1
    strides = torch.ones_like(sizes)
    if len(sizes) > 1:
        strides[:-1] = torch.flip(torch.cumprod(torch.flip(sizes[1:], [0]), 0), [0])
    digits = torch.div(index[:, None], strides[None, :], rounding_mode="floor") % sizes[None, :]
    return (digits + lb[None, :]).to(torch.float64)


def head_size(sizes: list[int]) -> int:
    """How many leading variables form the head box: the tail box (the rest) is the longest
    suffix with at most ~sqrt(points) points, so both tables stay small."""
    total = math.prod(sizes)
    tail, head = 1, len(sizes)
    while head > 0 and tail * sizes[head - 1] <= max(2, int(total**0.5)):
        head -= 1
        tail *= sizes[head]
    return head


def _answers(
    lb: torch.Tensor, ub: torch.Tensor, best: torch.Tensor, best_index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(y, status, objective)`` of the best points found (index into the box's points)."""
    has_solution = torch.isfinite(best)
    y = box_points_at(lb, ub, best_index)
    status = torch.where(has_solution, int(Status.OPTIMAL), int(Status.INFEASIBLE))
    objective = torch.where(has_solution, best, torch.full_like(best, float("nan")))
    return y, status.to(torch.int8), objective


class BruteForceSolver(Solver):
    """Exact enumeration of the box; refuses boxes of more than ``max_points`` points.

    Args:
        max_points: largest number of integer points in the box it agrees to enumerate.
        feasibility_tol: a point is feasible when ``A y - b <= feasibility_tol``.

    Example:
        >>> y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver="bruteforce")  # doctest: +SKIP
    """

    name = "bruteforce"
    capabilities = frozenset({Capability.DEVICE_TENSORS, Capability.EQUALITY_CONSTRAINTS})

    def __init__(
        self, max_points: int = DEFAULT_MAX_POINTS, feasibility_tol: float = DEFAULT_FEASIBILITY_TOL
    ) -> None:
        if not isinstance(max_points, int) or max_points < 1:
            raise ValueError(f"max_points must be a positive integer, got {max_points!r}")
        if not feasibility_tol >= 0:
            raise ValueError(f"feasibility_tol must be >= 0, got {feasibility_tol!r}")
        self.max_points = max_points
        self.feasibility_tol = float(feasibility_tol)
        self._tables: tuple[tuple, tuple[int, torch.Tensor, torch.Tensor]] | None = None

    def _halves(self, lb: torch.Tensor, ub: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
        """The head size and the (head, N_head) and (tail, N_tail) point tables, kept per box."""
        key = (tuple(lb.tolist()), tuple(ub.tolist()), lb.device)
        if self._tables is None or self._tables[0] != key:
            sizes = (ub - lb + 1).tolist()
            head = head_size(sizes)
            heads = box_points_at(
                lb[:head], ub[:head], torch.arange(math.prod(sizes[:head]), device=lb.device)
            )
            tails = box_points_at(
                lb[head:], ub[head:], torch.arange(math.prod(sizes[head:]), device=lb.device)
            )
            self._tables = (key, (head, heads.T.contiguous(), tails.T.contiguous()))
        return self._tables[1]

    def _check_size(self, lb: np.ndarray, ub: np.ndarray) -> None:
        sizes = [int(u - l + 1) for l, u in zip(lb.tolist(), ub.tolist())]
        total = math.prod(sizes)
        if total > self.max_points:
            values = str(sizes[0]) if min(sizes) == max(sizes) else f"{min(sizes)} to {max(sizes)}"
            raise ValueError(
                f"lb/ub: the box holds {total:.3g} integer points ({len(sizes)} variables with "
                f"{values} values each), more than solver 'bruteforce' enumerates "
                f"(max_points={self.max_points}). Use a MIP backend (see "
                "ilplayer.available_solvers()), solver 'knapsack' for a program of one row, or raise "
                "solver_options={'max_points': ...}."
            )

    def check(self, batch: ProblemTensors) -> None:
        self._check_size(batch.lb, batch.ub)

    def _enumerate(
        self,
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb_np: np.ndarray,
        ub_np: np.ndarray,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self._check_size(lb_np, ub_np)
        device = c.device
        c, A, b = (t.to(torch.float64) for t in (c, A, b))
        lb = torch.tensor(lb_np, dtype=torch.int64, device=device)
        ub = torch.tensor(ub_np, dtype=torch.int64, device=device)
        batch, m = c.shape[0], A.shape[-2]
        shared = A.dim() == 2 and b.dim() == 1
        if not shared:
            A = A.expand(batch, *A.shape[-2:])
            b = b.expand(batch, m)
        head, heads, tails = self._halves(lb, ub)  # (h, N_head), (n - h, N_tail)
        tail_size = tails.shape[1]
        row_tail = A[..., head:] @ tails - b[..., None]  # (m, N_tail) or (B, m, N_tail)
        cost_tail = c[:, head:] @ tails  # (B, N_tail)
        # Head points per block. The feasibility test ((m or B x m) x points) may take 4x the cap:
        # one block then covers the box and pricing the feasible points or all is chosen once
        # (blocks that chose differently were slower). Pricing all (B x points) keeps to the cap.
        rows = max(1, 4 * _CHUNK_ELEMENTS // (tail_size * max(m, 1) * (1 if shared else batch)))
        priced_rows = max(1, _CHUNK_ELEMENTS // (tail_size * batch))
        best = torch.full((batch,), float("inf"), dtype=torch.float64, device=device)
        best_index = torch.zeros(batch, dtype=torch.int64, device=device)

        def keep(chunk_best: torch.Tensor, chunk_index: torch.Tensor) -> None:
            better = chunk_best < best  # strict: the earlier point wins a tie
            best.copy_(torch.where(better, chunk_best, best))
            best_index.copy_(torch.where(better, chunk_index, best_index))

        for first in range(0, heads.shape[1], rows):  # a block of head points at a time
            block = heads[:, first : first + rows]
            excess = (A[..., :head] @ block)[..., None]
            excess = excess + row_tail[..., None, :]  # (.., m, H, N_tail)
            feasible = (excess <= self.feasibility_tol).all(dim=-3)  # (.., H, N_tail)
            index = feasible.flatten().nonzero().squeeze(1) if shared else None
            if index is not None and len(index) * SPARSE_RATIO <= feasible.numel():
                # Few feasible points (shared rows): price only those. With many, an addition of
                # the two cost tables per point is cheaper than gathering the points.
                if len(index):  # the feasible points themselves, priced by one product as a whole
                    points = torch.cat(
                        [block[:, index // tail_size], tails[:, index % tail_size]]
                    )  # (n, K)
                    chunk_best, position = (c @ points).min(dim=1)
                    keep(chunk_best, index[position] + first * tail_size)
                continue
            cost_head = c[:, :head] @ block  # (B, H)
            # every point priced, infeasible ones at +inf
            for sub in range(0, block.shape[1], priced_rows):
                part = slice(sub, sub + priced_rows)
                cost = cost_head[:, part, None] + cost_tail[:, None, :]  # (B, H', N_tail)
                cost.masked_fill_(~feasible[..., part, :], float("inf"))
                chunk_best, chunk_index = cost.flatten(1).min(dim=1)
                keep(chunk_best, chunk_index + (first + sub) * tail_size)
        return _answers(lb, ub, best, best_index)

    def solve(self, batch: ILPBatch) -> SolveResult:
        t = lambda a: torch.from_numpy(dense(a).copy())  # it enumerates small boxes: dense rows
        A, b = rows_with_equalities(
            t(batch.A), t(batch.b), t(batch.A_eq), t(batch.b_eq), batch.num_instances, torch.float64
        )
        y, status, objective = self._enumerate(t(batch.c), A, b, batch.lb, batch.ub)
        return SolveResult(y=y.numpy(), status=status.numpy(), objective=objective.numpy())

    def solve_tensors(self, problem: ProblemTensors) -> tuple[Any, Any, Any]:
        A, b = rows_with_equalities(
            dense_tensor(problem.A, problem.device),
            problem.b,
            dense_tensor(problem.A_eq, problem.device),
            problem.b_eq,
            problem.batch_size,
            torch.float64,
        )
        return self._enumerate(problem.c, A, b, problem.lb, problem.ub)

    def close(self) -> None:
        self._tables = None
