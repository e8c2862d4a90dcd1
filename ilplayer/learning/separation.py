"""Initial constraints read off the data: hyperplanes that cut off the box optima and keep
every observed solution.

Every observed ``y_i`` is feasible for the hidden constraints, and the box optimum ``z_i`` of
``c_i`` (the answer with no constraint at all) is not when it is cheaper than ``y_i``: some
hidden constraint cuts ``z_i`` off while keeping every observed ``y``. A linear programme finds,
for a sample of such ``z_i``, a hyperplane that separates it from the observed solutions with the
widest margin; where many observed solutions lie on a hidden facet, that hyperplane *is* the
facet. A greedy set cover then keeps the hyperplanes that cut off the most box optima between
them. Gradient training starts from there instead of from random hyperplanes, which on dense
boxes often leave one hidden constraint unlearned for the whole run (docs/records/learn.md).
"""

from __future__ import annotations

import numpy as np

__all__ = ["INITS", "separating_hyperplanes"]

INITS = ("random", "separating")  # TrainingConfig.init: the paper's random start, or this module's

TIE_TOL = 1e-9  # relative: a box optimum no cheaper than y_i may itself be feasible


def box_optima(c: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """``argmin c·z`` over the box (``lb`` where a cost is positive or zero)."""
    return np.where(c < 0, ub, lb)


def _widest_separator(point: np.ndarray, kept: np.ndarray) -> np.ndarray | None:
    """A unit normal ``a`` with ``a·point > max a·kept`` and the widest margin (``|a|_inf <= 1``),
    or None when no hyperplane separates them (the point is in the kept points' hull)."""
    from scipy.optimize import linprog

    count, n = kept.shape
    # variables (a, beta, t): a·p <= beta for each kept p, a·point >= beta + t; maximise t
    rows = np.vstack(
        [
            np.hstack([kept, -np.ones((count, 1)), np.zeros((count, 1))]),
            np.hstack([-point, [1.0, 1.0]])[None],
        ]
    )
    result = linprog(
        np.r_[np.zeros(n + 1), -1.0],
        A_ub=rows,
        b_ub=np.zeros(count + 1),
        bounds=[(-1, 1)] * n + [(None, None), (None, 1)],
        method="highs",
    )
    if result.status != 0 or -result.fun <= 1e-9:
        return None
    normal = result.x[:n]
    return normal / np.linalg.norm(normal)


def separating_hyperplanes(
    c: np.ndarray,
    y: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    count: int,
    *,
    candidates: int = 200,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``count`` rows ``(a, beta)``, ``|a| = 1``, with ``a·y <= beta`` for every observed ``y``
    (tight: ``beta`` is the largest ``a·y``), chosen to cut off as many box optima as possible.

    ``candidates`` box optima (a seeded sample) each give the separator of widest margin; the
    greedy cover then takes, one at a time, the candidate that cuts off the most box optima not
    yet cut. Fewer than ``count`` rows come back when every box optimum is cut (or none can be).

    Returns ``(normals (k, n), offsets (k,))``.
    """
    c, y = np.asarray(c, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = c.shape[1]
    lb, ub = (np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)) for v in (lb, ub))
    kept = np.unique(y, axis=0)
    optima = box_optima(c, lb, ub)
    scale = np.abs(c).sum(axis=1) * np.maximum(np.abs(lb), np.abs(ub)).max() + 1.0
    cut_off = (c * optima).sum(axis=1) < (c * y).sum(axis=1) - TIE_TOL * scale  # surely infeasible
    negatives = np.unique(optima[cut_off], axis=0)
    if len(negatives) == 0:
        return np.zeros((0, n)), np.zeros(0)
    rng = np.random.default_rng(seed)
    sample = rng.choice(len(negatives), size=min(candidates, len(negatives)), replace=False)
    found = [a for a in (_widest_separator(negatives[i], kept) for i in sample) if a is not None]
    if not found:
        return np.zeros((0, n)), np.zeros(0)
    normals = np.array(found)
    offsets = (normals @ kept.T).max(axis=1)
    cuts = normals @ negatives.T > offsets[:, None] + 1e-9 * (1 + np.abs(offsets[:, None]))
    left = np.ones(len(negatives), dtype=bool)
    chosen: list[int] = []
    while len(chosen) < count:
        gain = (cuts & left).sum(axis=1)
        best = int(gain.argmax())
        if gain[best] == 0:
            break
        chosen.append(best)
        left &= ~cuts[best]
    return normals[chosen], offsets[chosen]
