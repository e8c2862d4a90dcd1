"""Stage 2 of the post-hoc regret: the true program re-solved from the Stage-1 decisions with a
penalty per change, and the checks of the parameters it is given."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse
import torch

from ilplayer.oracle import as_input
from ilplayer.program import Program

__all__ = [
    "FEASIBILITY_TOL",
    "batched",
    "dense_rows",
    "given_rows",
    "per_variable_penalty",
    "solve_stage2",
    "violated",
]


FEASIBILITY_TOL = 1e-6  # relative to 1 + |rhs|: a Stage-1 decision this close to a row meets it


def batched(value: Any, B: int, shape: tuple[int, ...], name: str) -> torch.Tensor:
    """``value`` shared (``shape``) or per instance (``(B, *shape)``) as a (B, *shape) float64 tensor."""
    tensor = torch.as_tensor(as_input(value)).detach().to("cpu", torch.float64)
    if tuple(tensor.shape) == shape:
        return tensor.expand(B, *shape)
    if tuple(tensor.shape) != (B, *shape):
        raise ValueError(
            f"{name} must have shape {shape} (shared) or {(B, *shape)} (one per instance), "
            f"got {tuple(tensor.shape)}"
        )
    return tensor


def per_variable_penalty(value: Any, B: int, n: int, name: str) -> torch.Tensor:
    tensor = torch.as_tensor(as_input(value)).detach().to("cpu", torch.float64)
    if tensor.ndim == 0:
        tensor = tensor.expand(n)
    tensor = batched(tensor, B, (n,), name)
    if not torch.isfinite(tensor).all() or (tensor < 0).any():
        raise ValueError(f"{name} must be finite and non-negative (a cost per unit changed)")
    return tensor


def given_rows(program: Program, B: int, n: int, A: Any, b: Any, kind: str) -> tuple[Any, Any]:
    """The rows of one kind (``""`` or ``"_eq"``): the call's where given, else the program's;
    ``A`` dense (m, n) shared or (B, m, n), or a shared scipy CSR matrix; ``b`` (B, m). Shared
    rows stay shared: the backend then keeps one model for the batch."""
    if A is None and b is None:
        A, b = getattr(program, "A" + kind), getattr(program, "b" + kind)
    if A is None and b is None:
        return torch.zeros(0, n, dtype=torch.float64), torch.zeros(B, 0, dtype=torch.float64)
    if A is None or b is None:
        raise ValueError(f"A{kind} and b{kind} must both be given, or both be None (the program's)")
    A = as_input(A)
    if scipy.sparse.issparse(A) or (isinstance(A, torch.Tensor) and A.layout != torch.strided):
        sparse = scipy.sparse.csr_matrix(A if scipy.sparse.issparse(A) else A.to_dense().numpy())
        if sparse.shape[1] != n:
            raise ValueError(
                f"A{kind} must have {n} columns (one per variable), got {sparse.shape[1]}"
            )
        return sparse.astype(np.float64), batched(b, B, (sparse.shape[0],), "b" + kind)
    A = torch.as_tensor(A).detach().to("cpu", torch.float64)
    if A.ndim not in (2, 3) or A.shape[-1] != n:
        raise ValueError(f"A{kind} must have shape (m, {n}) or (B, m, {n}), got {tuple(A.shape)}")
    if A.ndim == 3 and A.shape[0] != B:
        raise ValueError(f"A{kind} must have shape (m, {n}) or ({B}, m, {n}), got {tuple(A.shape)}")
    return A, batched(b, B, (A.shape[-2],), "b" + kind)


def violated(y: torch.Tensor, A: Any, b: torch.Tensor, equality: bool) -> torch.Tensor:
    """(B,) bool: some row of ``A y <= b`` (``= b``) fails by more than the tolerance."""
    if scipy.sparse.issparse(A):
        lhs = torch.from_numpy(np.asarray(A @ y.numpy().T).T)
    else:
        lhs = torch.einsum("bmn,bn->bm" if A.dim() == 3 else "mn,bn->bm", A, y)
    gap = lhs - b
    tol = FEASIBILITY_TOL * (1.0 + b.abs())
    bad = gap.abs() > tol if equality else gap > tol
    return bad.any(dim=-1)


def dense_rows(A: Any, B: int) -> torch.Tensor:
    """Rows as a dense (B, m, n) tensor (shared rows, sparse or not, as a view per instance)."""
    if scipy.sparse.issparse(A):
        A = torch.from_numpy(A.toarray())
    return A.expand(B, -1, -1)


def solve_stage2(
    c_min: torch.Tensor,
    A: Any,
    b: torch.Tensor,
    A_eq: Any,
    b_eq: torch.Tensor,
    y1: torch.Tensor,
    box: tuple[np.ndarray, np.ndarray, np.ndarray],
    add: torch.Tensor,
    drop: torch.Tensor,
    changes: str,
) -> tuple[Program, tuple[Any, ...]]:
    """Stage 2 as one batch in minimisation form: its program and ``(c, A, b, A_eq, b_eq)``.

    A Stage-1 value at a bound of its box changes linearly in ``y`` (``y - lb`` up from ``lb``,
    ``ub - y`` down from ``ub``): its penalty is a cost on ``y`` itself, and a direction it may
    not take is one row per instance, ``sum (y - lb) - sum (y - ub) <= 0`` over those variables.
    Only a variable with a value inside its box in some instance gets columns for the units
    added and dropped (integer where it is), tied to ``y_stage1`` by an equality: a 0-1 program
    keeps its size."""
    lb, ub, integer = box
    B, n = y1.shape
    low, high = torch.from_numpy(lb), torch.from_numpy(ub)
    at_low, at_high = y1 == low, y1 == high
    inside = (~(at_low | at_high)).any(0).nonzero().flatten()
    edge = torch.ones(n, dtype=torch.bool)
    edge[inside] = False
    up, down = at_low & ~at_high & edge, at_high & ~at_low & edge
    may_add, may_drop = changes in ("any", "add"), changes in ("any", "drop")
    cost = c_min + torch.where(up, add, 0.0) - torch.where(down, drop, 0.0)
    frozen_low = up if not may_add else torch.zeros_like(up)
    frozen_high = down if not may_drop else torch.zeros_like(down)
    blocks = [
        (sign, price)
        for sign, price, allowed in ((-1.0, add, may_add), (1.0, drop, may_drop))
        if allowed
    ]
    k = len(inside)
    width = np.where(np.isfinite(ub - lb), ub - lb, np.inf)[inside.numpy()]
    program = Program(
        lb=np.concatenate([lb, *([np.zeros(k)] * len(blocks))]),
        ub=np.concatenate([ub, *([width] * len(blocks))]),
        integrality=np.concatenate([integer, *([integer[inside.numpy()]] * len(blocks))]).astype(
            float
        ),
        sense="min",
    )
    costs = torch.cat([cost, *(price[:, inside] for _, price in blocks)], dim=-1)
    if k == 0 and not (frozen_low | frozen_high).any():
        return program, (costs, A, b, A_eq, b_eq)
    extra = len(blocks) * k
    widen = lambda rows: torch.cat([rows, rows.new_zeros(*rows.shape[:-1], extra)], dim=-1)
    A, A_eq = widen(dense_rows(A, B)), widen(dense_rows(A_eq, B))
    if (frozen_low | frozen_high).any():
        row = frozen_low.to(torch.float64) - frozen_high.to(torch.float64)
        rhs = (torch.where(frozen_low, low, 0.0) - torch.where(frozen_high, high, 0.0)).sum(
            -1, keepdim=True
        )
        A = torch.cat([A, widen(row).unsqueeze(1)], dim=1)
        b = torch.cat([b, rhs], dim=1)
    if k:
        pick = torch.eye(n, dtype=torch.float64)[inside]
        link = torch.cat(
            [pick, *(sign * torch.eye(k, dtype=torch.float64) for sign, _ in blocks)], dim=-1
        )
        A_eq = torch.cat([A_eq, link.expand(B, -1, -1)], dim=1)
        b_eq = torch.cat([b_eq, y1[:, inside]], dim=1)
    return program, (costs, A, b, A_eq, b_eq)
