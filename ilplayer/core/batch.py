"""A validated batch (`ProblemTensors`: the tensors on the input's device, the rows dense or sparse,
the box and integrality as float64 vectors) and its host view for the backends."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ilplayer.core.matrices import dense, is_sparse
from ilplayer.core.records import ILPBatch

__all__ = ["ProblemTensors", "rows_with_equalities"]


@dataclass(frozen=True, eq=False)
class ProblemTensors:
    """A validated batch ``min c_i·y s.t. A_i y <= b_i, lb <= y <= ub, y_j integer where
    integrality_j``.

    ``c`` is (B, n); ``A`` is (m, n) when shared by the batch or (B, m, n); ``b`` is (m,) or
    (B, m). Tensors are detached and live on one device; ``lb`` and ``ub`` are float64 NumPy
    vectors (±inf allowed) and ``integrality`` a bool (n,) or (B, n) array (host metadata,
    never part of autograd; None: all integer).

    With a ``cost_map`` (n, d), float64 on ``c``'s device, ``c`` is (B, d): costs per entry of
    the decision the caller reads (a TSP's edges), the program's costs are ``c @ cost_map.T``
    and its answers are read as ``y @ cost_map``. `unmapped` is the program itself;
    the dispatcher solves that, so everything past it sees no map.
    """

    c: torch.Tensor
    A: torch.Tensor
    b: torch.Tensor
    lb: np.ndarray
    ub: np.ndarray
    A_eq: torch.Tensor | None = None
    b_eq: torch.Tensor | None = None
    integrality: np.ndarray = None  # type: ignore[assignment]
    cost_map: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.integrality is None:
            n = self.c.shape[-1] if self.cost_map is None else self.cost_map.shape[0]
            object.__setattr__(self, "integrality", np.ones(n, dtype=bool))

    def unmapped(self) -> ProblemTensors:
        """The program in its own variables: costs ``c @ cost_map.T``, no map (itself when
        it has none)."""
        if self.cost_map is None:
            return self
        return dataclasses.replace(
            self, c=self.c.to(torch.float64) @ self.cost_map.T, cost_map=None
        )

    @property
    def pure_integer(self) -> bool:
        """Every variable integer, on a finite box (the paper's case)."""
        return bool(
            self.integrality.all() and np.isfinite(self.lb).all() and np.isfinite(self.ub).all()
        )

    @property
    def has_continuous(self) -> bool:
        return not bool(self.integrality.all())

    @property
    def has_infinite_bounds(self) -> bool:
        return not bool(np.isfinite(self.lb).all() and np.isfinite(self.ub).all())

    @property
    def num_equalities(self) -> int:
        return 0 if self.A_eq is None else int(self.A_eq.shape[-2])

    def repeat(self, copies: int, c: torch.Tensor) -> ProblemTensors:
        """``copies`` stacked copies of this batch (copy-major) with the costs ``c``
        (copies·B, n): per-instance constraints are repeated, shared ones kept."""
        if c.shape != (copies * self.batch_size, self.num_variables):
            raise ValueError(
                f"c must have shape ({copies * self.batch_size}, {self.num_variables}) "
                f"for {copies} copies of this batch, got {tuple(c.shape)}"
            )
        tile = lambda t, shared_dims: (
            t
            if t is None or is_sparse(t) or t.dim() == shared_dims
            else t.repeat(copies, *([1] * (t.dim() - 1)))
        )
        integer = (
            self.integrality
            if self.integrality.ndim == 1
            else np.tile(self.integrality, (copies, 1))
        )
        return dataclasses.replace(
            self,
            c=c,
            A=tile(self.A, 2),
            b=tile(self.b, 1),
            A_eq=tile(self.A_eq, 2),
            b_eq=tile(self.b_eq, 1),
            integrality=integer,
        )

    def take(self, index: torch.Tensor, c: torch.Tensor) -> ProblemTensors:
        """The instances ``index`` of this batch with the costs ``c`` (len(index), n):
        per-instance constraints and integrality indexed, shared ones kept."""
        pick = lambda t, shared_dims: (
            t
            if t is None or not isinstance(t, torch.Tensor) or t.dim() == shared_dims
            else t[index.to(t.device)]
        )
        integer = (
            self.integrality
            if self.integrality.ndim == 1
            else self.integrality[index.cpu().numpy()]
        )
        return dataclasses.replace(
            self,
            c=c,
            A=pick(self.A, 2),
            b=pick(self.b, 1),
            A_eq=pick(self.A_eq, 2),
            b_eq=pick(self.b_eq, 1),
            integrality=integer,
        )

    @property
    def batch_size(self) -> int:
        return int(self.c.shape[0])

    @property
    def num_variables(self) -> int:
        return int(self.c.shape[1])

    @property
    def num_constraints(self) -> int:
        return int(self.A.shape[-2])

    @property
    def shared_constraints(self) -> bool:
        shared_eq = (
            self.A_eq is None
            or self.b_eq is None
            or (len(self.A_eq.shape) == 2 and self.b_eq.dim() == 1)
        )
        return len(self.A.shape) == 2 and self.b.dim() == 1 and shared_eq

    @property
    def device(self) -> torch.device:
        return self.c.device

    @property
    def num_box_points(self) -> float:
        """Number of integer points in the box (a Python int, exact); ``inf`` unless the
        program is pure-integer on a finite box."""
        if not self.pure_integer:
            return math.inf
        return math.prod(int(u - l + 1) for l, u in zip(self.lb.tolist(), self.ub.tolist()))

    def host_groups(self) -> Iterator[tuple[np.ndarray, ILPBatch]]:
        """One host copy in float64, split into groups that share ``(A, b)``.

        Yields ``(row_indices, batch)``; identical constraint rows in a per-instance ``A`` are
        merged so that a backend builds one model per distinct ``(A, b)``.
        """
        host = lambda t: (
            t if is_sparse(t) else t.to("cpu", torch.float64).numpy()
        )  # sparse stays sparse
        c, A, b = host(self.c), host(self.A), host(self.b)
        n = self.num_variables
        if self.num_constraints == 0:  # box-only: one group, whatever the layout of A
            A, b = np.zeros((0, n)), np.zeros(0)
        if self.num_equalities:
            A_eq, b_eq = host(self.A_eq), host(self.b_eq)
        else:
            A_eq, b_eq = np.zeros((0, n)), np.zeros(0)
        integer = self.integrality
        if A.ndim == 2 and b.ndim == 1 and A_eq.ndim == 2 and b_eq.ndim == 1 and integer.ndim == 1:
            yield (
                np.arange(len(c)),
                ILPBatch(
                    c=c, A=A, b=b, lb=self.lb, ub=self.ub, A_eq=A_eq, b_eq=b_eq, integrality=integer
                ),
            )
            return
        B, m, k = len(c), self.num_constraints, self.num_equalities
        A, A_eq = dense(A), dense(A_eq)  # per-instance rows are dense
        A, b = np.broadcast_to(A, (B, m, n)), np.broadcast_to(b, (B, m))
        A_eq, b_eq = np.broadcast_to(A_eq, (B, k, n)), np.broadcast_to(b_eq, (B, k))
        integer = np.broadcast_to(integer, (B, n))
        keys = np.concatenate(
            [A.reshape(B, m * n), b, A_eq.reshape(B, k * n), b_eq, integer], axis=1
        )
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        for group, row in enumerate(first):
            rows = np.flatnonzero(inverse == group)
            yield (
                rows,
                ILPBatch(
                    c=c[rows],
                    A=A[row],
                    b=b[row],
                    lb=self.lb,
                    ub=self.ub,
                    A_eq=A_eq[row],
                    b_eq=b_eq[row],
                    integrality=integer[row],
                ),
            )


def rows_with_equalities(
    A: torch.Tensor,
    b: torch.Tensor,
    A_eq: torch.Tensor | None,
    b_eq: torch.Tensor | None,
    batch: int,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``A, b`` followed by each equality as the two rows ``A_eq y <= b_eq`` and
    ``-A_eq y <= -b_eq``, in ``dtype`` (per instance when any part is), for the tests that
    ask ``excess <= tol`` of every row: there it reads ``|A_eq y - b_eq| <= tol``."""
    if A_eq is None or b_eq is None or A_eq.shape[-2] == 0:
        return A, b
    A, b, A_eq, b_eq = (x.to(dtype) for x in (A, b, A_eq, b_eq))
    parts_A, parts_b = [A, A_eq, -A_eq], [b, b_eq, -b_eq]
    if any(x.dim() == 3 for x in parts_A) or any(x.dim() == 2 for x in parts_b):
        parts_A = [x.expand(batch, *x.shape[-2:]) for x in parts_A]
        parts_b = [x.expand(batch, x.shape[-1]) for x in parts_b]
    return torch.cat(parts_A, dim=-2), torch.cat(parts_b, dim=-1)
