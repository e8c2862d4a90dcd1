"""Many LP relaxations as one block-diagonal LP (`solve_in_blocks`, `multipliers_in_blocks`),
and the integral answers among an LP's points (`integral_answer`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilplayer.solvers.shortcuts import Multipliers

__all__ = [
    "block_diagonal",
    "integral_answer",
    "integral_answers",
    "multipliers_in_blocks",
    "solve_in_blocks",
]


def block_diagonal(matrix: Any, size: int) -> Any:
    """``size`` copies of ``matrix`` (m, n; dense or sparse) on the diagonal of one CSR matrix
    (size·m, size·n), built from the copy's arrays: scipy's ``block_diag`` converts every copy
    on its own, and a new constraint set pays this build before its first relaxations."""
    import scipy.sparse as sparse

    block = sparse.csr_matrix(matrix)
    block.sort_indices()
    if size == 1:
        return block
    (m, n), nnz, offsets = block.shape, block.nnz, np.arange(size)
    indptr = np.concatenate([[0], (block.indptr[1:][None, :] + nnz * offsets[:, None]).ravel()])
    indices = (block.indices[None, :] + n * offsets[:, None]).ravel()
    return sparse.csr_matrix(
        (np.tile(block.data, size), indices, indptr), shape=(size * m, size * n)
    )


def _padded_blocks(c: np.ndarray, size: int) -> Any:
    """``(rows used, size * n costs)`` for each block of ``size`` rows of ``c``; the unused
    blocks of the last one get zero costs, so their basis stays optimal."""
    for first in range(0, len(c), size):
        chunk = c[first : first + size]
        costs = np.zeros((size, c.shape[1]))
        costs[: len(chunk)] = chunk
        yield len(chunk), costs.ravel()


def integral_answer(x: np.ndarray, integer: np.ndarray | None, tol: float) -> np.ndarray | None:
    """An LP optimum ``x`` as the MILP's answer: rounded on the integer variables when all of
    them are within ``tol`` of an integer (the continuous ones kept), else None. An optimum of
    the relaxation that is integral where the MILP asks is feasible for it, hence optimal."""
    return integral_answers(np.asarray(x, dtype=np.float64)[None], integer, tol)[0]


def integral_answers(
    x: np.ndarray, integer: np.ndarray | None, tol: float
) -> list[np.ndarray | None]:
    """`integral_answer` of each row of ``x`` (k, n), at once."""
    x = np.asarray(x, dtype=np.float64)
    mask = np.ones(x.shape[1], dtype=bool) if integer is None else np.asarray(integer, dtype=bool)
    rounded = np.where(mask, np.rint(x), x) + 0.0  # + 0.0: no -0.0
    far: np.ndarray = np.zeros(len(x), dtype=bool)
    if mask.any():
        far = np.asarray((np.abs(x - rounded)[:, mask] > tol).any(axis=1))
    return [None if bad else row for row, bad in zip(rounded, far.tolist())]


def solve_in_blocks(
    c: np.ndarray,
    size: int,
    solve_block: Any,
    tol: float,
    integer: np.ndarray | None = None,
    fractional: Any = None,
) -> list[np.ndarray | None]:
    """The relaxations of the rows of ``c`` solved ``size`` at a time as one block-diagonal LP.

    ``solve_block(costs)`` sets ``costs`` (``size * n``: block ``j`` gets row ``j``'s costs;
    unused blocks zero, so their basis stays optimal), solves, and returns the ``size * n``
    optimal values or None. A vertex of a block-diagonal LP is a vertex in every block, so each
    block is kept when it is integral within ``tol`` on the ``integer`` variables (None: all)
    and is None otherwise. ``fractional(costs, blocks)``, when given, is called after a solve
    that left some blocks fractional (their indices), before the next solve: a backend reads
    their multipliers there for the search that follows.
    """
    answers: list[np.ndarray | None] = []
    for count, costs in _padded_blocks(c, size):
        x = solve_block(costs)
        if x is None:
            answers += [None] * count
            continue
        x = np.asarray(x, dtype=np.float64).reshape(size, c.shape[1])[:count]
        found = integral_answers(x, integer, tol)
        if fractional is not None and any(answer is None for answer in found):
            fractional(costs, [j for j, answer in enumerate(found) if answer is None])
        answers += found
    return answers


def multipliers_in_blocks(
    c: np.ndarray, size: int, inequalities: int, solve_block: Any
) -> list[Multipliers | None]:
    """Row multipliers and LP optima for the rows of ``c``, their LPs solved ``size`` at a
    time as one block-diagonal LP (a block-diagonal LP's duals and optimum are each block's).

    ``solve_block(costs)`` sets ``costs`` (``size * n``, as for
    `solve_in_blocks`),
    solves, and returns ``(duals, x)`` -- ``duals`` a ``(size, rows)`` array, block ``j``'s
    multipliers, its ``inequalities`` first (``>= 0``), then its equalities; ``x`` the
    ``size * n`` optimum -- or None.
    """
    found: list[Multipliers | None] = []
    n = c.shape[1]
    for count, costs in _padded_blocks(c, size):
        solved = solve_block(costs)
        if solved is None:
            found += [None] * count
            continue
        duals, x = np.asarray(solved[0]), np.asarray(solved[1]).reshape(size, n)
        found += [
            (row[:inequalities], row[inequalities:], point) for row, point in zip(duals[:count], x)
        ]
    return found
