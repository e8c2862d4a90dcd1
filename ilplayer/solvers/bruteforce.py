"""``bruteforce``: exact, batched enumeration of every integer point of the box, in torch.

It evaluates ``A y <= b`` and ``c·y`` for all points at once (in chunks) on the tensors' own
device, in float64, and keeps the first point of least cost. It is the oracle of the test
suite and a real backend for boxes of up to ``max_points`` points (binary n <= 20 by default).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ilplayer.problem import ProblemTensors, rows_with_equalities
from ilplayer.solver import Solver
from ilplayer.types import Capability, ILPBatch, SolveResult, Status

__all__ = ["DEFAULT_FEASIBILITY_TOL", "DEFAULT_MAX_POINTS", "BruteForceSolver"]

DEFAULT_MAX_POINTS = 2**20
DEFAULT_FEASIBILITY_TOL = 1e-6
_CHUNK_ELEMENTS = 2**22  # about 32 MiB of float64 per intermediate (batch x constraints x points)
_CACHE_ELEMENTS = 2**23  # boxes of up to 64 MiB of float64 points are generated once and kept


def _box_points(lb: torch.Tensor, ub: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The box points numbered ``index`` in mixed-radix order (last variable fastest)."""
    sizes = ub - lb + 1
    strides = torch.ones_like(sizes)
    if len(sizes) > 1:
        strides[:-1] = torch.flip(torch.cumprod(torch.flip(sizes[1:], [0]), 0), [0])
    digits = torch.div(index[:, None], strides[None, :], rounding_mode="floor") % sizes[None, :]
    return (digits + lb[None, :]).to(torch.float64)


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

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS,
                 feasibility_tol: float = DEFAULT_FEASIBILITY_TOL) -> None:
        if not isinstance(max_points, int) or max_points < 1:
            raise ValueError(f"max_points must be a positive integer, got {max_points!r}")
        if not feasibility_tol >= 0:
            raise ValueError(f"feasibility_tol must be >= 0, got {feasibility_tol!r}")
        self.max_points = max_points
        self.feasibility_tol = float(feasibility_tol)
        self._points: tuple[tuple, torch.Tensor] | None = None  # (key, (n, N) points)

    def _points_transposed(self, lb: torch.Tensor, ub: torch.Tensor, start: int, stop: int,
                           total: int) -> torch.Tensor:
        """Points ``start..stop-1`` as an (n, stop - start) tensor; small boxes are cached."""
        if total * len(lb) > _CACHE_ELEMENTS:
            return _box_points(lb, ub, torch.arange(start, stop, device=lb.device)).T
        key = (tuple(lb.tolist()), tuple(ub.tolist()), lb.device)
        if self._points is None or self._points[0] != key:
            all_points = _box_points(lb, ub, torch.arange(total, device=lb.device))
            self._points = (key, all_points.T.contiguous())
        return self._points[1][:, start:stop]

    def _check_size(self, lb: np.ndarray, ub: np.ndarray) -> int:
        sizes = [int(u - l + 1) for l, u in zip(lb.tolist(), ub.tolist())]
        total = 1
        for size in sizes:
            total *= size
        if total > self.max_points:
            values = str(sizes[0]) if min(sizes) == max(sizes) else f"{min(sizes)} to {max(sizes)}"
            raise ValueError(
                f"lb/ub: the box holds {total:.3g} integer points ({len(sizes)} variables with "
                f"{values} values each), more than solver 'bruteforce' enumerates "
                f"(max_points={self.max_points}). Use a MIP backend (see "
                "ilplayer.available_solvers()) or raise solver_options={'max_points': ...}.")
        return total

    def check(self, batch: ProblemTensors) -> None:
        self._check_size(batch.lb, batch.ub)

    def _enumerate(self, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb_np: np.ndarray,
                   ub_np: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        total = self._check_size(lb_np, ub_np)
        device = c.device
        c, A, b = (t.to(torch.float64) for t in (c, A, b))
        lb = torch.tensor(lb_np, dtype=torch.int64, device=device)
        ub = torch.tensor(ub_np, dtype=torch.int64, device=device)
        batch, m = c.shape[0], A.shape[-2]
        shared = A.dim() == 2 and b.dim() == 1
        if not shared:
            A = A.expand(batch, *A.shape[-2:])
            b = b.expand(batch, m)
        chunk = max(1024, _CHUNK_ELEMENTS // (max(m, 1) * (1 if shared else batch)))
        best = torch.full((batch,), float("inf"), dtype=torch.float64, device=device)
        best_index = torch.zeros(batch, dtype=torch.int64, device=device)
        for start in range(0, total, chunk):
            stop = min(start + chunk, total)
            points = self._points_transposed(lb, ub, start, stop, total)   # (n, N)
            excess = (A @ points) - b[..., None]              # (m, N) or (B, m, N)
            feasible = (excess <= self.feasibility_tol).all(dim=-2)
            if shared:  # price only the feasible points, shared by every instance
                index = feasible.nonzero().squeeze(1)
                if len(index) == 0:
                    continue
                chunk_best, position = (c @ points[:, index]).min(dim=1)
                chunk_index = index[position]
            else:
                cost = torch.where(feasible, c @ points, float("inf"))
                chunk_best, chunk_index = cost.min(dim=1)
            better = chunk_best < best                        # strict: earlier point wins ties
            best = torch.where(better, chunk_best, best)
            best_index = torch.where(better, chunk_index + start, best_index)
        has_solution = torch.isfinite(best)
        y = _box_points(lb, ub, best_index)
        status = torch.where(has_solution, int(Status.OPTIMAL), int(Status.INFEASIBLE)).to(torch.int8)
        objective = torch.where(has_solution, best, torch.full_like(best, float("nan")))
        return y, status, objective

    def solve(self, batch: ILPBatch) -> SolveResult:
        t = lambda a: torch.from_numpy(a.copy())
        A, b = rows_with_equalities(t(batch.A), t(batch.b), t(batch.A_eq), t(batch.b_eq),
                                    batch.num_instances, torch.float64)
        y, status, objective = self._enumerate(t(batch.c), A, b, batch.lb, batch.ub)
        return SolveResult(y=y.numpy(), status=status.numpy(), objective=objective.numpy())

    def solve_tensors(self, problem: ProblemTensors) -> tuple[Any, Any, Any]:
        A, b = rows_with_equalities(problem.A, problem.b, problem.A_eq, problem.b_eq,
                                    problem.batch_size, torch.float64)
        return self._enumerate(problem.c, A, b, problem.lb, problem.ub)

    def close(self) -> None:
        self._points = None
