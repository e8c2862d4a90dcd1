"""Decisions made under predicted constraints, scored once the true parameters are revealed:
the post-hoc regret of the Two-Stage Predict+Optimize framework (Hu, Lee & Lee, NeurIPS 2023).

Stage 1 solved the program with predicted parameters; Stage 2 solves it again under the true
ones, starting from the Stage-1 decision, with a penalty for every unit changed (and, where the
application says so, only drops or only additions allowed). Stage 2 is one more program of the
same kind (the units changed are linear in ``y`` at a bound of the box, and columns of their own
inside it), so every backend solves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ilplayer.core.bounds import as_bounds, as_integrality
from ilplayer.core.records import Status, has_solution
from ilplayer.metrics.stage2 import (
    FEASIBILITY_TOL,
    batched,
    given_rows,
    per_variable_penalty,
    solve_stage2,
    violated,
)
from ilplayer.oracle import Oracle, as_input
from ilplayer.program import Program

__all__ = ["CHANGES", "PostHocRegret", "TwoStage", "post_hoc_regret"]

CHANGES = ("any", "add", "drop")
"""What Stage 2 may change: any variable either way, only increases, or only decreases."""
GUARD = 1e-7  # PyEPO's guard against an all-zero optimal objective (as metrics.regret)


@dataclass(frozen=True)
class PostHocRegret:
    """The two-stage scores of one batch of Stage-1 decisions, per instance (float64, on the
    costs' device). An instance whose Stage 2 or true optimum has no solution has NaN scores
    and its ``status`` says why; the batch's means leave it out."""

    regret: torch.Tensor
    """(B,): the true optimum minus the Stage-2 value net of its penalty (for a ``min``
    program: the Stage-2 cost with its penalty minus the true optimum); never negative."""
    value: torch.Tensor
    """(B,): the Stage-2 objective under the true costs, net of the penalty paid for changes."""
    optimal: torch.Tensor
    """(B,): the true optimum (the program solved under the true parameters)."""
    stage2: torch.Tensor
    """(B, n): the Stage-2 decisions."""
    infeasible: torch.Tensor
    """(B,) bool: the Stage-1 decision violates a true constraint (Odece's infeasibility)."""
    status: torch.Tensor
    """(B,) int8 [Status][ilplayer.Status]: the true optimum's where it has none, else Stage 2's."""

    @property
    def solved(self) -> torch.Tensor:
        """(B,) bool: the instances with scores."""
        return ~torch.isnan(self.regret)

    @property
    def mean(self) -> float:
        """The mean post-hoc regret over the solved instances."""
        return self.regret[self.solved].mean().item()

    @property
    def normalised(self) -> float:
        """The field's normalised regret: the sum of post-hoc regrets over the sum of ``|true
        optimum|`` (solved instances)."""
        solved = self.solved
        return (self.regret[solved].sum() / (self.optimal[solved].abs().sum() + GUARD)).item()

    @property
    def infeasibility_rate(self) -> float:
        """The share of Stage-1 decisions infeasible under the true parameters."""
        return self.infeasible.to(torch.float64).mean().item()


def post_hoc_regret(
    program: Program,
    y_stage1: Any,
    c: Any = None,
    A: Any = None,
    b: Any = None,
    A_eq: Any = None,
    b_eq: Any = None,
    penalty: Any = 0.0,
    changes: str = "any",
    solver: Any = "highs",
    drop_penalty: Any = None,
    optimal: Any = None,
    **oracle_options: Any,
) -> PostHocRegret:
    """The post-hoc regret of Stage-1 decisions ``y_stage1`` (B, n) once the true parameters
    are revealed.

    Stage 2 solves ``program`` under the true ``c``, ``A``, ``b``, ``A_eq``, ``b_eq`` (each shared
    or one per instance; an omitted pair, or ``c``, is the program's) with ``penalty`` times each
    unit changed from ``y_stage1`` taken off the objective (added to a ``min`` program's cost).
    The regret is in the program's sense: for a ``max`` program the true optimum minus the
    Stage-2 value net of its penalty.

    Args:
        program: the [Program][ilplayer.Program] (its box, integrality and sense; its rows and
            objective where the call gives none). A program with a ``cost_map`` is refused.
        y_stage1: (B, n) the decisions made under the predicted parameters, integral on the
            integer variables. (A Stage 1 that found no decision decides what stands in for it:
            Hu et al. use all zeros.)
        c: the true costs, (n,) or (B, n).
        A: the true inequality rows, (m, n) or (B, m, n).
        b: their right-hand sides, (m,) or (B, m).
        A_eq: the true equality rows.
        b_eq: their right-hand sides.
        penalty: the cost of one unit changed: a scalar, one per variable (n,) or per instance
            and variable (B, n); non-negative.
        changes: ``"any"`` (either way), ``"add"`` (only increases: the ores of an alloy are
            only bought more) or ``"drop"`` (only decreases: knapsack items are only dropped).
        solver: the backend (a name or a `Solver`).
        drop_penalty: the cost of one unit dropped, where it differs from ``penalty`` (the nurse
            schedule pays for shifts added and nothing for shifts given up: ``0``).
        optimal: (B,) the true optimal objective values, where known (each call solves them
            otherwise; NaN where an instance has none): a solve per instance saved when the same
            instances are scored again.
        **oracle_options: further [Oracle][ilplayer.Oracle] arguments (``executor``, ``workers``,
            ``solver_options``).

    Returns:
        [PostHocRegret][ilplayer.metrics.two_stage.PostHocRegret]: per instance the regret, the Stage-2
        value and decisions, the true optimum, whether the Stage-1 decision was infeasible, and
        the status; ``.mean``, ``.normalised`` and ``.infeasibility_rate`` for the batch.
    """
    with TwoStage(program, solver, **oracle_options) as stages:
        return stages.score(
            y_stage1,
            c,
            A,
            b,
            A_eq,
            b_eq,
            penalty=penalty,
            changes=changes,
            drop_penalty=drop_penalty,
            optimal=optimal,
        )


def _has_solution(status: torch.Tensor) -> torch.Tensor:
    return has_solution(status).cpu()


def _infeasible(
    y1: torch.Tensor, box: tuple[np.ndarray, ...], A: Any, b: Any, A_eq: Any, b_eq: Any
) -> torch.Tensor:
    """Which Stage-1 decisions break the box or a true row (Odece's infeasibility)."""
    lb, ub = torch.from_numpy(box[0]), torch.from_numpy(box[1])
    outside = ((y1 < lb - FEASIBILITY_TOL) | (y1 > ub + FEASIBILITY_TOL)).any(-1)
    return outside | violated(y1, A, b, equality=False) | violated(y1, A_eq, b_eq, equality=True)


class TwoStage:
    """A program's two stages on one backend, kept between calls (their oracles, models and
    pools): [score][ilplayer.metrics.two_stage.TwoStage.score] is
    [post_hoc_regret][ilplayer.metrics.two_stage.post_hoc_regret] without building them anew, and
    [optimum][ilplayer.metrics.two_stage.TwoStage.optimum] the true optimum. A context manager.

    Args:
        program: the [Program][ilplayer.Program] (without a ``cost_map``).
        solver: the backend (a name or a `Solver`).
        **oracle_options: further [Oracle][ilplayer.Oracle] arguments (``executor``,
            ``workers``, ``solver_options``).
    """

    def __init__(self, program: Program, solver: Any = "highs", **oracle_options: Any) -> None:
        if not isinstance(program, Program):
            raise TypeError(f"program must be an ilplayer.Program, got {type(program).__name__}")
        if program.cost_map is not None:
            raise ValueError(
                "program: post_hoc_regret takes programs without a cost_map (decisions and costs "
                "per variable)"
            )
        self.program, self.solver, self.oracle_options = program, solver, oracle_options
        self._oracles: dict[Any, Oracle] = {}

    def _oracle(self, key: Any, program: Program) -> Oracle:
        if key not in self._oracles:
            self._oracles[key] = Oracle(program, solver=self.solver, **self.oracle_options)
        return self._oracles[key]

    def optimum(
        self, c: Any = None, A: Any = None, b: Any = None, A_eq: Any = None, b_eq: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The program solved under ``c``, ``A``, ``b``, ``A_eq``, ``b_eq`` (the program's where
        omitted): ``(y, status)``, as [Oracle][ilplayer.Oracle] returns them."""
        c = self.program.c if c is None else c
        if c is None:
            raise ValueError(
                "c: the true costs are needed (the program has no objective of its own)"
            )
        program = self.program
        box = Program(
            lb=program.lb, ub=program.ub, integrality=program.integrality, sense=program.sense
        )
        if A is None and b is None:
            A, b = program.A, program.b
        if A_eq is None and b_eq is None:
            A_eq, b_eq = program.A_eq, program.b_eq
        return self._oracle("optimum", box)(c, A, b, A_eq, b_eq)

    def optimal_values(
        self, c: Any = None, A: Any = None, b: Any = None, A_eq: Any = None, b_eq: Any = None
    ) -> torch.Tensor:
        """(B,) the true optimal objective values (float64, on the host), NaN where an instance
        has none: what [score][ilplayer.metrics.two_stage.TwoStage.score] takes as ``optimal``."""
        y, status = self.optimum(c, A, b, A_eq, b_eq)
        costs = (
            torch.as_tensor(as_input(self.program.c if c is None else c))
            .detach()
            .to("cpu", torch.float64)
        )
        values = (costs * y.to("cpu", torch.float64)).sum(-1)
        values[~has_solution(status).cpu()] = float("nan")
        return values

    def score(
        self,
        y_stage1: Any,
        c: Any = None,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
        penalty: Any = 0.0,
        changes: str = "any",
        drop_penalty: Any = None,
        optimal: Any = None,
    ) -> PostHocRegret:
        """[post_hoc_regret][ilplayer.metrics.two_stage.post_hoc_regret] of ``y_stage1`` on this
        backend (the same arguments, but the program and solver)."""
        program = self.program
        if changes not in CHANGES:
            raise ValueError(f"changes must be one of {CHANGES}, got {changes!r}")
        device = y_stage1.device if isinstance(y_stage1, torch.Tensor) else torch.device("cpu")
        y1, box = self._decisions(y_stage1)
        B, n = y1.shape
        c, A, b, A_eq, b_eq = self._true_parameters(B, n, c, A, b, A_eq, b_eq)
        add = per_variable_penalty(penalty, B, n, "penalty")
        if drop_penalty is None:
            drop = add
        else:
            drop = per_variable_penalty(drop_penalty, B, n, "drop_penalty")
        infeasible = _infeasible(y1, box, A, b, A_eq, b_eq)
        optimal, status_opt = self._optimal(optimal, B, c, A, b, A_eq, b_eq)
        sign = program.sign  # the objective in minimisation form
        ok_opt = _has_solution(status_opt)
        # Stage 2 only where the true program has an optimum (elsewhere its scores are NaN, and
        # proving an instance infeasible can be the slowest solve of the batch)
        keep = ok_opt.nonzero().flatten()
        y2, status2 = y1.clone(), torch.full((B,), int(Status.INFEASIBLE), dtype=torch.int8)
        if len(keep):
            true = (sign * c, A, b, A_eq, b_eq)
            y2[keep], status2[keep] = self._stage2(keep, true, y1, box, (add, drop), changes)
        paid = (add * (y2 - y1).clamp(min=0)).sum(-1) + (drop * (y1 - y2).clamp(min=0)).sum(-1)
        value = (c * y2).sum(-1) + sign * paid
        regret = (optimal - value) if program.sense == "max" else (value - optimal)
        ok2 = _has_solution(status2) & ok_opt
        nan = torch.full_like(regret, float("nan"))
        status = torch.where(ok_opt, status2, status_opt.cpu().to(torch.int8))
        to = lambda t: t.to(device)
        return PostHocRegret(
            regret=to(torch.where(ok_opt & ok2, regret, nan)),
            value=to(torch.where(ok2, value, nan)),
            optimal=to(torch.where(ok_opt, optimal, nan)),
            stage2=to(y2),
            infeasible=to(infeasible),
            status=to(status.to(torch.int8)),
        )

    def _true_parameters(
        self, B: int, n: int, c: Any, A: Any, b: Any, A_eq: Any, b_eq: Any
    ) -> tuple[Any, ...]:
        """The true ``c`` and rows, batched to ``B`` instances (the program's where omitted)."""
        program = self.program
        if c is None:
            if program.c is None:
                raise ValueError(
                    "c: the true costs are needed (the program has no objective of its own)"
                )
            c = program.c
        c = batched(c, B, (n,), "c")
        A, b = given_rows(program, B, n, A, b, "")
        A_eq, b_eq = given_rows(program, B, n, A_eq, b_eq, "_eq")
        return c, A, b, A_eq, b_eq

    def _optimal(
        self, optimal: Any, B: int, c: Any, A: Any, b: Any, A_eq: Any, b_eq: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The true optimum and its status: solved, or the ``optimal`` given (NaN: none)."""
        if optimal is None:
            y_opt, status_opt = self.optimum(c, A, b, A_eq, b_eq)
            return (c * y_opt.to(torch.float64).cpu()).sum(-1), status_opt
        optimal = batched(optimal, B, (), "optimal").clone()
        status_opt = torch.where(torch.isnan(optimal), int(Status.INFEASIBLE), int(Status.OPTIMAL))
        return optimal, status_opt

    def _stage2(
        self,
        keep: torch.Tensor,
        true: tuple[Any, ...],
        y1: torch.Tensor,
        box: tuple[np.ndarray, np.ndarray, np.ndarray],
        penalties: tuple[torch.Tensor, torch.Tensor],
        changes: str,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Stage 2 of the instances ``keep``: ``true`` is ``(c, A, b, A_eq, b_eq)`` with ``c`` in
        minimisation form; returns their decisions and statuses."""
        c, A, b, A_eq, b_eq = true
        add, drop = penalties
        rows_of = lambda M: M[keep] if isinstance(M, torch.Tensor) and M.dim() == 3 else M
        stage2, rows = solve_stage2(
            c[keep],
            rows_of(A),  # a shared matrix stays shared
            b[keep],
            rows_of(A_eq),
            b_eq[keep],
            y1[keep],
            box,
            add[keep],
            drop[keep],
            changes,
        )
        bounds = (
            np.asarray(getattr(stage2, name)).tobytes() for name in ("lb", "ub", "integrality")
        )
        z, solved2 = self._oracle((changes, *bounds), stage2)(*rows)
        return z[:, : y1.shape[1]].to(torch.float64).cpu(), solved2.cpu().to(torch.int8)

    def _decisions(
        self, y_stage1: Any
    ) -> tuple[torch.Tensor, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``y_stage1`` checked, as a float64 host tensor, and the program's box and integrality."""
        y1 = torch.as_tensor(as_input(y_stage1))
        if y1.dtype.is_complex:
            raise TypeError("y_stage1 must be a real tensor or array")
        if y1.ndim != 2 or y1.shape[0] == 0:
            raise ValueError(f"y_stage1 must have shape (B, n) with B >= 1, got {tuple(y1.shape)}")
        y1 = y1.detach().to("cpu", torch.float64)
        if not torch.isfinite(y1).all():
            raise ValueError(
                "y_stage1 must be finite (a Stage 1 without a decision: pass what stands in for it)"
            )
        n = y1.shape[1]
        lb, ub = as_bounds(self.program.lb, n, "lb"), as_bounds(self.program.ub, n, "ub")
        integer = as_integrality(self.program.integrality, n)
        if integer.ndim != 1:
            raise ValueError("program: post_hoc_regret takes one integrality for all instances")
        integral = torch.from_numpy(integer)
        if (y1[:, integral] != y1[:, integral].round()).any():
            raise ValueError("y_stage1 must be integral on the program's integer variables")
        return y1, (lb, ub, integer)

    def close(self) -> None:
        """Release the oracles' backends and pools (a later call builds them again)."""
        for oracle in self._oracles.values():
            oracle.close()
        self._oracles.clear()

    def __enter__(self) -> TwoStage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
