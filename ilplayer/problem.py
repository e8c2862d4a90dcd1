"""Validation of user input into a :class:`ProblemTensors` batch, and its host view.

Every check runs before anything is solved, and every error names the argument at fault.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import torch

from ilplayer.solver import ILPBatch

__all__ = ["Bounds", "ProblemTensors", "as_bounds", "validate_problem"]

Bounds = Union[int, float, Sequence[Union[int, float]], np.ndarray, torch.Tensor]


def _as_tensor(value: Any, name: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        tensor = value
    elif isinstance(value, np.ndarray):
        tensor = torch.from_numpy(value)
    else:
        raise TypeError(f"{name} must be a torch.Tensor (or numpy array), got {type(value).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {tensor.dtype}")
    return tensor


def _check_finite(tensor: torch.Tensor, name: str) -> None:
    finite = torch.isfinite(tensor)
    if not bool(finite.all()):
        bad = (~finite).nonzero()[0].tolist()
        raise ValueError(f"{name} must be finite; found {tensor[tuple(bad)].item()} at index "
                         f"{tuple(bad)}")


def as_bounds(value: Bounds, n: int, name: str) -> np.ndarray:
    """Turn a scalar or per-variable bound into an int64 vector of length ``n``."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"{name} must be an integer or a vector of integers, got {value!r}")
    if isinstance(value, torch.Tensor):
        array = value.detach().to("cpu", torch.float64).numpy()
    else:
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be an integer or a vector of integers, "
                            f"got {type(value).__name__}") from None
    if array.ndim == 0:
        array = np.full(n, float(array))
    if array.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},) (one bound per variable), "
                         f"got shape {tuple(array.shape)}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite: the variable box has to be bounded")
    if not np.array_equal(array, np.round(array)):
        i = int(np.flatnonzero(array != np.round(array))[0])
        raise ValueError(f"{name} must hold integers; {name}[{i}] = {array[i]}")
    return array.astype(np.int64)


@dataclass(frozen=True, eq=False)
class ProblemTensors:
    """A validated batch ``min c_i·y s.t. A_i y <= b_i, lb <= y <= ub, y integer``.

    ``c`` is (B, n); ``A`` is (m, n) when shared by the batch or (B, m, n); ``b`` is (m,) or
    (B, m). Tensors are detached and live on one device; ``lb`` and ``ub`` are int64 NumPy
    vectors (host metadata, never part of autograd).
    """

    c: torch.Tensor
    A: torch.Tensor
    b: torch.Tensor
    lb: np.ndarray
    ub: np.ndarray

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
        return self.A.dim() == 2 and self.b.dim() == 1

    @property
    def device(self) -> torch.device:
        return self.c.device

    @property
    def num_box_points(self) -> int:
        """Number of integer points in the box (a Python int, exact)."""
        return math.prod(int(u - l + 1) for l, u in zip(self.lb.tolist(), self.ub.tolist()))

    def host_groups(self) -> Iterator[tuple[np.ndarray, ILPBatch]]:
        """One host copy in float64, split into groups that share ``(A, b)``.

        Yields ``(row_indices, batch)``; identical constraint rows in a per-instance ``A`` are
        merged so that a backend builds one model per distinct ``(A, b)``.
        """
        c = self.c.to("cpu", torch.float64).numpy()
        A = self.A.to("cpu", torch.float64).numpy()
        b = self.b.to("cpu", torch.float64).numpy()
        if A.ndim == 2 and b.ndim == 1:
            yield np.arange(len(c)), ILPBatch(c=c, A=A, b=b, lb=self.lb, ub=self.ub)
            return
        B, m, n = len(c), self.num_constraints, self.num_variables
        A = np.broadcast_to(A, (B, m, n))
        b = np.broadcast_to(b, (B, m))
        keys = np.concatenate([A.reshape(B, m * n), b], axis=1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        for group, row in enumerate(first):
            rows = np.flatnonzero(inverse == group)
            yield rows, ILPBatch(c=c[rows], A=A[row], b=b[row], lb=self.lb, ub=self.ub)


def validate_problem(c: Any, A: Any, b: Any, lb: Bounds, ub: Bounds) -> ProblemTensors:
    """Check shapes, dtypes, devices, finiteness and bounds; raise a clear error otherwise.

    Raises:
        TypeError: an argument is not a floating-point tensor, or a bound is not numeric.
        ValueError: a shape, device or value is wrong; the message names the argument.
    """
    c = _as_tensor(c, "c")
    A = _as_tensor(A, "A")
    b = _as_tensor(b, "b")
    if c.dim() != 2:
        hint = " (use c.unsqueeze(0) for a single instance)" if c.dim() == 1 else ""
        raise ValueError(f"c must have shape (batch, num_variables), got {tuple(c.shape)}{hint}")
    B, n = c.shape
    if B == 0:
        raise ValueError("c is an empty batch (batch size 0): there is nothing to solve")
    if n == 0:
        raise ValueError("c has 0 variables: num_variables must be at least 1")
    if A.dim() not in (2, 3):
        raise ValueError(f"A must have shape (m, n) or (batch, m, n), got {tuple(A.shape)}")
    if A.shape[-1] != n:
        raise ValueError(f"A has {A.shape[-1]} columns but c has {n} variables "
                         f"(A {tuple(A.shape)}, c {tuple(c.shape)})")
    if A.dim() == 3 and A.shape[0] != B:
        raise ValueError(f"A has batch size {A.shape[0]} but c has {B}")
    m = A.shape[-2]
    if m == 0:
        raise ValueError("A has 0 constraints: pass at least one row (A y <= b)")
    if b.dim() not in (1, 2) or b.shape[-1] != m:
        raise ValueError(f"b must have shape ({m},) or (batch, {m}) to match A {tuple(A.shape)}, "
                         f"got {tuple(b.shape)}")
    if b.dim() == 2 and b.shape[0] != B:
        raise ValueError(f"b has batch size {b.shape[0]} but c has {B}")
    for name, tensor in (("A", A), ("b", b)):
        if tensor.device != c.device:
            raise ValueError(f"{name} is on {tensor.device} but c is on {c.device}: "
                             "all inputs must be on one device")
    for name, tensor in (("c", c), ("A", A), ("b", b)):
        _check_finite(tensor, name)
    lb_vec = as_bounds(lb, n, "lb")
    ub_vec = as_bounds(ub, n, "ub")
    if (lb_vec > ub_vec).any():
        i = int(np.flatnonzero(lb_vec > ub_vec)[0])
        raise ValueError(f"lb must not exceed ub; variable {i} has lb={lb_vec[i]} > ub={ub_vec[i]}")
    return ProblemTensors(c=c.detach(), A=A.detach(), b=b.detach(), lb=lb_vec, ub=ub_vec)
