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
finds the optimum, at a fraction of a MIP's cost (docs/records/solvers.md).

For costs never seen before there is no close pooled point, but the LP optimum itself has at
most as many fractional entries as there are rows, and one of its roundings is usually
feasible and within a few reduced costs of the bound: `rounded_point`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["reduced_box", "search_around", "search_many"]


def search_around(
    c: np.ndarray,
    start: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    lam: np.ndarray,
    A_eq: np.ndarray | None = None,
    b_eq: np.ndarray | None = None,
    mu: np.ndarray | None = None,
    tol: float = 1e-6,
    max_points: int = 2048,
) -> np.ndarray | None:
    """The optimum of ``min c.y`` over the integer box points with ``A y <= b + tol`` and
    ``|A_eq y - b_eq| <= tol``, given a feasible ``start`` and row multipliers; None when more
    than ``max_points`` candidates would have to be checked.

    ``lam`` must be >= 0 (negative entries are clipped); any ``mu`` is valid. Returns ``start``
    itself when no point beats it. `search_many` does the same for many costs at once.
    """
    mu = None if mu is None else np.asarray(mu)[None]
    point = search_many(
        np.asarray(c)[None],
        np.asarray(start)[None],
        A,
        b,
        lb,
        ub,
        np.asarray(lam)[None],
        A_eq,
        b_eq,
        mu,
        tol,
        max_points,
    )[0]
    return start if point is not None and np.array_equal(point, start) else point


_ALL_ONES = {width: int.from_bytes(b"\x01" * width, "little") for width in (1, 2, 4, 8)}


def rows_all(mask: np.ndarray) -> np.ndarray:
    """``mask.all(axis=-1)`` for a boolean array of short rows. NumPy reduces along a short axis
    element by element; reading a row of 1, 2, 4 or 8 booleans (or 8 at a time) as one integer
    is several times faster for the search's (candidates, rows) checks."""
    width = mask.shape[-1]
    if mask.dtype != np.bool_ or not mask.flags.c_contiguous or not mask.size:
        return np.asarray(mask.all(axis=-1))
    if width in _ALL_ONES:
        return np.asarray(mask.view(f"<u{width}")[..., 0] == _ALL_ONES[width])
    if width % 8 == 0:
        return np.asarray((mask.view("<u8") == _ALL_ONES[8]).all(axis=-1))
    return np.asarray(mask.all(axis=-1))


def search_many(
    c: np.ndarray,
    starts: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    lam: np.ndarray,
    A_eq: np.ndarray | None = None,
    b_eq: np.ndarray | None = None,
    mu: np.ndarray | None = None,
    tol: float = 1e-6,
    max_points: int = 2048,
    max_total: int = 1 << 17,
) -> list[np.ndarray | None]:
    """`search_around` for the rows of ``c`` (k, n), each with its feasible start (row of
    ``starts``) and multipliers (rows of ``lam`` (k, m) and ``mu`` (k, m_eq)), over one
    constraint set.

    The candidates of all rows grow together, one level (a movable variable, the tightest
    first) at a time, so the Python work is per level rather than per row and NumPy works on
    arrays long enough to release the GIL (threads then overlap the searches). Each candidate
    carries its row activities, and one that no choice of the later levels brings within the
    inequalities is dropped. Row ``i``'s answer is ``starts[i]`` when nothing beats it, None
    when a level would give it more than ``max_points`` candidates, or when the rows together
    would need more than ``max_total`` (the rows with the most give up first: memory stays ~8
    bytes x ``max_total`` x (rows + 2 levels)).
    """
    c, starts = np.asarray(c, dtype=np.float64), np.asarray(starts, dtype=np.float64)
    k, n = c.shape
    if A_eq is None or b_eq is None or mu is None or not len(A_eq):
        A_eq, b_eq, mu = np.zeros((0, n)), np.zeros(0), np.zeros((k, 0))
    answers: list[np.ndarray | None] = [starts[i] for i in range(k)]
    levels = _levels(c, starts, A, b, lb, ub, np.maximum(lam, 0.0), A_eq, b_eq, mu, tol)
    if levels is None:  # no point can beat any start
        return answers
    grown = _grow(levels, A, max_points, max_total)
    for gave_up in np.flatnonzero(grown.gave_up):
        answers[levels.active[gave_up]] = None
    for row, point in _best_points(levels, grown, b_eq, tol):
        answers[levels.active[row]] = point
    return answers


def reduced_box(
    c: np.ndarray,
    start: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    lam: np.ndarray,
    tol: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lo, hi)``: the sub-box holding every box point that meets ``A y <= b + tol`` at a cost
    of at most ``c.start`` (reduced-cost fixing with the multipliers ``lam`` (m,), clipped at 0):
    each variable at most as many steps from its cheap end as the budget pays for. Holds the
    optimum and ``start``; None when the budget is not positive (no room left by rounding)."""
    n = len(c)
    d, up, _, _, budget = _budgets(
        np.asarray(c, dtype=np.float64)[None],
        np.asarray(start, dtype=np.float64)[None],
        (A, b, np.maximum(np.asarray(lam, dtype=np.float64), 0.0)[None]),
        (np.zeros((0, n)), np.zeros(0), np.zeros((1, 0))),
        (lb, ub),
        tol,
    )
    if not budget[0] > 0:
        return None
    weight = np.abs(d[0])
    with np.errstate(divide="ignore"):
        reach = np.where(weight > 0, np.floor(budget[0] / weight), np.inf)
    reach = np.minimum(reach, ub - lb)
    return np.where(up[0], ub - reach, lb), np.where(up[0], ub, lb + reach)


class _Levels(NamedTuple):
    """What `search_many` grows its candidates along, for the ``active`` costs (those some point
    may beat the start of): per row of ``active``, its movable variables (``order``, the tightest
    first), their steps away from the ``cheap`` end (``direction``), each step's weight in the
    bound, reach, effect on the rows' activities (``unit``, ``unit_eq``: level-major) and on the
    cost, and the activity a candidate may have after each level (``ceiling``)."""

    active: np.ndarray
    cheap: np.ndarray
    start_value: np.ndarray
    room: np.ndarray
    order: np.ndarray
    direction: np.ndarray
    weight: np.ndarray
    reach: np.ndarray
    unit: np.ndarray
    unit_eq: np.ndarray
    unit_cost: np.ndarray
    ceiling: np.ndarray
    c: np.ndarray
    A_eq: np.ndarray


class _Grown(NamedTuple):
    """The candidates left after the last level: the row (of ``active``) each belongs to, its
    cost and equality activities, the way back (``(parent, step)`` per level) and the rows that
    gave up."""

    owner: np.ndarray
    cost: np.ndarray
    activity_eq: np.ndarray
    levels: list[tuple[np.ndarray, np.ndarray]]
    gave_up: np.ndarray


def _budgets(
    c: np.ndarray,
    starts: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    equalities: tuple[np.ndarray, np.ndarray, np.ndarray],
    box: tuple[np.ndarray, np.ndarray],
    tol: float,
) -> tuple[np.ndarray, ...]:
    """The reduced costs ``d``, which end of each range is cheap (``up``: ub), that end, the
    starts' values and how much each cost may spend below them (``budget``)."""
    (A, b, lam), (A_eq, b_eq, mu), (lb, ub) = rows, equalities, box
    d = c + lam @ A + mu @ A_eq
    up = d <= 0  # the cheap end of y_j's range: lb where d_j > 0, else ub
    cheap = np.where(up, ub, lb).astype(np.float64)
    bound = (
        np.einsum("kn,kn->k", d, cheap)
        - lam @ b
        - mu @ b_eq
        - tol * (lam.sum(axis=1) + np.abs(mu).sum(axis=1))
    )
    start_value = np.einsum("kn,kn->k", c, starts)
    # Floating-point slack on the budget: a larger budget only keeps more candidates.
    budget = start_value - bound + 1e-9 * (1.0 + np.abs(start_value) + np.abs(bound))
    return d, up, cheap, start_value, budget


def _ceilings(unit: np.ndarray, reach: np.ndarray, top: np.ndarray) -> np.ndarray:
    """The activity a candidate may have after each level (``top`` = b + tol after the last):
    the most the levels after it can still lower each row's activity, above ``top``."""
    levels_needed, rows, m = unit.shape
    drops = np.minimum(unit * reach.T[..., None], 0.0)
    ceiling = np.empty((levels_needed + 1, rows, m))
    ceiling[levels_needed] = top
    ceiling[:levels_needed] = top - np.cumsum(drops[::-1], axis=0)[::-1]
    return ceiling


def _levels(
    c: np.ndarray,
    starts: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    lam: np.ndarray,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    mu: np.ndarray,
    tol: float,
) -> _Levels | None:
    """The bound, each cost's budget and the levels to grow; None when no point can beat any start."""
    d, up, cheap, start_value, budget = _budgets(
        c, starts, (A, b, lam), (A_eq, b_eq, mu), (lb, ub), tol
    )
    active = np.flatnonzero(budget > 0)  # the others: no point can beat their start
    if not len(active):
        return None
    weight = np.abs(d[active])
    with np.errstate(divide="ignore"):
        reach = np.where(weight > 0, np.floor(budget[active, None] / weight), np.inf)
    reach = np.minimum(reach, (ub - lb)[None]).astype(np.int64)
    # Each row's movable variables, the tightest first; rows with fewer get steps of 0.
    order = np.argsort(np.where(reach > 0, -weight, np.inf), axis=1, kind="stable")
    levels_needed = int((reach > 0).sum(axis=1).max())
    order = order[:, :levels_needed]
    weight, reach = np.take_along_axis(weight, order, 1), np.take_along_axis(reach, order, 1)
    # What one step at each level does: moves y_v away from its cheap end, changing the rows'
    # activities by `unit` and the cost by `unit_cost`.
    direction = np.where(np.take_along_axis(up[active], order, 1), -1.0, 1.0)
    # level-major, so that each level's (rows, m) slice is contiguous for np.take
    unit = np.ascontiguousarray(
        (A.T[order] * direction[..., None]).transpose(1, 0, 2)
    )  # (levels, rows, m)
    unit_eq = np.ascontiguousarray((A_eq.T[order] * direction[..., None]).transpose(1, 0, 2))
    unit_cost = np.take_along_axis(c[active], order, 1) * direction
    # The most the levels after each level can lower each row's activity: a candidate whose
    # activity is above b + tol even then has no feasible completion and is dropped. `ceiling`:
    # the activity a candidate may have after each level.
    ceiling = _ceilings(unit, reach, b + tol)
    return _Levels(
        active,
        cheap,
        start_value,
        budget[active],
        order,
        direction,
        weight,
        reach,
        unit,
        unit_eq,
        unit_cost,
        ceiling,
        c,
        A_eq,
    )


def _grow(levels: _Levels, A: np.ndarray, max_points: int, max_total: int) -> _Grown:
    """Grow the candidates level by level, each keeping only (parent, step) for the way back and
    its activities and cost, so a level costs O(candidates x rows). A candidate's children lie
    next to each other, so the candidates stay grouped by `owner`, the row (in `active`) they
    belong to."""
    active, cheap, c, room = levels.active, levels.cheap, levels.c, levels.room
    owner = np.arange(len(active))
    spent = np.zeros(len(active))
    activity, activity_eq = cheap[active] @ A.T, cheap[active] @ levels.A_eq.T
    cost = np.einsum("kn,kn->k", c[active], cheap[active])
    alive = rows_all(activity <= levels.ceiling[0])
    owner, spent, cost = owner[alive], spent[alive], cost[alive]
    activity, activity_eq = activity[alive], activity_eq[alive]
    gave_up = np.zeros(len(active), dtype=bool)
    way_back: list[tuple[np.ndarray, np.ndarray]] = []
    for level in range(levels.order.shape[1]):
        w, r, left = levels.weight[owner, level], levels.reach[owner, level], room[owner]
        with np.errstate(divide="ignore", invalid="ignore"):
            most = np.where(w > 0, np.floor((left - spent) / w), r)
        most = np.clip(most, 0, r).astype(np.int64)
        # the largest step whose cost stays under the budget, by the same test as the cost
        while (beyond := (most > 0) & (spent + w * most >= left)).any():
            most -= beyond
        while (short := (most < r) & (spent + w * (most + 1) < left)).any():
            most += short
        counts = most + 1  # steps 0..most
        per_row = np.bincount(owner, weights=counts, minlength=len(active))
        over = per_row > max_points
        if per_row[~over].sum() > max_total:  # and the largest rows, until the rest fit in memory
            largest = np.argsort(-np.where(over, 0, per_row), kind="stable")
            kept_total = per_row[~over].sum() - np.cumsum(per_row[largest])
            over[largest[: np.searchsorted(-kept_total, -max_total) + 1]] = True
        if over.any():  # those rows give up; their candidates have no children
            gave_up |= over
            counts[over[owner]] = 0
        parent = np.repeat(np.arange(len(spent)), counts)
        step = np.arange(len(parent)) - np.repeat(np.cumsum(counts) - counts, counts)
        child_owner = owner[parent]
        child_activity = np.take(activity, parent, axis=0)
        child_activity += step[:, None] * np.take(levels.unit[level], child_owner, axis=0)
        keep = rows_all(child_activity <= np.take(levels.ceiling[level + 1], child_owner, axis=0))
        parent, step, owner = parent[keep], step[keep], child_owner[keep]
        spent = spent[parent] + w[parent] * step
        activity = child_activity[keep]
        if activity_eq.shape[1]:  # equalities (without, NumPy would still walk every candidate)
            activity_eq = np.take(activity_eq, parent, axis=0) + step[:, None] * np.take(
                levels.unit_eq[level], owner, axis=0
            )
        else:
            activity_eq = np.empty((len(parent), 0))
        cost = cost[parent] + step * levels.unit_cost[owner, level]
        way_back.append((parent, step))
    return _Grown(owner, cost, activity_eq, way_back, gave_up)


def _best_points(
    levels: _Levels, grown: _Grown, b_eq: np.ndarray, tol: float
) -> list[tuple[int, np.ndarray]]:
    """``(row of active, point)`` for each row whose cheapest feasible candidate beats its start.

    Every candidate left meets the inequalities (the last level's check had nothing left to
    lower them) and belongs to a row that kept going (a row that gave up lost its candidates);
    the equalities are checked here. The first in candidate order wins among equals."""
    owner = grown.owner
    feasible = rows_all(np.abs(grown.activity_eq - b_eq) <= tol)
    values = np.where(feasible, grown.cost, np.inf)
    ranked = np.lexsort((values, owner))
    first = ranked[np.r_[True, owner[ranked[1:]] != owner[ranked[:-1]]]] if len(ranked) else ranked
    best = first[values[first] < levels.start_value[levels.active[owner[first]]]]
    steps = np.zeros((len(best), len(grown.levels)))
    index = best
    for level in range(len(grown.levels) - 1, -1, -1):  # back from each best candidate to its root
        parent, step = grown.levels[level]
        steps[:, level] = step[index]
        index = parent[index]
    points = []
    for candidate, taken in zip(best, steps):
        row = owner[candidate]
        point = levels.cheap[levels.active[row]].copy()
        point[levels.order[row]] += taken * levels.direction[row]
        points.append((int(row), point))
    return points
