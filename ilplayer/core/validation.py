"""Validation of user input into a `ProblemTensors` batch, and its host view.

Every check runs before anything is solved, and every error names the argument at fault.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ilplayer.core.bounds import Bounds, as_bounds, as_integrality, check_bound_values
from ilplayer.core.matrices import dense, is_sparse
from ilplayer.core.records import ILPBatch
from ilplayer.core.tensors import (
    as_rows,
    check_finite,
    input_tensor,
)

__all__ = ["ProblemTensors", "check_cost_map", "rows_with_equalities", "validate_problem"]


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


def _check_rows(c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, names: tuple[str, str]) -> None:
    """Shapes and devices of one block of rows (``A, b`` or ``A_eq, b_eq``) against ``c``."""
    a_name, b_name = names
    B, n = c.shape
    ndim = len(A.shape)
    if ndim not in (2, 3):
        raise ValueError(f"{a_name} must have shape (m, n) or (batch, m, n), got {tuple(A.shape)}")
    if A.shape[-1] != n:
        raise ValueError(
            f"{a_name} has {A.shape[-1]} columns but c has {n} variables "
            f"({a_name} {tuple(A.shape)}, c {tuple(c.shape)})"
        )
    if ndim == 3 and A.shape[0] != B:
        raise ValueError(f"{a_name} has batch size {A.shape[0]} but c has {B}")
    m = A.shape[-2]
    if b.dim() not in (1, 2) or b.shape[-1] != m:
        raise ValueError(
            f"{b_name} must have shape ({m},) or (batch, {m}) to match {a_name} "
            f"{tuple(A.shape)}, got {tuple(b.shape)}"
        )
    if b.dim() == 2 and b.shape[0] != B:
        raise ValueError(f"{b_name} has batch size {b.shape[0]} but c has {B}")
    for name, tensor in ((a_name, A), (b_name, b)):
        if is_sparse(tensor):  # a host matrix, checked when it was converted
            continue
        if tensor.device != c.device:
            raise ValueError(
                f"{name} is on {tensor.device} but c is on {c.device}: "
                "all inputs must be on one device"
            )
        check_finite(tensor, name)


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


def check_cost_map(cost_map: Any) -> torch.Tensor | None:
    """``cost_map`` as a float64 (n, d) tensor (None stays None), or a clear error."""
    if cost_map is None:
        return None
    tensor = input_tensor(cost_map, "cost_map").detach().to(torch.float64)
    if tensor.dim() != 2 or 0 in tensor.shape:
        raise ValueError(
            "cost_map must have shape (num_variables, num_costs): one row per variable of the "
            f"program, one column per cost entry, got {tuple(tensor.shape)}"
        )
    check_finite(tensor, "cost_map")
    return tensor


def _mapping_for(c: torch.Tensor, A: Any, mapping: torch.Tensor) -> torch.Tensor:
    """``cost_map`` checked against ``c`` (B, d) and ``A``'s columns, on ``c``'s device."""
    if c.dim() != 2 or c.shape[-1] != mapping.shape[1]:
        raise ValueError(
            f"c must have shape (batch, {mapping.shape[1]}) (one cost per column of cost_map "
            f"{tuple(mapping.shape)}), got {tuple(c.shape)}"
        )
    check_finite(c, "c")
    columns = None if A is None else A.shape[-1]
    if columns is not None and columns != mapping.shape[0]:
        raise ValueError(
            f"cost_map has {mapping.shape[0]} rows but A has {columns} columns: cost_map needs "
            "one row per variable of the program"
        )
    return mapping.to(c.device)


def _equalities(c: torch.Tensor, A_eq: Any, b_eq: Any) -> tuple[Any, Any]:
    """``A_eq``, ``b_eq`` checked against ``c``; None for none (or 0 rows)."""
    if (A_eq is None) != (b_eq is None):
        raise ValueError("A_eq and b_eq must both be given, or both be None (no equalities)")
    if A_eq is None:
        return None, None
    A_eq, b_eq = as_rows(A_eq, "A_eq"), input_tensor(b_eq, "b_eq")
    _check_rows(c, A_eq, b_eq, ("A_eq", "b_eq"))
    if A_eq.shape[-2] == 0:
        return None, None
    return A_eq, b_eq


def validate_problem(
    c: Any,
    A: Any,
    b: Any,
    lb: Bounds,
    ub: Bounds,
    A_eq: Any = None,
    b_eq: Any = None,
    integrality: Any = None,
    cost_map: Any = None,
) -> ProblemTensors:
    """Check shapes, dtypes, devices, finiteness and bounds; raise a clear error otherwise.

    ``c``, ``A`` and ``b`` may be torch tensors or numpy arrays; ``A`` and ``A_eq`` may also be
    sparse (scipy.sparse, or a torch sparse matrix that does not require grad), kept as a host
    CSR matrix that goes to the backend without a dense copy. ``A`` and ``b`` may have 0 rows, or both be
    None, for a box-only problem. ``A_eq`` (m_eq, n) or (batch, m_eq, n) and ``b_eq`` (m_eq,)
    or (batch, m_eq) add equality constraints ``A_eq y = b_eq``. ``integrality`` (n,) or
    (batch, n): 1 for an integer variable, 0 for a continuous one (None: all integer); ``lb``
    and ``ub`` may be ``-inf``/``inf``. ``cost_map`` (n, d): ``c`` is (B, d), costs per entry
    of the decision ``y @ cost_map``; the program's costs are ``c @ cost_map.T``.

    Raises:
        TypeError: an argument is not a floating-point tensor, or a bound is not numeric.
        ValueError: a shape, device or value is wrong; the message names the argument.
    """
    c = input_tensor(c, "c")
    mapping = check_cost_map(cost_map)
    if mapping is not None:
        mapping = _mapping_for(c, A, mapping)
        problem = validate_problem(
            c.detach().to(torch.float64) @ mapping.T, A, b, lb, ub, A_eq, b_eq, integrality
        )
        return dataclasses.replace(problem, c=c.detach(), cost_map=mapping)
    if (A is None) != (b is None):
        raise ValueError("A and b must both be given, or both be None (no constraints)")
    if A is None:  # a box-only problem
        A = torch.zeros((0, c.shape[-1]), dtype=c.dtype, device=c.device)
        b = torch.zeros((0,), dtype=c.dtype, device=c.device)
    A = as_rows(A, "A")
    b = input_tensor(b, "b")
    if c.dim() != 2:
        hint = " (use c.unsqueeze(0) for a single instance)" if c.dim() == 1 else ""
        raise ValueError(f"c must have shape (batch, num_variables), got {tuple(c.shape)}{hint}")
    B, n = c.shape
    if B == 0:
        raise ValueError("c is an empty batch (batch size 0): there is nothing to solve")
    if n == 0:
        raise ValueError("c has 0 variables: num_variables must be at least 1")
    check_finite(c, "c")
    _check_rows(c, A, b, ("A", "b"))  # m = 0 rows is a box-only problem
    lb_vec = as_bounds(lb, n, "lb")
    ub_vec = as_bounds(ub, n, "ub")
    integer = as_integrality(integrality, n)
    if integer.ndim == 2 and integer.shape[0] != B:
        raise ValueError(f"integrality has batch size {integer.shape[0]} but c has {B}")
    check_bound_values(
        lb_vec, ub_vec, integer if integer.ndim == 1 else np.asarray(integer.any(axis=0))
    )
    A_eq, b_eq = _equalities(c, A_eq, b_eq)
    detach = lambda t: t if t is None or is_sparse(t) else t.detach()
    return ProblemTensors(
        c=c.detach(),
        A=detach(A),
        b=b.detach(),
        lb=lb_vec,
        ub=ub_vec,
        A_eq=detach(A_eq),
        b_eq=None if b_eq is None else b_eq.detach(),
        integrality=integer,
    )
