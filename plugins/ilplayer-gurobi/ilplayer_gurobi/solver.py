"""Gurobi through gurobipy's matrix API: one environment per solver instance (so per thread or
worker process), one model per ``(A, b)``; only the objective changes between instances."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ilplayer.plugin_api import (
    Capability,
    ILPBatch,
    LicenseStatus,
    Multipliers,
    PersistentModelSolver,
    ProblemTensors,
    Status,
    Switch,
    block_diagonal,
    capped_nodes,
    infeasible_or_unbounded,
    multipliers_in_blocks,
    native_value,
    solve_in_blocks,
)

# Exact (gaps 0) and single-threaded. Presolve, cuts and heuristics cost more than they save on
# the tiny instances of a training batch (measured here: n = 16). IntFeasTol at its minimum:
# with the default 1e-5 a value such as 2.99999 counts as integral, and once rounded it can
# violate a dense-box row by ~1e-4 (4 of 15 600 dense [-5, 5]^16 instances here; none at 1e-9).
# Override with params=...
DEFAULT_PARAMS: dict[str, Any] = {
    "OutputFlag": 0,
    "Threads": 1,
    "MIPGap": 0.0,
    "MIPGapAbs": 0.0,
    "IntFeasTol": 1e-9,
    # The rows carry the core's tolerance (FEASIBILITY_TOL below): Gurobi's own is then kept
    # tight, as HiGHS' is. With the band and the default 1e-6, answers came back 1e-6 off an
    # integer (7 of 11 000 fuzz instances ERROR); with 1e-9, none, at the same speed.
    "FeasibilityTol": 1e-9,
    "Presolve": 0,
    "Cuts": 0,
    "Heuristics": 0.0,
}
# Gurobi's own presolve, cuts and heuristics (unless params set them) from LARGE_FROM variables
# on, where they pay (PyEPO's TSP of 20 nodes: docs/records/defaults.md, "Gurobi"), and
# on any model with an integer variable of infinite bound, where branch and bound without them
# need not end (ILPBatch.unbounded_integers; with Cuts=0 a 9-variable MILP that Gurobi's
# defaults settle at the root ran into every time limit).
LARGE_FROM = 100
OWN_DEFAULTS: dict[str, Any] = {"Presolve": -1, "Cuts": -1, "Heuristics": 0.05}
# Each instance of a model on the speed settings starts on them with a budget of ESCALATE_NODES
# branch-and-bound nodes; one that runs past it is finished on Gurobi's own presolve and cuts
# (FINISH), and the next instance starts on the speed settings again. Untrained 25-item
# knapsacks (near-equal weights and prices) ran into every time limit without cuts, where cuts
# settle them at once (Gurobi's heuristics add nothing there and slow a dense instance down).
# Kept for good, as the switch once was, a dense [-5, 5] model paid the defaults on every
# instance after its first hard one (docs/records/solvers.md, "A switch per instance").
ESCALATE_NODES = 500
FINISH: dict[str, Any] = {"Presolve": -1, "Cuts": -1}
INTEGRAL_LP_TOL = 1e-9  # an LP vertex this close to integers is taken as the MIP optimum
# The core's tolerance in the data, as in the HiGHS and SCIP plugins: rows ``A y <= b +
# FEASIBILITY_TOL``, equalities a band ``b_eq -/+ FEASIBILITY_TOL``. With rows at ``b`` and
# ``A_eq y == b_eq``, float32 data whose points met an equality within 1e-7 were INFEASIBLE or
# lost their optimum (Gurobi's own FeasibilityTol did not admit them).
FEASIBILITY_TOL = 1e-6
SIZE_LIMIT = 2000  # variables and constraints allowed by the pip wheel's restricted licence
# Relaxations asked for together are solved up to BLOCK at a time as one block-diagonal LP:
# gurobipy's fixed cost per optimize() is paid once per block (32 were slower than 16).
BLOCK = 16
_LICENSE_ERRORS = (10009, 10030, 10032)  # no licence, licence expired/invalid, version mismatch


@dataclass
class GurobiModel:
    """One constraint set's models, each made on first use: the MIP and its variables (a batch
    that its relaxations and the search answer never builds it), and the LP relaxation (exact
    rows) as ``copies`` side by side, ``(model, x, copies)``."""

    batch: ILPBatch
    own_defaults: bool  # Gurobi's own presolve, cuts and heuristics (a large or unbounded model)
    tuned: bool  # on the speed settings, each instance past ESCALATE_NODES finished on FINISH
    mip: Any = None
    x: Any = None
    block: tuple[Any, Any, int] | None = None
    # solve_relaxations' multipliers of the rows it left fractional, by their costs' bytes
    multipliers: dict[bytes, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    switch: Switch = field(default_factory=Switch)  # which settings the next instance starts on


class GurobiSolver(PersistentModelSolver):
    """Gurobi MIP. Exact, one thread, tuned for tiny instances (see ``DEFAULT_PARAMS``).

    Args:
        time_limit: seconds per instance (``Status.TIME_LIMIT`` when reached).
        params: Gurobi parameters by name, e.g. ``{"Presolve": -1}``; override the defaults.
    """

    name = "gurobi"
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
    _license: ClassVar[LicenseStatus | None] = None
    accepts_start = True

    def __init__(
        self,
        time_limit: float | None = None,
        params: dict[str, Any] | None = None,
        warm_start: bool | None = None,
    ) -> None:
        super().__init__(time_limit, params, warm_start)
        import gurobipy as gp

        self._gp = gp
        settings = {**DEFAULT_PARAMS, **self.params}
        if self.time_limit is not None:
            settings["TimeLimit"] = self.time_limit
        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        try:
            for key, value in settings.items():
                try:
                    env.setParam(key, native_value("Gurobi", key, value, env.getParam(key)))
                except (gp.GurobiError, TypeError) as exc:
                    raise ValueError(f"params: Gurobi rejected {key}={value!r}: {exc}") from exc
        except ValueError:
            env.dispose()
            raise
        env.start()  # takes the licence; a licence problem raises gurobipy's own message
        self._env: Any = env

    @classmethod
    def license_status(cls) -> LicenseStatus:
        """Starts an environment (takes a licence) and probes the size limit; cached."""
        if cls._license is None:
            import gurobipy as gp

            try:
                with gp.Env(params={"OutputFlag": 0}) as env, gp.Model(env=env) as model:
                    model.addVars(SIZE_LIMIT + 1)
                    model.optimize()
                cls._license = LicenseStatus.FULL
            except gp.GurobiError as exc:
                if exc.errno == 10010:
                    cls._license = LicenseStatus.SIZE_LIMITED
                elif exc.errno in _LICENSE_ERRORS:
                    cls._license = (
                        LicenseStatus.MISSING if exc.errno == 10009 else LicenseStatus.INVALID
                    )
                else:
                    raise
        return cls._license

    def check(self, problem: ProblemTensors) -> None:
        n, m = problem.num_variables, problem.num_constraints
        if max(n, m) > SIZE_LIMIT and self.license_status() == LicenseStatus.SIZE_LIMITED:
            raise ValueError(
                f"A: {m} constraints x {n} variables exceed Gurobi's size-limited licence (at "
                f"most {SIZE_LIMIT} variables and {SIZE_LIMIT} constraints; the licence that comes "
                "with the pip wheel). Install a full Gurobi licence or use an open-source backend."
            )

    def build_model(self, batch: ILPBatch) -> GurobiModel:
        # Only the settings here: each native model is made when first asked for. With a new
        # constraint set every step (a learned A, b) the relaxations and the search answer most
        # batches, and building the MIP too cost as much as they did (one-row knapsacks).
        own = batch.num_variables >= LARGE_FROM or batch.unbounded_integers
        # a node limit in params turns the switch off
        return GurobiModel(
            batch, own_defaults=own, tuned=not own and "NodeLimit" not in self.params
        )

    def mip_of(self, model: GurobiModel) -> Any:
        """``model``'s MIP (its variables in ``model.x``), made on first use."""
        if model.mip is not None:
            return model.mip
        gp, batch = self._gp, model.batch
        mip = gp.Model(env=self._env)
        x = mip.addMVar(
            batch.num_variables,
            lb=batch.lb,
            ub=batch.ub,
            vtype=np.where(batch.integrality, gp.GRB.INTEGER, gp.GRB.CONTINUOUS),
        )
        mip.addConstr(batch.A @ x <= batch.b + batch.row_band(FEASIBILITY_TOL))
        if batch.num_equalities:  # a band b_eq -/+ the tolerance: upper rows, then lower rows
            band = batch.row_band(FEASIBILITY_TOL, equalities=True)
            mip.addConstr(batch.A_eq @ x <= batch.b_eq + band)
            mip.addConstr(batch.A_eq @ x >= batch.b_eq - band)
        if model.own_defaults:
            self._own_defaults(mip)
        if model.tuned:
            mip.setParam("NodeLimit", ESCALATE_NODES)
        mip.update()
        model.mip, model.x = mip, x
        return mip

    def _own_defaults(self, mip: Any) -> None:
        """Gurobi's own presolve, cuts and heuristics on ``mip`` (where ``params`` leave them)."""
        for key, value in OWN_DEFAULTS.items():
            if key not in self.params:
                mip.setParam(key, value)

    def _relaxation_lp(self, batch: ILPBatch, size: int) -> tuple[Any, Any]:
        """``size`` copies of the LP relaxation side by side (block-diagonal), exact rows:
        every copy's inequalities, then every copy's equalities."""
        # Continuous columns on the exact rows, as HiGHS' relaxation has them (within the band a
        # vertex sits 1e-6 off the integers): tried first (solve_relaxation). Equalities are
        # equality rows there: as two rows each, a grid's LP was slower.
        model = self._gp.Model(env=self._env)
        x = model.addMVar(
            size * batch.num_variables, lb=np.tile(batch.lb, size), ub=np.tile(batch.ub, size)
        )
        if batch.num_constraints:
            model.addConstr(block_diagonal(batch.A, size) @ x <= np.tile(batch.b, size))
        if batch.num_equalities:
            model.addConstr(block_diagonal(batch.A_eq, size) @ x == np.tile(batch.b_eq, size))
        model.update()
        return model, x

    def dispose_model(self, model: GurobiModel) -> None:
        if model.mip is not None:
            model.mip.dispose()
        if model.block is not None:
            model.block[0].dispose()

    def _block_lp(self, model: GurobiModel, rows: int) -> tuple[Any, Any, int]:
        """``(lp, x, size)``: ``size`` copies of the relaxation side by side, enough for ``rows``
        relaxations at once up to BLOCK (and the licence's limit), made on first use and made
        again larger when a call asks for more. One LP serves every call: a new constraint set
        each step (a learned A, b) paid for a one-copy LP and a 16-copy one before."""
        batch = model.batch
        # Within the size-limited licence (variables and rows of all copies: a 10 x 10 grid's
        # blocks once overflowed it, every block LP failed and its gate closed).
        most = min(
            BLOCK,
            SIZE_LIMIT // max(batch.num_variables, batch.num_constraints + batch.num_equalities, 1),
        )
        wanted = max(min(1 << max(rows - 1, 0).bit_length(), most), 1)  # a power of two
        if model.block is None or model.block[2] < wanted:
            if model.block is not None:
                model.block[0].dispose()
            lp, x = self._relaxation_lp(batch, wanted)
            model.block = (lp, x, wanted)
        return model.block

    def solve_relaxations(self, model: GurobiModel, c: np.ndarray) -> list[np.ndarray | None]:
        # An optimal LP vertex that is integral is optimal for the MIP (same rows, same
        # tolerances): a warm re-solve of the LP costs a fraction of the MIP on a grid's
        # shortest path, and network rows always give one. The multipliers of the rows left
        # fractional are kept for the search that follows (relaxation_multipliers): it asks
        # for the same costs' LPs.
        lp, x, size = self._block_lp(model, len(c))
        n, m = c.shape[1], model.batch.num_constraints
        model.multipliers = {}

        def solve_block(costs: np.ndarray) -> Any:
            x.Obj = costs
            lp.optimize()
            return x.X if lp.Status == self._gp.GRB.OPTIMAL else None

        def keep(costs: np.ndarray, blocks: list[int]) -> None:
            duals, values = self._duals(lp, size, m), np.asarray(x.X)
            for j in blocks:
                part = slice(j * n, (j + 1) * n)
                model.multipliers[costs[part].tobytes()] = (duals[j], values[part])

        return solve_in_blocks(
            c, size, solve_block, INTEGRAL_LP_TOL, model.batch.integrality, fractional=keep
        )

    def _duals(self, lp: Any, size: int, m: int) -> np.ndarray:
        """The row multipliers of ``lp``'s ``size`` copies, ``(size, rows)``: each copy's
        inequalities, then its equalities. Gurobi's Pi is the objective's sensitivity to a
        row's right-hand side (<= 0 on a binding "<=" row of a minimisation): the multipliers
        are its negatives, an equality row's too."""
        duals = -np.asarray(lp.getAttr("Pi"))
        return np.hstack([duals[: size * m].reshape(size, m), duals[size * m :].reshape(size, -1)])

    def relaxation_multipliers(self, model: GurobiModel, c: np.ndarray) -> list[Multipliers | None]:
        # The LP duals for the core's search around a pooled start (PersistentModelSolver):
        # those solve_relaxations kept for these costs, the others solved.
        m = model.batch.num_constraints
        kept = [model.multipliers.get(row.tobytes()) for row in c]
        missing = [i for i, found in enumerate(kept) if found is None]
        found: list[Multipliers | None] = [
            None if k is None else (k[0][:m], k[0][m:], k[1]) for k in kept
        ]
        if not missing:
            return found
        lp, x, size = self._block_lp(model, len(missing))

        def solve_block(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
            x.Obj = costs
            lp.optimize()
            if lp.Status != self._gp.GRB.OPTIMAL:
                return None
            return self._duals(lp, size, m), x.X

        for i, answer in zip(missing, multipliers_in_blocks(c[missing], size, m, solve_block)):
            found[i] = answer
        return found

    def _relaxation_unbounded(self, model: GurobiModel, c: np.ndarray) -> bool:
        """Whether the LP relaxation under the costs ``c`` is unbounded (or, rows without a
        point, infeasible). Asked before the MIP of a model with an infinite bound: Gurobi 13's
        presolve called unbounded MILPs optimal at a finite objective (`ilplayer fuzz --milp`
        seeds 960450 and 961132; with presolve off it said unbounded). A feasible MILP with an
        unbounded relaxation is unbounded itself (rational data, Meyer 1974); the zero-cost
        check decides feasibility."""
        lp, x, size = self._block_lp(model, 1)
        costs = np.zeros((size, len(c)))
        costs[0] = c  # the other copies at zero costs: bounded whatever their rows
        x.Obj = costs.ravel()
        lp.optimize()
        return lp.Status in (self._gp.GRB.UNBOUNDED, self._gp.GRB.INF_OR_UNBD)

    def solve_instance(
        self, model: GurobiModel, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        grb = self._gp.GRB
        batch = model.batch
        finite = np.isfinite(batch.lb).all() and np.isfinite(batch.ub).all()  # never unbounded
        if not finite and c.any():
            began = time.perf_counter()
            if self._relaxation_unbounded(model, c):
                spent = time.perf_counter() - began
                return infeasible_or_unbounded(self, model, len(c), spent), None
        gmodel = self.mip_of(model)
        x = model.x
        if start is not None:  # a MIP start; it stays set for the solves after it
            x.Start = start
        x.Obj = c
        if model.tuned and not model.switch.start_tuned():
            self._escalate(model, 0.0)  # recent instances ran past the budget: straight to FINISH
        else:
            gmodel.optimize()
            if model.tuned:
                escalated = gmodel.getAttr("Status") == grb.NODE_LIMIT
                model.switch.record(escalated)
                if escalated:
                    self._escalate(model, gmodel.getAttr("Runtime"))
        # The model holds x's columns only, so its model-wide X is x's. Read that way, and
        # SolCount only when the status leaves it open, the reads after a solve take about half
        # the time, all of it holding the GIL that a second thread waits for.
        status = gmodel.getAttr("Status")
        has_point = status == grb.OPTIMAL or gmodel.getAttr("SolCount") > 0
        y = np.array(gmodel.getAttr("X")) if has_point else None
        if status == grb.OPTIMAL:
            return Status.OPTIMAL, y
        if status == grb.INFEASIBLE:
            return Status.INFEASIBLE, None
        if status in (grb.INF_OR_UNBD, grb.UNBOUNDED):
            return (
                Status.INFEASIBLE
                if finite
                else infeasible_or_unbounded(
                    self,
                    model,
                    len(c),
                    gmodel.getAttr("Runtime") if status == grb.INF_OR_UNBD else None,
                )
            ), None
        if status in (grb.TIME_LIMIT, grb.NODE_LIMIT):  # a limit stopped the search
            return (
                (Status.TIME_LIMIT, y) if y is not None else (Status.TIME_LIMIT_NO_SOLUTION, None)
            )
        raise RuntimeError(f"Gurobi ended with status code {status}")

    def node_limit(self, model: GurobiModel, nodes: int, seconds: float | None = None) -> Any:
        """At most ``nodes`` branch-and-bound nodes per solve of ``model`` inside (no switch to
        ``FINISH``); for the core's feasibility check of an unbounded instance."""
        return capped_nodes(
            model,
            [self.mip_of(model)],
            lambda mip: mip.getParamInfo("NodeLimit")[2],
            lambda mip, value: mip.setParam("NodeLimit", value),
            nodes,
            None
            if seconds is None
            else (
                lambda mip: mip.getParamInfo("TimeLimit")[2],
                lambda mip, value: mip.setParam("TimeLimit", value),
                seconds,
            ),
        )

    def _escalate(self, model: GurobiModel, spent: float) -> None:
        """The instance solved on ``FINISH`` (after a tuned solve past ``ESCALATE_NODES``: its
        incumbent kept) within what is left of the time limit after ``spent`` seconds, then the
        model put back on the speed settings for the next one."""
        gmodel = self.mip_of(model)
        finish = {key: value for key, value in FINISH.items() if key not in self.params}
        for key, value in finish.items():
            gmodel.setParam(key, value)
        gmodel.setParam("NodeLimit", float("inf"))
        if self.time_limit is not None:
            gmodel.setParam("TimeLimit", max(self.time_limit - spent, 0.0))
        gmodel.optimize()
        for key in finish:
            gmodel.setParam(key, DEFAULT_PARAMS[key])
        gmodel.setParam("NodeLimit", ESCALATE_NODES)
        if self.time_limit is not None:
            gmodel.setParam("TimeLimit", self.time_limit)

    def close(self) -> None:
        super().close()
        if getattr(self, "_env", None) is not None:
            self._env.dispose()
            self._env = None
