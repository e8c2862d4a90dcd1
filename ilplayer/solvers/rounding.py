"""Starts for the search around a point: the LP's answer rounded, each of its few fractional
entries tried both ways (`rounded_point`, `rounded_points`)."""

from __future__ import annotations

import numpy as np

from ilplayer.solvers.reduced_costs import rows_all

__all__ = ["ROUNDED_ENTRIES", "rounded_point", "rounded_points"]


ROUNDED_ENTRIES = 8  # fractional entries whose floor and ceiling are both tried (2^8 points)


def rounded_point(
    x: np.ndarray,
    c: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    A_eq: np.ndarray | None = None,
    b_eq: np.ndarray | None = None,
    tol: float = 1e-6,
    frac_tol: float = 1e-9,
) -> np.ndarray | None:
    """The cheapest point with ``A y <= b + tol`` and ``|A_eq y - b_eq| <= tol`` among the
    roundings of ``x`` (an LP optimum), or None when none of them is feasible.

    Each fractional entry goes to its floor or its ceiling, every combination of the first
    ``ROUNDED_ENTRIES`` of them (further ones to the nearest integer), clipped to the box. A
    vertex of an LP with m rows has at most m fractional entries: with few rows, one of the
    roundings usually meets them (measured on fresh Random Constraints costs: dense m=1 100 %,
    m=2 98 %, m=4 86 %, m=8 57 %). `rounded_points` does the same for many at once.
    """
    return rounded_points(
        np.asarray(x)[None], np.asarray(c)[None], A, b, lb, ub, A_eq, b_eq, tol, frac_tol
    )[0]


def rounded_points(
    x: np.ndarray,
    c: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    A_eq: np.ndarray | None = None,
    b_eq: np.ndarray | None = None,
    tol: float = 1e-6,
    frac_tol: float = 1e-9,
) -> list[np.ndarray | None]:
    """`rounded_point` for each row of ``x`` (k, n) with the costs in the same row of
    ``c``, over one constraint set, in one pass of array operations."""
    x, c = np.asarray(x, dtype=np.float64), np.asarray(c, dtype=np.float64)
    nearest = np.clip(np.round(x), lb, ub)
    fractional = np.abs(x - np.round(x)) > frac_tol
    rank = np.cumsum(fractional, axis=1) - 1  # which bit of a combination moves the entry
    fractional &= rank < ROUNDED_ENTRIES
    entries = int(fractional.sum(axis=1).max(initial=0))
    combination = np.arange(2**entries)[None, :, None]
    bit = (combination >> np.clip(rank, 0, None)[:, None, :]) & 1  # (k, 2^entries, n)
    points = np.where(
        fractional[:, None, :], np.clip(np.floor(x)[:, None, :] + bit, lb, ub), nearest[:, None, :]
    )
    feasible = rows_all(points @ A.T <= b + tol)
    if A_eq is not None and len(A_eq):
        feasible &= rows_all(np.abs(points @ A_eq.T - b_eq) <= tol)
    values = np.where(feasible, np.einsum("kpn,kn->kp", points, c), np.inf)
    best = np.argmin(values, axis=1)
    return [points[i, best[i]] if feasible[i].any() else None for i in range(len(x))]
