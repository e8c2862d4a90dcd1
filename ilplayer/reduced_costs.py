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
finds the optimum, at a fraction of a MIP's cost (a 32-item knapsack: 0.5 against 2.5 ms with
HiGHS, docs/solvers.md).
"""

from __future__ import annotations

import numpy as np

__all__ = ["search_around"]


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
    offsets = np.zeros((1, len(movable)), dtype=np.int64)
    spent = np.zeros(1)
    for k, j in enumerate(movable):
        blocks, costs = [offsets], [spent]
        for step in range(1, reach[j] + 1):
            cost = spent + weight[j] * step
            keep = cost < budget
            if not keep.any():
                break
            block = offsets[keep].copy()
            block[:, k] = step
            blocks.append(block)
            costs.append(cost[keep])
        offsets, spent = np.concatenate(blocks), np.concatenate(costs)
        if len(offsets) > max_points:
            return None
    points = np.tile(cheap.astype(np.float64), (len(offsets), 1))
    direction = np.where(up, -1.0, 1.0)  # away from the cheap end
    points[:, movable] += offsets * direction[movable]
    feasible = np.all(points @ A.T <= b + tol, axis=1)
    if len(A_eq):
        feasible &= np.all(np.abs(points @ A_eq.T - b_eq) <= tol, axis=1)
    if not feasible.any():
        return start
    points = points[feasible]
    values = points @ c
    best = int(np.argmin(values))
    return points[best] if values[best] < start_value else start
