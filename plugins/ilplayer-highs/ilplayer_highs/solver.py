"""HiGHS through highspy: one ``Highs`` object per ``(A, b)``; only the costs change."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ilplayer.plugin_api import (
    Capability,
    ILPBatch,
    Multipliers,
    PersistentModelSolver,
    Status,
    Switch,
    capped_nodes,
    import_solver_library,
    infeasible_or_unbounded,
    integral_answer,
    multipliers_in_blocks,
    native_value,
    solve_in_blocks,
    stack_rows,
)

# Exact by default, one thread, and no feasibility-jump heuristic (it costs more than a tiny
# MIP; the measurements behind these settings: docs/records/defaults.md, "HiGHS").
#
# Tolerances: HiGHS gets the core's tolerance in the data (rows ``A y <= b + FEASIBILITY_TOL``,
# as CP-SAT does) and its own MIP tolerance tight (1e-8). With HiGHS' defaults (row tolerance
# 1e-7, integrality 1e-6) an instance feasible only within ~1e-7 was called infeasible for one
# cost vector and solved for another on the same (A, b), and its status differed from the
# exhaustive oracle on 63 of 6 381 fuzzed instances with float32-rounded data; with these
# settings on none (docs/records/solvers.md). Tighter still (1e-9, below what its LP delivers) HiGHS
# 1.16 returned a point 0.003 above the optimum as optimal on paper-sized dense instances (1 in
# ~13 000, scripts/cross_check.py; tests/solving/test_cross_backend.py keeps one). Presolve is off: it
# costs more than it saves on these tiny models, and it is where the inconsistencies reported
# by users came from. From PRESOLVE_FROM variables on it is on (unless params set it): there it
# pays (TSPs, large knapsacks and grids, ``ilplayer bench scale``).
FEASIBILITY_TOL = 1e-6
PRESOLVE_FROM = 100
INTEGRAL_LP_TOL = 1e-9  # an LP vertex this close to integers is taken as the MIP optimum
CUTOFF_SLACK = 1e-9  # relative: the cutoff admits the start itself and its ties
# A start is also handed over as a MIP start while recent starts of its constraint set were
# mostly optimal: a moving average of those hits (weight HIT_WEIGHT) at least START_HIT_RATE.
HIT_WEIGHT = 0.2
START_HIT_RATE = 0.25
DEFAULT_OPTIONS: dict[str, Any] = {
    "output_flag": False,
    "threads": 1,
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "mip_heuristic_run_feasibility_jump": False,
    "presolve": "off",
    "mip_feasibility_tolerance": 1e-8,
    # Tuned for the tiny models of a training batch (n = 16..64, m <= 16): symmetry
    # detection, restarts, strong branching (reliability 0: pseudo-costs from the first
    # branching), primal heuristics and a large cut pool each cost more than they save.
    # benchmarks/tuning.py measures each one; the fuzz oracle checks the answers.
    "mip_detect_symmetry": False,
    "mip_allow_restart": False,
    "mip_pscost_minreliable": 0,
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_root_reduced_cost": False,
    "mip_pool_soft_limit": 1,
}
# The speed settings above, left at HiGHS' own defaults (unless params set them) on a model with
# an integer variable of infinite bound: without presolve, restarts and heuristics branch and
# bound need not end there (ILPBatch.unbounded_integers: a 9-variable MILP HiGHS' defaults
# settle in presolve ran into every time limit).
SPEED_OPTIONS = (
    "mip_heuristic_run_feasibility_jump",
    "presolve",
    "mip_detect_symmetry",
    "mip_allow_restart",
    "mip_pscost_minreliable",
    "mip_heuristic_effort",
    "mip_heuristic_run_rens",
    "mip_heuristic_run_rins",
    "mip_heuristic_run_root_reduced_cost",
    "mip_pool_soft_limit",
)
# Each instance of a model on the speed settings starts on them with a budget of ESCALATE_NODES
# branch-and-bound nodes; one that runs past it is solved again on HiGHS' own (SPEED_OPTIONS at
# its defaults), and the next instance starts on the speed settings again, as in the Gurobi and
# SCIP plugins (docs/records/solvers.md, "A switch per instance"). HiGHS' budget is ten times
# theirs: its restart on its own settings throws the tuned nodes away, and on the paper's dense
# [-5, 5] task the instances past 500 nodes were finished faster tuned; the near-tie knapsacks
# that need the switch on Gurobi and SCIP never needed it on HiGHS (docs/records/solvers.md,
# "HiGHS' node budget").
ESCALATE_NODES = 5000


# The LP relaxation solved before each MIP only ever sees new costs, so its previous basis stays
# primal feasible. Devex pricing needs fewer dual simplex iterations for that re-solve than
# HiGHS' default (dual steepest edge), so it is faster per relaxation on the shortest-path
# costs of an SPO+ or Fenchel-Young epoch.
RELAXATION_OPTIONS: dict[str, Any] = {"simplex_dual_edge_weight_strategy": 1}

# Each ``Highs.run`` has a fixed cost (HiGHS 1.16 reads the CPU topology from sysfs on every
# run, docs/records/bench.md) as large as the re-solve of a 40-column LP itself. Relaxations
# asked for together are therefore solved BLOCK at a time as one block-diagonal LP (a vertex of
# it is a vertex in every block).
BLOCK = 16
MIN_BLOCK = 4  # fewer relaxations than this run one by one


_banner_lock = threading.Lock()
_banner_hidden = False


def pass_as_mip(
    hs: Any, highs: Any, lp: Any, integer: np.ndarray, what: str, rows: Any = None
) -> None:
    """Pass the relaxation ``lp`` to ``highs`` as the MIP: its ``integer`` columns integral and,
    with ``rows = (lower, upper)``, those row bounds instead of its own; ``lp`` left as it was."""
    exact = lp.row_lower_, lp.row_upper_
    if rows is not None:
        lp.row_lower_, lp.row_upper_ = rows
    lp.integrality_ = [
        hs.HighsVarType.kInteger if flag else hs.HighsVarType.kContinuous for flag in integer
    ]
    try:
        if highs.passModel(lp) != hs.HighsStatus.kOk:
            raise RuntimeError(f"HiGHS rejected {what}")
    finally:
        (lp.row_lower_, lp.row_upper_), lp.integrality_ = exact, []


def new_highs(hs: Any) -> Any:
    """A ``Highs`` object that prints nothing and never calls back into Python.

    HiGHS 1.16 prints its banner to the process's stdout when the first object is made, before
    any option can turn output off: that one construction runs with stdout pointed at
    /dev/null. highspy's ``Highs`` also enables Python callbacks on every object; a solve then
    takes the GIL for each callback event, so they are disabled (faster LP re-solves, and
    threads overlap better).
    """
    global _banner_hidden
    with _banner_lock:
        if _banner_hidden:
            highs = hs.Highs()
        else:
            sys.stdout.flush()
            saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            try:
                highs = hs.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(devnull)
            _banner_hidden = True
    if hasattr(highs, "disableCallbacks"):
        highs.disableCallbacks()
    highs.setOptionValue("output_flag", False)
    return highs


def run_highs(highs: Any, hs: Any) -> Any:
    """``highs.run()``, once more after resetting HiGHS' global thread scheduler when another
    user of highspy in this process started it with more threads than ours (``threads=1``).

    HiGHS 1.16 keeps one scheduler per process; once a model with the default ``threads`` (all
    cores) has run -- PyEPO's Pyomo model on ``appsi_highs``, say -- every model asking for 1
    thread fails with "the scheduler has already been initialized to use 2 threads" and model
    status "Not Set". Reset, a model with the default adopts the 1-thread scheduler.
    """
    status = highs.run()
    if status == hs.HighsStatus.kError and highs.getModelStatus() == hs.HighsModelStatus.kNotset:
        with _banner_lock:
            hs.Highs.resetGlobalScheduler(True)
        status = highs.run()
    return status


# HiGHS' feasibility-jump heuristic (1.16): most of the zero-cost check's time on small
# programs whose point the MIP without it finds at the root, yet over 1,400 held-out checks it
# found 3 points the MIP without it did not (docs/records/solvers.md, "The feasibility check
# tries its LP first").
FEASIBILITY_JUMP = "mip_heuristic_run_feasibility_jump"


def _time_limit(highs: Any) -> float:
    return float(highs.getOptionValue("time_limit")[1])


def _set_time_limit(highs: Any, seconds: float) -> None:
    highs.setOptionValue("time_limit", seconds)


CLASH_FIX = (
    "ortools and highspy 1.13-1.15 each ship a libhighs.so.1; highspy 1.16 links HiGHS "
    "into its own module and lives beside ortools: pip install 'ilplayer[all]' "
    "(highspy>=1.16 with ortools 9.15)."
)


@dataclass
class HighsModel:
    """One constraint set's HiGHS models, each made on first use (``highs``, ``relaxation``): the
    MIP (within the core's band) and its columns, the LP relaxation (exact rows) and its ``lp``,
    the block-diagonal LP ``(highs, columns)``, and the MIP's state: its objective cutoff, how
    often recent starts were optimal, and whether it takes starts at all (``starts``: no
    infinite bound). A batch that the core answers alone (a one-row relaxation in closed form,
    the search) never builds them: with a new constraint set each step that cost as much as
    the answers."""

    make_mip: Any  # (lp) -> the MIP
    make_relaxation: Any  # (lp) -> the LP relaxation
    make_lp: Any  # () -> the relaxation's HighsLp, which the others are made from
    columns: np.ndarray
    integer: np.ndarray
    equalities: int
    starts: bool
    block: tuple[Any, np.ndarray] | None = None
    cutoff: float = np.inf
    hit_rate: float = 1.0
    tuned: bool = (
        True  # on the speed settings; an instance past ESCALATE_NODES solved again on HiGHS' own
    )
    # A streak on HiGHS' own costs a dense box a little; without it, sudoku's models (whose
    # instances run past the budget, and which HiGHS' presolve settles) paid the budget on each.
    switch: Switch = field(default_factory=Switch)
    exact_first: bool = (
        False  # an unbounded integer: the exact rows' MIP first, then the banded one
    )
    exact: Any = None  # the MIP on the exact rows (made on first use)
    batch: ILPBatch | None = None  # the constraint set (``exact_first`` models)
    made: dict[str, Any] = field(default_factory=dict)
    # The relaxation's statuses under the costs of the last batch's relaxations (one at a time):
    # the relaxation's answer and the test for an unbounded relaxation before the MIP ask the
    # same LP of each instance.
    relaxed: dict[bytes, Any] = field(default_factory=dict)

    @property
    def lp(self) -> Any:
        if "lp" not in self.made:
            self.made["lp"] = self.make_lp()
        return self.made["lp"]

    @property
    def highs(self) -> Any:
        if "mip" not in self.made:
            self.made["mip"] = self.make_mip(self.lp)
        return self.made["mip"]

    @property
    def relaxation(self) -> Any:
        if "relaxation" not in self.made:
            self.made["relaxation"] = self.make_relaxation(self.lp)
        return self.made["relaxation"]


class HighsSolver(PersistentModelSolver):
    """HiGHS MIP (open source). Exact (gaps 0), single-threaded, feasibility jump off.

    Args:
        time_limit: seconds per instance (``Status.TIME_LIMIT`` when reached).
        params: HiGHS options by name, e.g. ``{"presolve": "off"}``; override the defaults.
    """

    name = "highs"
    solves_relaxations = True
    gives_multipliers = True
    capabilities = frozenset(
        {
            Capability.RELEASES_GIL,
            Capability.IN_PLACE_UPDATES,
            Capability.EQUALITY_CONSTRAINTS,
            Capability.TIME_LIMIT,
            Capability.CONTINUOUS_VARIABLES,
            Capability.INFINITE_BOUNDS,
        }
    )
    accepts_start = True

    def __init__(
        self,
        time_limit: float | None = None,
        params: dict[str, Any] | None = None,
        warm_start: bool | None = None,
    ) -> None:
        super().__init__(time_limit, params, warm_start)
        self._highspy = import_solver_library("highspy", clashes_with=("ortools",), fix=CLASH_FIX)
        options = {**DEFAULT_OPTIONS, **self.params}
        if self.time_limit is not None:
            options["time_limit"] = self.time_limit
        probe = new_highs(self._highspy)
        # HiGHS' own values of what the speed settings change, for the instances finished on them
        self._own = {key: probe.getOptionValue(key)[1] for key in (*SPEED_OPTIONS, "mip_max_nodes")}
        self._jumps_off: set[int] = set()  # the models of a check in progress (`node_limit`)
        for key, value in options.items():  # validate names and values once, up front
            found, current = probe.getOptionValue(key)
            if found != self._highspy.HighsStatus.kOk:
                raise ValueError(
                    f"params: HiGHS rejected option {key}={value!r}: HiGHS has no option of that name"
                )
            options[key] = value = native_value("HiGHS", key, value, current)
            if probe.setOptionValue(key, value) != self._highspy.HighsStatus.kOk:
                raise ValueError(
                    f"params: HiGHS rejected option {key}={value!r}: a value out of its range"
                )
        self.options = options

    def _model_options(self, num_variables: int) -> dict[str, Any]:
        """The options of a model of ``num_variables`` columns on the speed settings."""
        options = dict(self.options)
        if num_variables >= PRESOLVE_FROM and "presolve" not in self.params:
            options["presolve"] = "on"  # large models: it pays (PRESOLVE_FROM)
        return options

    def _own_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` without the speed settings that ``params`` leave to HiGHS' defaults."""
        return {
            key: value
            for key, value in options.items()
            if key not in SPEED_OPTIONS or key in self.params
        }

    def build_model(self, batch: ILPBatch) -> HighsModel:
        hs = self._highspy
        options = self._model_options(batch.num_variables)
        if (
            batch.unbounded_integers
        ):  # a fresh Highs holds HiGHS' defaults: leave them (SPEED_OPTIONS)
            options = self._own_options(options)
        elif "mip_max_nodes" not in self.params:
            options["mip_max_nodes"] = ESCALATE_NODES

        # Inequalities, then equalities as rows with both sides (in the MIP b_eq -/+ the
        # tolerance). The LP relaxation is on the exact rows (no tolerance band: within the band
        # a vertex sits 1e-6 off the integers), solved first.
        def make_lp() -> Any:
            import scipy.sparse as sparse

            matrix = sparse.csc_matrix(stack_rows(batch.A, batch.A_eq))  # sparse stays sparse
            matrix.eliminate_zeros()
            m, n = matrix.shape
            lp = hs.HighsLp()
            lp.num_col_, lp.num_row_ = n, m
            lp.col_cost_ = np.zeros(n)
            lp.col_lower_ = np.where(np.isfinite(batch.lb), batch.lb, -hs.kHighsInf)
            lp.col_upper_ = np.where(np.isfinite(batch.ub), batch.ub, hs.kHighsInf)
            lp.row_lower_ = np.concatenate(
                [np.full(batch.num_constraints, -hs.kHighsInf), batch.b_eq]
            )
            lp.row_upper_ = np.concatenate([batch.b, batch.b_eq])
            lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
            lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
            lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
            lp.a_matrix_.value_ = matrix.data.astype(np.float64)
            return lp

        def make_mip(lp: Any) -> Any:
            highs = new_highs(hs)
            for key, value in options.items():
                highs.setOptionValue(key, value)
            band_eq = batch.row_band(FEASIBILITY_TOL, equalities=True)
            banded = (
                np.concatenate(
                    [np.full(batch.num_constraints, -hs.kHighsInf), batch.b_eq - band_eq]
                ),
                np.concatenate([batch.b + batch.row_band(FEASIBILITY_TOL), batch.b_eq + band_eq]),
            )
            pass_as_mip(hs, highs, lp, batch.integrality, "the model", rows=banded)
            return highs

        def make_relaxation(lp: Any) -> Any:
            relaxation = new_highs(hs)
            for key, value in {**RELAXATION_OPTIONS, **self.options}.items():
                if not key.startswith("mip_"):
                    relaxation.setOptionValue(key, value)
            if relaxation.passModel(lp) != hs.HighsStatus.kOk:
                raise RuntimeError("HiGHS rejected the LP relaxation")
            return relaxation

        # With an infinite bound an instance may be unbounded, and HiGHS' answer under a cutoff
        # ("nothing below it") would hide that: such models take no start.
        return HighsModel(
            make_mip=make_mip,
            make_relaxation=make_relaxation,
            make_lp=make_lp,
            columns=np.arange(batch.num_variables, dtype=np.int32),
            integer=batch.integrality,
            equalities=batch.num_equalities,
            starts=bool(np.isfinite(batch.lb).all() and np.isfinite(batch.ub).all()),
            tuned=not batch.unbounded_integers and "mip_max_nodes" not in self.params,
            exact_first=batch.unbounded_integers,
            batch=batch if batch.unbounded_integers else None,
        )

    def _block_lp(self, model: HighsModel) -> tuple[Any, np.ndarray]:
        """BLOCK copies of the relaxation's rows side by side, as one warm-started LP."""
        if model.block is None:
            hs, lp = self._highspy, model.lp
            n, m = lp.num_col_, lp.num_row_
            start = np.asarray(lp.a_matrix_.start_, dtype=np.int64)
            index = np.asarray(lp.a_matrix_.index_, dtype=np.int64)
            value = np.asarray(lp.a_matrix_.value_, dtype=np.float64)
            nnz = int(start[-1])
            big = hs.HighsLp()
            big.num_col_, big.num_row_ = BLOCK * n, BLOCK * m
            big.col_cost_ = np.zeros(BLOCK * n)
            big.col_lower_ = np.tile(np.asarray(lp.col_lower_), BLOCK)
            big.col_upper_ = np.tile(np.asarray(lp.col_upper_), BLOCK)
            big.row_lower_ = np.tile(np.asarray(lp.row_lower_), BLOCK)
            big.row_upper_ = np.tile(np.asarray(lp.row_upper_), BLOCK)
            big.a_matrix_.format_ = hs.MatrixFormat.kColwise
            offsets = np.arange(BLOCK, dtype=np.int64)
            big.a_matrix_.start_ = np.concatenate(
                [(start[:-1][None, :] + nnz * offsets[:, None]).ravel(), [BLOCK * nnz]]
            ).astype(np.int32)
            big.a_matrix_.index_ = (index[None, :] + m * offsets[:, None]).ravel().astype(np.int32)
            big.a_matrix_.value_ = np.tile(value, BLOCK)
            highs = new_highs(hs)
            for key, option in {**RELAXATION_OPTIONS, **self.options}.items():
                if not key.startswith("mip_"):
                    highs.setOptionValue(key, option)
            if highs.passModel(big) != hs.HighsStatus.kOk:
                raise RuntimeError("HiGHS rejected the block relaxation")
            model.block = (highs, np.arange(BLOCK * n, dtype=np.int32))
        return model.block

    def solve_relaxations(self, model: HighsModel, c: np.ndarray) -> list[np.ndarray | None]:
        if len(c) < MIN_BLOCK:
            model.relaxed = {}
            return [self.solve_relaxation(model, row) for row in c]
        optimal = self._highspy.HighsModelStatus.kOptimal
        highs, columns = self._block_lp(model)

        def solve_block(costs: np.ndarray) -> Any:
            highs.changeColsCost(len(columns), columns, costs)
            run_highs(highs, self._highspy)
            return highs.getSolution().col_value if highs.getModelStatus() == optimal else None

        return solve_in_blocks(c, BLOCK, solve_block, INTEGRAL_LP_TOL, model.integer)

    def relaxation_multipliers(self, model: HighsModel, c: np.ndarray) -> list[Multipliers | None]:
        # A HiGHS MIP re-solve costs ten times an LP re-solve even when its root closes the gap
        # (knapsacks: root cut separation): with the duals the core's reduced-cost
        # search answers most revisited binary instances without the MIP.
        columns, optimal, lp = model.columns, self._highspy.HighsModelStatus.kOptimal, model.lp
        if len(c) < MIN_BLOCK:
            highs, size = model.relaxation, 1
        else:
            (highs, columns), size = self._block_lp(model), BLOCK

        def solve_block(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
            highs.changeColsCost(len(columns), columns, costs)
            run_highs(highs, self._highspy)
            if highs.getModelStatus() != optimal:
                return None
            # HiGHS' row duals are the objective's sensitivity to the row bounds: <= 0 on a
            # binding "<=" row of a minimisation, so the multipliers are their negatives.
            solution = highs.getSolution()
            return -np.asarray(solution.row_dual).reshape(size, lp.num_row_), np.asarray(
                solution.col_value
            )

        return multipliers_in_blocks(c, size, lp.num_row_ - model.equalities, solve_block)

    def _relaxation_unbounded(self, model: HighsModel, c: np.ndarray) -> bool:
        """Whether the LP relaxation under the costs ``c`` is unbounded (or unbounded or
        infeasible). Asked before the MIP of a model with an infinite bound: HiGHS 1.16's
        branch and bound ran for minutes without end on an unbounded MILP whose relaxation it
        settles in microseconds (fuzz seed 200579). A feasible MILP with an unbounded relaxation
        is unbounded itself (rational data, Meyer 1974); the zero-cost check decides
        feasibility."""
        columns, relaxation = model.columns, model.relaxation
        hs = self._highspy
        unbounded = (hs.HighsModelStatus.kUnbounded, hs.HighsModelStatus.kUnboundedOrInfeasible)
        known = model.relaxed.pop(np.asarray(c, dtype=np.float64).tobytes(), None)
        if known in (*unbounded, hs.HighsModelStatus.kOptimal, hs.HighsModelStatus.kInfeasible):
            return known in unbounded  # the relaxation's answer just ran this LP
        relaxation.changeColsCost(len(columns), columns, c)
        run_highs(relaxation, hs)
        status = relaxation.getModelStatus()
        if status == hs.HighsModelStatus.kUnknown:  # from an unbounded basis; see solve_instance
            relaxation.clearSolver()
            run_highs(relaxation, hs)
            status = relaxation.getModelStatus()
        return status in (
            hs.HighsModelStatus.kUnbounded,
            hs.HighsModelStatus.kUnboundedOrInfeasible,
        )

    def solve_relaxation(self, model: HighsModel, c: np.ndarray) -> np.ndarray | None:
        # An optimal LP vertex that is integral is optimal for the MIP too (it relaxes it, and
        # the exact rows admit no more than the MIP's band): network-flow and assignment rows
        # give one every time, at a fraction of a MIP root's cost.
        columns, relaxation = model.columns, model.relaxation
        relaxation.changeColsCost(len(columns), columns, c)
        run_highs(relaxation, self._highspy)
        status = relaxation.getModelStatus()
        model.relaxed[np.asarray(c, dtype=np.float64).tobytes()] = status
        if status != self._highspy.HighsModelStatus.kOptimal:
            return None
        return integral_answer(
            np.array(relaxation.getSolution().col_value), model.integer, INTEGRAL_LP_TOL
        )

    def _escalate(self, model: HighsModel, spent: float) -> Any:
        """The instance solved on HiGHS' own settings (``params`` kept; after a tuned solve past
        ``ESCALATE_NODES``, again) within what is left of the time limit after ``spent``
        seconds, then the model put back on the speed settings for the next one; the
        instance's model status."""
        highs = model.highs
        speed = [key for key in SPEED_OPTIONS if key not in self.params]
        for key in (*speed, "mip_max_nodes"):
            highs.setOptionValue(key, self._own[key])
        if self.time_limit is not None:
            highs.setOptionValue("time_limit", max(self.time_limit - spent, 1e-3))
        run_highs(highs, self._highspy)
        status = highs.getModelStatus()
        tuned = self._model_options(len(model.columns))
        for key in speed:
            highs.setOptionValue(key, tuned[key])
        highs.setOptionValue("mip_max_nodes", ESCALATE_NODES)
        if self.time_limit is not None:
            highs.setOptionValue("time_limit", self.time_limit)
        return status

    def _exact_mip(self, model: HighsModel) -> Any:
        """The MIP on the exact rows (equalities as equalities), on HiGHS' own settings and its
        own integrality tolerance (its answers are checked on the core's terms); made once."""
        if model.exact is None:
            hs, lp = self._highspy, model.lp
            highs = new_highs(hs)
            for key, value in self._own_options(self._model_options(lp.num_col_)).items():
                if key != "mip_feasibility_tolerance" or key in self.params:
                    highs.setOptionValue(key, value)
            pass_as_mip(hs, highs, lp, model.integer, "the model on the exact rows")
            model.exact = highs
        return model.exact

    def _run(self, highs: Any) -> Any:
        """Run ``highs``; its model status (an "Unknown" run once more from scratch; a quick
        check's run that stopped at its node limit without a point, once more with the
        feasibility jump: see `node_limit`)."""
        run_highs(highs, self._highspy)
        status = highs.getModelStatus()
        if status == self._highspy.HighsModelStatus.kUnknown:
            # Measured on HiGHS 1.16: an LP re-solved from the basis of an unbounded one may end
            # "Unknown"; from scratch it is decided (fuzz seed 100203).
            highs.clearSolver()
            run_highs(highs, self._highspy)
            status = highs.getModelStatus()
        if (
            status == self._highspy.HighsModelStatus.kSolutionLimit
            and highs.getInfo().primal_solution_status != 2  # no point
            and id(highs) in self._jumps_off
        ):
            highs.setOptionValue(FEASIBILITY_JUMP, True)
            try:
                run_highs(highs, self._highspy)
            finally:
                highs.setOptionValue(FEASIBILITY_JUMP, False)
            status = highs.getModelStatus()
        return status

    def _exact_first(self, model: HighsModel, c: np.ndarray) -> tuple[Any, Any]:
        """A model with an unbounded integer: its MIP on the exact rows first, then, where those
        have no point on the core's terms, on the core's band within what is left of the time
        limit; ``(model status, the Highs that answered)``.

        Banded equalities are ranges, which HiGHS' presolve cannot use as equalities: they took
        many times the defaults' time, and on fractional equalities over unbounded integers HiGHS
        ran far past its time limit there where the exact rows answer at once
        (`milp_cases.lattice_case`; docs/records/solvers.md, "Lattice points"). The band stays as
        the second word: float32 data may meet an equality only within it. With HiGHS' tight
        integrality tolerance (1e-8) the exact rows' search for a lattice point did not end
        either: they take HiGHS' own, and a point of theirs counts only where it passes the
        core's answer check."""
        hs = self._highspy
        exact = self._exact_mip(model)
        assert model.batch is not None
        began = time.perf_counter()
        exact.changeColsCost(len(model.columns), model.columns, c)
        status = self._run(exact)
        if status == hs.HighsModelStatus.kOptimal:
            point = np.array(exact.getSolution().col_value)[None, :]
            if model.batch.checked_points(point)[1][0]:
                return status, exact
        elif status != hs.HighsModelStatus.kInfeasible:
            return status, exact  # unbounded, or a limit
        highs = (
            model.highs
        )  # infeasible on the exact rows, or a point off the core's terms: the band decides
        highs.changeColsCost(len(model.columns), model.columns, c)
        limit = highs.getOptionValue("time_limit")[1]  # the time limit, or the check's (inf: none)
        highs.setOptionValue("time_limit", max(limit - (time.perf_counter() - began), 1e-3))
        try:
            return self._run(highs), highs
        finally:
            highs.setOptionValue("time_limit", limit)

    def solve_instance(
        self, model: HighsModel, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        highs, columns = model.highs, model.columns
        hs = self._highspy
        entered = time.perf_counter()
        if not model.starts and c.any() and self._relaxation_unbounded(model, c):
            return infeasible_or_unbounded(self, model, len(c), time.perf_counter() - entered), None
        highs.changeColsCost(len(columns), columns, c)
        # A known feasible point (the pool's best under these costs) always becomes an
        # objective cutoff, and a MIP start only while recent starts were mostly optimal. An
        # optimal start prunes alike either way and, as a MIP start, spares HiGHS finding the
        # point. A poor MIP start makes HiGHS explore more nodes than a cold solve; a poor
        # cutoff prunes nothing and costs nothing. With a cutoff, "infeasible" means that no point beats the start.
        if not model.starts:
            start = None
        cutoff = np.inf
        if start is not None:
            start_value = float(c @ start)
            slack = CUTOFF_SLACK * max(1.0, abs(start_value))
            cutoff = start_value + slack
            if model.hit_rate >= START_HIT_RATE:
                solution = hs.HighsSolution()
                solution.col_value = start.tolist()
                solution.value_valid = True
                highs.setSolution(solution)
        if cutoff != model.cutoff:
            highs.setOptionValue("objective_bound", cutoff)
            model.cutoff = cutoff
        began = time.perf_counter()
        if model.exact_first:
            status, highs = self._exact_first(model, c)
        elif model.tuned and not model.switch.start_tuned():
            status = self._escalate(model, 0.0)  # recent instances ran past the budget: HiGHS' own
        else:
            status = self._run(highs)
            if model.tuned:
                escalated = status == hs.HighsModelStatus.kSolutionLimit
                model.switch.record(escalated)
                if escalated:
                    status = self._escalate(model, time.perf_counter() - began)
        has_point = highs.getInfo().primal_solution_status == 2  # kSolutionStatusFeasible
        y = np.array(highs.getSolution().col_value) if has_point else None
        no_point = (hs.HighsModelStatus.kInfeasible, hs.HighsModelStatus.kUnboundedOrInfeasible)
        if start is not None:
            # Nothing under the cutoff: HiGHS says infeasible or, measured on HiGHS 1.16, may
            # return "optimal" with a point above the cutoff. Either way the start is the answer.
            if y is None or float(c @ y) > cutoff:
                y = start
            start_was_optimal = float(c @ y) >= start_value - slack
            model.hit_rate += HIT_WEIGHT * (start_was_optimal - model.hit_rate)
            if status in no_point:
                return Status.OPTIMAL, y
        if status == hs.HighsModelStatus.kOptimal:
            return Status.OPTIMAL, y
        if (
            status in (hs.HighsModelStatus.kUnbounded, hs.HighsModelStatus.kUnboundedOrInfeasible)
            and not model.starts
        ):  # a finite box is never unbounded
            undecided = status == hs.HighsModelStatus.kUnboundedOrInfeasible
            spent = time.perf_counter() - entered if undecided else None
            return infeasible_or_unbounded(self, model, len(c), spent), None
        if status in no_point:
            return Status.INFEASIBLE, None
        if status in (
            hs.HighsModelStatus.kTimeLimit,
            hs.HighsModelStatus.kSolutionLimit,
        ):  # a limit stopped it
            return (
                (Status.TIME_LIMIT, y) if y is not None else (Status.TIME_LIMIT_NO_SOLUTION, None)
            )
        raise RuntimeError(f"HiGHS ended with model status {highs.modelStatusToString(status)}")

    @contextlib.contextmanager
    def node_limit(self, model: HighsModel, nodes: int, seconds: float | None = None) -> Any:
        """At most ``nodes`` branch-and-bound nodes per solve of ``model`` inside (no switch to
        HiGHS' own settings); for the core's feasibility check of an unbounded instance. Inside,
        HiGHS' feasibility-jump heuristic is off, and `_run` turns it on again only for a run
        that found no point: it was most of the check's time on small programs."""
        forms = [model.highs, self._exact_mip(model)] if model.exact_first else [model.highs]
        # The forms whose jump the check turns off (not one a user's params turned off already).
        off = [highs for highs in forms if highs.getOptionValue(FEASIBILITY_JUMP)[1]]
        for highs in off:
            highs.setOptionValue(FEASIBILITY_JUMP, False)
            self._jumps_off.add(id(highs))
        try:
            with capped_nodes(
                model,
                forms,
                lambda highs: highs.getOptionValue("mip_max_nodes")[1],
                lambda highs, value: highs.setOptionValue("mip_max_nodes", value),
                nodes,
                None if seconds is None else (_time_limit, _set_time_limit, seconds),
            ):
                yield
        finally:
            for highs in off:
                highs.setOptionValue(FEASIBILITY_JUMP, True)
                self._jumps_off.discard(id(highs))
