"""Validation of user input into a `ProblemTensors` batch, and its host view.

Every check runs before anything is solved, and every error names the argument at fault.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.bounds import Bounds, as_bounds, as_integrality, check_bound_values
from ilplayer.core.matrices import is_sparse
from ilplayer.core.tensors import (
    as_rows,
    check_finite,
    input_tensor,
)

__all__ = ["check_cost_map", "validate_problem"]


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
