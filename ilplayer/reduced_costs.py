"""Exact answers without a MIP: reduced-cost fixing around a known point, then enumeration.

Take multipliers ``lam >= 0`` for the rows ``A y <= b`` and ``mu`` (any sign) for ``A_eq y =
b_eq``, and let ``d = c + A^T lam + A_eq^T mu``. Every box point that meets the rows within
``tol`` then has (weak duality; it holds for any such multipliers)

    c.y >= L + sum_j |d_j| dist_j(y),

where ``L`` is the least ``d.y`` over the box minus ``lam.b + mu.b_eq`` and the tolerance's
share, and ``dist_j(y)`` is how far ``y_j`` lies from the end of its range that minimises
``d_j y_j``. With the LP relaxation's duals, ``L`` is the LP bound. A point better than a known
feasible ``start`` must therefore have ``sum_j |d_j| dist_j < c.start - L``: after a few epochs
of training the pooled start is close to optimal, the budget is small, and only a handful of
points are left. Enumerating them and checking the rows either proves ``start`` optimal or
finds the optimum, at a fraction of a MIP's cost (PyEPO's 32-item knapsack: 0.6 against 2.0 ms
per instance with HiGHS, docs/solvers.md).

For costs never seen before there is no close pooled point, but the LP optimum itself has at
most as many fractional entries as there are rows, and one of its roundings is usually
feasible and within a few reduced costs of the bound: :func:`rounded_point`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rounded_point", "search_around"]


def search_around(c: np.ndarray, start: np.ndarray, A: np.ndarray, b: np.ndarray, lb: np.ndarray,
                  ub: np.ndarray, lam: np.ndarray, A_eq: np.ndarray | None = None,
                  b_eq: np.ndarray | None = None, mu: np.ndarray | None = None, tol: float = 1e-6,
                  max_points: int = 2048) -> np.ndarray | None:
    """The optimum of ``min c.y`` over the integer box points with ``A y <= b + tol`` and
    ``|A_eq y - b_eq| <= tol``, given a feasible ``start`` and row multipliers; None when more
    than ``max_points`` candidates would have to be checked.

    ``lam`` must be >= 0 (negative entries are clipped); any ``mu`` is valid. Returns ``start``
    itself when no point beats it.
    """
    n = len(c)
    if A_eq is None or not len(A_eq):
        A_eq, b_eq, mu = np.zeros((0, n)), np.zeros(0), np.zeros(0)
    lam = np.maximum(lam, 0.0)
    d = c + A.T @ lam + A_eq.T @ mu
    up = d <= 0  # the cheap end of y_j's range: lb where d_j > 0, else ub
    cheap = np.where(up, ub, lb)
    bound = d @ cheap - lam @ b - mu @ b_eq - tol * (lam.sum() + np.abs(mu).sum())
    start_value = float(c @ start)
    # Floating-point slack on the budget: a larger budget only keeps more candidates.
    budget = start_value - bound + 1e-9 * (1.0 + abs(start_value) + abs(bound))
    if budget <= 0:
        return start
    weight = np.abs(d)
    span = (ub - lb).astype(np.int64)
    with np.errstate(divide="ignore"):
        reach = np.where(weight > 0, np.floor(budget / weight), np.inf)
    reach = np.minimum(reach, span).astype(np.int64)
    movable = np.nonzero(reach > 0)[0]
    movable = movable[np.argsort(-weight[movable], kind="stable")]  # the tightest first
    # Grow the candidates one movable variable at a time, each level keeping only (parent,
    # step) per candidate, so a level costs O(candidates) rather than O(candidates x level).
    spent = np.zeros(1)
    levels: list[tuple[np.ndarray, np.ndarray]] = []
    for j in movable:
        parents, steps, costs = [np.arange(len(spent))], [np.zeros(len(spent), dtype=np.int64)], [spent]
        for step in range(1, reach[j] + 1):
            cost = spent + weight[j] * step
            keep = np.nonzero(cost < budget)[0]
            if not len(keep):
                break
            parents.append(keep)
            steps.append(np.full(len(keep), step, dtype=np.int64))
            costs.append(cost[keep])
        spent = np.concatenate(costs)
        levels.append((np.concatenate(parents), np.concatenate(steps)))
        if len(spent) > max_points:
            return None
    offsets = np.zeros((len(spent), len(movable)))
    index = np.arange(len(spent))
    for level in range(len(levels) - 1, -1, -1):  # back from each candidate to the root
        parents, steps = levels[level]
        offsets[:, level] = steps[index]
        index = parents[index]
    # Rows and costs of cheap + direction * offsets, without building the points themselves.
    direction = np.where(up, -1.0, 1.0)[movable]  # away from the cheap end
    feasible = np.all(offsets @ (A[:, movable] * direction).T <= b + tol - A @ cheap, axis=1)
    if len(A_eq):
        feasible &= np.all(np.abs(offsets @ (A_eq[:, movable] * direction).T + A_eq @ cheap - b_eq) <= tol, axis=1)
    if not feasible.any():
        return start
    candidates = np.nonzero(feasible)[0]
    values = c @ cheap + offsets[candidates] @ (c[movable] * direction)
    best = candidates[int(np.argmin(values))]
    if values.min() >= start_value:
        return start
    point = cheap.astype(np.float64)
    point[movable] += offsets[best] * direction
    return point


ROUNDED_ENTRIES = 8  # fractional entries whose floor and ceiling are both tried (2^8 points)


def rounded_point(x: np.ndarray, c: np.ndarray, A: np.ndarray, b: np.ndarray, lb: np.ndarray,
                  ub: np.ndarray, A_eq: np.ndarray | None = None, b_eq: np.ndarray | None = None,
                  tol: float = 1e-6, frac_tol: float = 1e-9) -> np.ndarray | None:
    """The cheapest point with ``A y <= b + tol`` and ``|A_eq y - b_eq| <= tol`` among the
    roundings of ``x`` (an LP optimum), or None when none of them is feasible.

    Each fractional entry goes to its floor or its ceiling, every combination of the first
    ``ROUNDED_ENTRIES`` of them (further ones to the nearest integer), clipped to the box. A
    vertex of an LP with m rows has at most m fractional entries: with few rows, one of the
    roundings usually meets them (measured on fresh Random Constraints costs: dense m=1 100 %,
    m=2 98 %, m=4 86 %, m=8 57 %).
    """
    nearest = np.clip(np.round(x), lb, ub)
    fractional = np.flatnonzero(np.abs(x - np.round(x)) > frac_tol)[:ROUNDED_ENTRIES]
    bits = (np.arange(2 ** len(fractional))[:, None] >> np.arange(len(fractional))) & 1
    points = np.repeat(nearest[None], len(bits), axis=0)
    points[:, fractional] = np.clip(np.floor(x[fractional]) + bits, lb[fractional], ub[fractional])
    feasible = np.all(points @ A.T <= b + tol, axis=1)
    if A_eq is not None and len(A_eq):
        feasible &= np.all(np.abs(points @ A_eq.T - b_eq) <= tol, axis=1)
    if not feasible.any():
        return None
    points = points[feasible]
    return points[int(np.argmin(points @ c))]
