"""The LP relaxation of a program with one inequality row and a finite box, in closed form.

``min c·y  s.t.  a·y <= b,  l <= y <= u`` is the fractional knapsack: with the row's
multiplier ``lam >= 0`` each variable sits at the bound that minimises ``(c_j + lam a_j) y_j``,
and raising ``lam`` from 0 flips the variables one at a time, at ``lam_j = -c_j / a_j``, each
flip lowering ``a·y`` by ``|a_j| (u_j - l_j)``. The optimal ``lam`` is the flip at which
``a·y`` reaches ``b``; its variable takes the fractional value that meets the row exactly.
Sorting the flips gives every instance's LP optimum (a vertex: one variable off its bounds) and
multiplier at once, without the backend's LP: CombOptNet's one-row knapsacks get a new row
every step, and building the LP cost more than solving the instances.

A pure-integer one-row program in a small box (`by_two_lists`) needs neither: the knapsack
backend's two lists (meet in the middle) answer it exactly, in less time than the relaxation
and the search around it. In a larger box (`MIP_TWO_LISTS_HALF_POINTS`) the two lists still
answer an instance that the relaxation and the search leave open, in place of the backend's MIP.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ilplayer.core.matrices import is_sparse
from ilplayer.core.records import ILPBatch, Status
from ilplayer.solvers.block_lps import integral_answers
from ilplayer.solvers.bruteforce import head_size
from ilplayer.solvers.reduced_costs import reduced_box
from ilplayer.solvers.shortcuts import ModelHooks, Multipliers

__all__ = [
    "MIP_TWO_LISTS_HALF_POINTS",
    "TWO_LISTS_HALF_POINTS",
    "OneRowRelaxations",
    "by_two_lists",
    "one_row_optima",
    "solved_in_closed_form",
]

INTEGRAL_TOL = 1e-9  # an LP optimum this close to integers answers the instance
# The largest half of a box that the two lists answer (binary n <= 18, [-5, 5]^4): past it the
# lists' tables cost more than the relaxation and the search (docs/records/solvers.md).
TWO_LISTS_HALF_POINTS = 512
# The largest half for which the two lists answer, in place of the backend's MIP, an instance the
# relaxation and the search leave open (binary n <= 28, [-5, 5]^8): on near-alike knapsack
# items a small fraction of a branch and bound's time (docs/records/solvers.md, "HiGHS' node
# budget").
MIP_TWO_LISTS_HALF_POINTS = 2**14


def solved_in_closed_form(batch: ILPBatch) -> bool:
    """Whether ``batch``'s relaxation has the closed form: one dense inequality row, no
    equalities, a finite box."""
    return (
        batch.num_constraints == 1
        and not batch.num_equalities
        and not is_sparse(batch.A)
        and bool(np.isfinite(batch.lb).all() and np.isfinite(batch.ub).all())
    )


def by_two_lists(batch: ILPBatch, half_points: int = TWO_LISTS_HALF_POINTS) -> bool:
    """Whether a batch that `solved_in_closed_form` is answered exactly by the knapsack
    backend's two lists instead: pure integer, integral bounds, and halves of at most
    ``half_points`` box points."""
    if not batch.pure_integer:
        return False
    lb, ub = batch.lb, batch.ub
    if not (np.array_equal(lb, np.round(lb)) and np.array_equal(ub, np.round(ub))):
        return False
    return halves_fit(lb, ub, half_points)


def halves_fit(lb: np.ndarray, ub: np.ndarray, half_points: int) -> bool:
    """Whether both halves of the integral box ``[lb, ub]`` (as the two lists split it) hold
    at most ``half_points`` points."""
    sizes = [int(u - l + 1) for l, u in zip(lb.tolist(), ub.tolist())]
    if math.prod(sizes) > half_points**2:
        return False
    head = head_size(sizes)
    return max(math.prod(sizes[:head]), math.prod(sizes[head:])) <= half_points


def one_row_optima(
    c: np.ndarray, a: np.ndarray, b: float, lb: np.ndarray, ub: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, lam, feasible)`` for each row of ``c`` (k, n): the LP optimum of ``min c·y, a·y <=
    b, lb <= y <= ub``, its row multiplier, and whether the LP is feasible (where it is not,
    ``x`` is the point of least ``a·y``)."""
    k = len(c)
    # At lam = 0+ : each variable at its cheaper bound; a tie (c_j = 0) at the one of less a_j y_j.
    start = np.where(c > 0, lb, np.where(c < 0, ub, np.where(a >= 0, lb, ub)))
    activity = start @ a
    # Variables whose cost and row coefficient have opposite signs flip as lam grows.
    with np.errstate(divide="ignore", invalid="ignore"):
        flips_at = np.where(c * a < 0, -c / a, np.inf)
    order = np.argsort(flips_at, axis=1, kind="stable")
    drop = np.where(np.isfinite(flips_at), np.abs(a) * (ub - lb), 0.0)
    dropped = np.cumsum(np.take_along_axis(drop, order, axis=1), axis=1)  # after each flip
    after = activity[:, None] - dropped
    reaches = after <= b
    feasible = (activity <= b) | reaches[:, -1]
    # The flip that reaches b (the first one with activity <= b after it).
    critical = np.where(activity <= b, -1, np.argmax(reaches, axis=1))
    x = start.copy()
    lam = np.zeros(k)
    rows = np.flatnonzero((activity > b) & feasible)
    for i in rows.tolist():  # at most n flips each: the sorted prefix, then the fractional one
        last = int(critical[i])
        flipped = order[i, :last]
        x[i, flipped] = np.where(a[flipped] > 0, lb[flipped], ub[flipped])
        j = int(order[i, last])
        before = activity[i] - (dropped[i, last - 1] if last else 0.0)
        x[i, j] = np.clip(start[i, j] + (b - before) / a[j], lb[j], ub[j])
        lam[i] = flips_at[i, j]
    infeasible = np.flatnonzero(~feasible)
    x[infeasible] = np.where(a > 0, lb, ub)
    return x, lam, feasible


class OneRowRelaxations:
    """The hooks `answer_batch` asks of a backend, for one batch whose relaxation has the closed
    form (`solved_in_closed_form`): the relaxations and their multipliers from
    `one_row_optima`, the MIP from ``lists`` (a `KnapsackSolver`, given where the box is small
    enough: `MIP_TWO_LISTS_HALF_POINTS`) or else the backend's own ``solve_instance``."""

    def __init__(self, backend: ModelHooks, batch: ILPBatch, lists: Any = None) -> None:
        self.backend, self.batch, self.lists = backend, batch, lists
        self._solved: tuple[dict[bytes, int], tuple[np.ndarray, ...]] | None = None

    @property
    def name(self) -> str:
        return self.backend.name

    def _optima(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`one_row_optima` of the rows ``c`` of the batch's costs, all of them solved once
        (the relaxations and then the search ask for the same rows)."""
        if self._solved is None:
            batch = self.batch
            a = np.asarray(batch.A, dtype=np.float64)[0]
            costs = np.asarray(batch.c, dtype=np.float64)
            found = one_row_optima(costs, a, float(batch.b[0]), batch.lb, batch.ub)
            self._solved = {row.tobytes(): i for i, row in enumerate(costs)}, found
        index, (x, lam, feasible) = self._solved
        rows = [index[row.tobytes()] for row in np.asarray(c, dtype=np.float64)]
        return x[rows], lam[rows], feasible[rows]

    def solve_relaxations(self, model: Any, c: np.ndarray) -> list[np.ndarray | None]:
        x, _, feasible = self._optima(c)
        answers = integral_answers(x, self.batch.integrality, INTEGRAL_TOL)
        return [answer if ok else None for answer, ok in zip(answers, feasible.tolist())]

    def relaxation_multipliers(self, model: Any, c: np.ndarray) -> list[Multipliers | None]:
        x, lam, feasible = self._optima(c)
        empty = np.zeros(0)
        return [
            (lam[i : i + 1], empty, x[i]) if ok else None for i, ok in enumerate(feasible.tolist())
        ]

    def solve_instance(
        self, model: Any, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        box = None if self.lists is None else self._box_for_lists(c, start)
        if box is None:
            return self.backend.solve_instance(model, c, start)
        lo, hi = box
        result = self.lists.solve(
            ILPBatch(
                c=np.asarray(c, dtype=np.float64)[None],
                A=self.batch.A,
                b=self.batch.b,
                lb=lo,
                ub=hi,
            )
        )
        code = Status(int(result.status[0]))
        return code, result.y[0] if code == Status.OPTIMAL else None

    def _box_for_lists(
        self, c: np.ndarray, start: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The box the two lists search for this instance in place of the MIP, or None: with a
        feasible ``start``, the sub-box of the points at least as good (`reduced_box`, under the
        relaxation's multiplier), else the whole box; None where its halves exceed
        `MIP_TWO_LISTS_HALF_POINTS`."""
        batch = self.batch
        if not by_two_lists(batch, half_points=1 << 62):  # pure integer, integral bounds
            return None
        box = (batch.lb, batch.ub)
        if start is not None and batch.checked_points(start[None])[1][0]:
            _, lam, feasible = self._optima(c[None])
            if feasible[0]:
                a = np.asarray(batch.A, dtype=np.float64)
                reduced = reduced_box(c, start, a, batch.b, batch.lb, batch.ub, lam)
                box = box if reduced is None else reduced
        return box if halves_fit(*box, MIP_TWO_LISTS_HALF_POINTS) else None
