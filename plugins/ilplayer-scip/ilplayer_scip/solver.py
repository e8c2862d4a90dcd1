"""SCIP through PySCIPOpt: one ``Model`` per ``(A, b)`` (built once: building costs more than a solve), reset
with ``freeTransform`` between instances; the solve releases the GIL (``optimizeNogil``)."""

from __future__ import annotations

import contextlib
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ilplayer.plugin_api import (
    Capability,
    ILPBatch,
    Multipliers,
    ParameterError,
    PersistentModelSolver,
    Status,
    Switch,
    capped_nodes,
    in_turns,
    infeasible_or_unbounded,
    multipliers_in_blocks,
    native_value,
    row_entries,
)

# Exact (gaps 0). Presolve and separation off: cheaper on tiny instances. Heuristics at
# "fast": they find the incumbent that prunes most of the tree ("default" finds as much but
# costs more; docs/records/defaults.md, "SCIP"). Pseudo-cost
# branching (no strong branching), no symmetry handling, no conflict analysis: each pays off
# only on models far larger than a training instance. benchmarks/tuning.py measures them;
# the fuzz oracle checks the answers. Override with params={"presolving/maxrounds": -1}.
# The core's tolerance goes in the data, as in the HiGHS plugin: rows ``A y <= b +
# FEASIBILITY_TOL``, equalities a band ``b_eq -/+ FEASIBILITY_TOL``. SCIP's own feastol (1e-9
# below) then only decides integrality. With rows at ``b`` alone, float32 data whose equality
# pairs met within 7.5e-9 (feasible for the core and every other backend) were INFEASIBLE.
FEASIBILITY_TOL = 1e-6
DEFAULT_PARAMS: dict[str, Any] = {
    "limits/gap": 0.0,
    "limits/absgap": 0.0,
    "presolving/maxrounds": 0,
    "heuristics/emphasis": "fast",
    "separating/emphasis": "off",
    "branching/pscost/priority": 100000,
    "misc/usesymmetry": 0,
    "conflict/enable": False,
    # SCIP's one tolerance for rows and integrality: at its default 1e-6 an answer could sit
    # 1e-6 off an integer inside an equality's band, which the core refuses (same speed).
    "numerics/feastol": 1e-9,
}
# The speed settings above, left at SCIP's own defaults (unless params set them) on a model with
# an integer variable of infinite bound: without presolve and separation branch and bound need
# not end there (ILPBatch.unbounded_integers: a 9-variable MILP SCIP's defaults settle at the
# root ran into every time limit).
SPEED_PARAMS = (
    "presolving/maxrounds",
    "heuristics/emphasis",
    "separating/emphasis",
    "branching/pscost/priority",
    "misc/usesymmetry",
    "conflict/enable",
)
# On such a model SCIP's search is erratic in the rows' sides: on held-out parity slabs the
# banded rows and the exact ones each ran into the time limit where the other answered at
# once. Both are tried in turn, the exact rows first, each try's time limit twice the last
# one's, starting here (docs/records/solvers.md, "Unbounded integers and the speed settings").
FIRST_SLICE = 0.05
# Each instance of a model on the speed settings starts on them with a budget of ESCALATE_NODES
# branch-and-bound nodes; one that runs past it is solved on a second model of the same rows on
# SCIP's own settings (SPEED_PARAMS at its defaults; built on first use, kept beside the tuned
# one), and the next instance starts on the speed settings again. Untrained 25-item knapsacks
# (near-equal weights and prices: bounded binaries) ran into every time limit with the speed
# settings (docs/records/solvers.md, "When the tuning does not pay"). Kept for good, as the
# switch once was, a dense [-5, 5] model paid the defaults on every instance after its first
# hard one (docs/records/solvers.md, "A switch per instance").
ESCALATE_NODES = 500


@dataclass
class ScipModel:
    """One constraint set's models: SCIP's on the banded rows (its variables ``y`` and their
    terms), the same on the exact rows for models with an unbounded integer (made on first
    use: ``(scip, y, terms)``) and the LP relaxation in SoPlex (made on first use)."""

    scip: Any
    y: list[Any]
    terms: list[Any]
    batch: ILPBatch
    lp: Any = None
    exact: tuple[Any, list[Any], list[Any]] | None = None
    tuned: bool = True  # on the speed settings; an instance past ESCALATE_NODES solved on ``own``
    own: tuple[Any, list[Any], list[Any]] | None = None  # the banded rows on SCIP's own settings
    switch: Switch = field(default_factory=Switch)  # which settings the next instance starts on
    check_seconds: float | None = None  # inside the feasibility check: its time limit (node_limit)


def _free_model(model: ScipModel) -> None:
    """Free a constraint set's SCIP models and its LP relaxation."""
    model.lp = None
    for other in (model.exact, model.own):
        if other is not None:
            other[0].freeProb()
    model.exact = model.own = None
    model.scip.freeProb()


def _free_models(models: Any) -> None:
    """Free every model of a solver that is being collected, or still alive when the interpreter
    exits: PySCIPOpt's ``LP`` freed after its module was torn down printed "Exception ignored
    in: 'pyscipopt.scip.LP.__dealloc__'" at the exit of every script that kept a SCIP layer to
    the end."""
    while models:
        _free_model(models.popitem()[1])


class ScipSolver(PersistentModelSolver):
    """SCIP MIP (open source). Exact, single-threaded, releases the GIL while solving.

    Args:
        time_limit: seconds per instance (``Status.TIME_LIMIT`` when reached).
        params: SCIP parameters by name, e.g. ``{"limits/nodes": 1000}``. The ``*/emphasis``
            entries take "default", "aggressive", "fast" or "off".
    """

    name = "scip"
    # The feasibility check's least time limit (escalation.check_seconds): each SCIP solve
    # transforms and presolves the model anew, several times the others' fixed cost.
    check_min_seconds = 0.02
    solves_relaxations = False
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
        import pyscipopt

        self._scip = pyscipopt
        self.settings = {**DEFAULT_PARAMS, **self.params}
        if self.time_limit is not None:
            self.settings["limits/time"] = self.time_limit
        self._configure(pyscipopt.Model())  # validate names and values up front
        weakref.finalize(self, _free_models, self._models)

    def _configure(self, model: Any, tuned: bool = True, exact_rows: bool = False) -> None:
        """Set ``model``'s parameters; ``tuned=False`` leaves SPEED_PARAMS at SCIP's defaults,
        ``exact_rows`` its feasibility tolerance too (unless ``params`` set them)."""
        setting = self._scip.SCIP_PARAMSETTING
        emphasis = {
            "default": setting.DEFAULT,
            "aggressive": setting.AGGRESSIVE,
            "fast": setting.FAST,
            "off": setting.OFF,
        }
        model.hideOutput()
        for key, value in self.settings.items():
            if key not in self.params and (
                (not tuned and key in SPEED_PARAMS) or (exact_rows and key == "numerics/feastol")
            ):
                continue
            try:
                if key.endswith("/emphasis"):
                    group = key.split("/")[0]
                    {
                        "heuristics": model.setHeuristics,
                        "separating": model.setSeparating,
                        "presolving": model.setPresolve,
                    }[group](emphasis[value])
                else:
                    model.setParam(key, native_value("SCIP", key, value, model.getParam(key)))
            except ParameterError:
                raise
            except (KeyError, LookupError, ValueError, TypeError) as exc:
                raise ValueError(f"params: SCIP rejected {key}={value!r}: {exc}") from exc

    def build_model(self, batch: ILPBatch) -> ScipModel:
        # A node limit in params keeps the speed settings but turns the switch to SCIP's own off.
        escalates = not batch.unbounded_integers and "limits/nodes" not in self.params
        return ScipModel(*self._scip_model(batch, banded=True), batch, tuned=escalates)

    def _scip_model(
        self, batch: ILPBatch, banded: bool, tuned: bool | None = None
    ) -> tuple[Any, list[Any], list[Any]]:
        """A SCIP model of ``batch``'s rows, within the core's band (``banded``) or exact (then
        with SCIP's own kind of feasibility tolerance, relative, as SCIP's defaults solve the
        user's rows, scaled so that it admits no more than the band); on the
        speed settings with ``tuned`` (default: unless an integer variable is unbounded), then
        stopping at ``ESCALATE_NODES``."""
        scip = self._scip
        model = scip.Model()
        tuned = not batch.unbounded_integers if tuned is None else tuned
        self._configure(model, tuned=tuned, exact_rows=not banded)
        if not banded and "numerics/feastol" not in self.params:
            # SCIP's tolerance is relative to a row's side: at its default 1e-6 an exact
            # equality of side 6.6 was met only within 6.6e-6, past the band every other
            # backend keeps (fuzz --milp seeds 970368, 970910). Scaled to the largest side, the
            # exact rows hold within the core's tolerance absolutely.
            sides = np.abs(np.concatenate([batch.b, batch.b_eq, [1.0]]))
            model.setParam("numerics/feastol", max(FEASIBILITY_TOL / sides.max(), 1e-9))
        if tuned and "limits/nodes" not in self.params:
            model.setParam("limits/nodes", ESCALATE_NODES)
        # PySCIPOpt takes None for an infinite bound.
        bound = lambda value: float(value) if np.isfinite(value) else None
        y = [
            model.addVar(vtype="I" if integer else "C", lb=bound(l), ub=bound(u))
            for l, u, integer in zip(batch.lb, batch.ub, batch.integrality)
        ]
        linear = lambda columns, values: scip.quicksum(
            float(a) * y[j] for j, a in zip(columns, values)
        )
        band = batch.row_band(FEASIBILITY_TOL) if banded else np.zeros(len(batch.b))
        for (columns, values), side in zip(row_entries(batch.A), batch.b + band):
            model.addCons(linear(columns, values) <= float(side))
        band_eq = batch.row_band(FEASIBILITY_TOL, equalities=True)  # a band b_eq -/+ tol
        for (columns, values), side, width in zip(row_entries(batch.A_eq), batch.b_eq, band_eq):
            expression = linear(columns, values)
            if banded:
                model.addCons(expression >= float(side - width))
                model.addCons(expression <= float(side + width))
            else:
                model.addCons(expression == float(side))
        return model, y, [scip.scip.Term(v) for v in y]

    def dispose_model(self, model: ScipModel) -> None:
        _free_model(model)

    def _relaxation(self, model: ScipModel) -> Any:
        """The model's LP relaxation in SoPlex (PySCIPOpt's LP, no SCIP around it), made once."""
        batch = model.batch
        if model.lp is None:
            model.lp = lp = self._scip.LP(sense="minimize")
            lp.addCols(
                [[]] * batch.num_variables,
                objs=[0.0] * batch.num_variables,
                lbs=batch.lb.astype(float).tolist(),
                ubs=batch.ub.astype(float).tolist(),
            )
            # The exact rows, as HiGHS' relaxation has them: within the band a vertex sits 1e-6
            # off the integers, and the duals certify the exact LP.
            entries = lambda columns, values: [(int(j), float(a)) for j, a in zip(columns, values)]
            for (columns, values), bound in zip(row_entries(batch.A), batch.b):
                lp.addRow(entries(columns, values), lhs=-lp.infinity(), rhs=float(bound))
            for (columns, values), bound in zip(row_entries(batch.A_eq), batch.b_eq):
                lp.addRow(entries(columns, values), lhs=float(bound), rhs=float(bound))
        return model.lp

    def _relaxation_unbounded(self, model: ScipModel, c: np.ndarray) -> bool:
        """Whether the LP relaxation under the costs ``c`` is unbounded. Asked before the MIP
        of a model with an infinite bound: SCIP searched without end for a point of an
        unbounded MILP (fuzz seed 200115) whose relaxation SoPlex settles at once. A feasible
        MILP with an unbounded relaxation is unbounded itself (rational data, Meyer 1974); the
        zero-cost check decides feasibility."""
        lp = self._relaxation(model)
        for j, value in enumerate(c.tolist()):
            lp.chgObj(j, value)
        try:
            lp.solve()
        except Exception:  # "error in LP solver" on some free-variable LPs: let SCIP's MIP decide
            model.lp = None  # built afresh on next use
            return False
        # SoPlex reports an unbounded LP as neither primal nor dual feasible, with a primal ray
        return not lp.isOptimal() and lp.getPrimalRay() is not None

    def relaxation_multipliers(self, model: ScipModel, c: np.ndarray) -> list[Multipliers | None]:
        # A SCIP solve has a fixed cost far above an LP re-solve; SoPlex re-solves the LP
        # relaxation from its last basis (PySCIPOpt's LP, no SCIP around it). With the duals
        # and the LP optimum the core's search answers most instances without the MIP.
        batch = model.batch
        lp = self._relaxation(model)

        def solve_one(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
            for j, value in enumerate(costs.tolist()):
                lp.chgObj(j, value)
            lp.solve()
            if not lp.isOptimal():
                return None
            # SoPlex's duals are the objective's sensitivity to the row sides: <= 0 on a binding
            # "<=" row of a minimisation, so the multipliers are their negatives.
            return -np.asarray(lp.getDual())[None, :], np.asarray(lp.getPrimal())

        return multipliers_in_blocks(c, 1, batch.num_constraints, solve_one)

    @staticmethod
    def _to_problem_stage(scip_model: Any) -> None:
        if scip_model.getStage() != 1:  # SCIP_STAGE_PROBLEM: objective and starts may change
            scip_model.freeTransform()

    def _optimize(
        self,
        scip_model: Any,
        y: list[Any],
        terms: list[Any],
        c: np.ndarray,
        start: np.ndarray | None,
        limit: float | None = None,
    ) -> tuple[str, np.ndarray | None, bool]:
        """One SCIP solve under the costs ``c`` (and ``limit`` seconds, when given): its status,
        its best point (None: none found) and whether it ended without a dual bound."""
        self._begin(scip_model, y, terms, c, start)
        if limit is not None:
            scip_model.setParam("limits/time", limit)
        try:
            return self._run(scip_model, y)
        finally:
            scip_model.freeTransform()  # back to the problem stage for the next start and costs

    def _begin(
        self,
        scip_model: Any,
        y: list[Any],
        terms: list[Any],
        c: np.ndarray,
        start: np.ndarray | None,
    ) -> None:
        """The costs ``c`` and the ``start`` set on a model in the problem stage."""
        self._to_problem_stage(scip_model)
        scip_model.setObjective(self._scip.Expr(dict(zip(terms, c.tolist()))))
        if start is not None:
            sol = scip_model.createSol()
            for var, value in zip(y, start.tolist()):
                scip_model.setSolVal(sol, var, value)
            scip_model.addSol(sol, free=True)

    def _run(self, scip_model: Any, y: list[Any]) -> tuple[str, np.ndarray | None, bool]:
        """The solve begun (or stopped at its time limit) taken on to its limits."""
        scip_model.optimizeNogil()
        status = scip_model.getStatus()
        # With no dual bound, SCIP may stop at its gap limit on an unbounded program
        # ("gaplimit" with a primal bound of 1e5 and a dual bound of -infinity).
        no_bound = scip_model.getDualbound() <= -scip_model.infinity()
        point = None
        if scip_model.getNSols() > 0:
            best = scip_model.getBestSol()
            point = np.array([scip_model.getSolVal(best, v) for v in y])
        return status, point, no_bound

    def _race(
        self, model: ScipModel, c: np.ndarray, start: np.ndarray | None
    ) -> tuple[str, np.ndarray | None, bool]:
        """The exact rows (as SCIP's defaults see them) and the banded ones in turn (see
        FIRST_SLICE), until one answers or the time limit is spent; a time-limit status keeps
        the best point found. Each form's search goes on where its last turn stopped (SCIP
        resumes a solve at a higher time limit): begun anew each turn, the turns had cost
        several times the better form's own time (docs/records/solvers.md, "SCIP's turns
        resume their searches")."""
        if model.exact is None:
            model.exact = self._scip_model(model.batch, banded=False)
        forms = [model.exact, (model.scip, model.y, model.terms)]
        best: list[np.ndarray | None] = [None]

        def on(form: tuple[Any, list[Any], list[Any]]) -> Any:
            scip_model, y, terms = form
            given = [0.0]  # the form's time limit so far, all its turns together

            def attempt(limit: float) -> tuple[bool, tuple[str, np.ndarray | None, bool]]:
                if not given[0]:
                    self._begin(scip_model, y, terms, c, start)
                given[0] += limit
                scip_model.setParam("limits/time", given[0])
                status, point, no_bound = self._run(scip_model, y)
                if status != "timelimit":
                    return True, (status, point, no_bound)
                if point is not None and (best[0] is None or c @ point < c @ best[0]):
                    best[0] = point
                return False, (status, best[0], no_bound)

            return attempt

        limits = [x for x in (self.time_limit, model.check_seconds) if x is not None]
        before = [form[0].getParam("limits/time") for form in forms]
        try:
            return in_turns(
                [on(form) for form in forms], min(limits) if limits else None, FIRST_SLICE
            )
        finally:
            for (scip_model, _, _), limit in zip(forms, before):
                self._to_problem_stage(scip_model)
                scip_model.setParam("limits/time", limit)

    def _escalate(
        self, model: ScipModel, c: np.ndarray, start: np.ndarray | None, spent: float
    ) -> tuple[str, np.ndarray | None, bool]:
        """The instance solved from ``start`` (after a tuned solve past ``ESCALATE_NODES``: the
        best point so far) on the constraint set's model on SCIP's own settings, within what is
        left of the time limit after ``spent`` seconds."""
        if model.own is None:
            model.own = self._scip_model(model.batch, banded=True, tuned=False)
        limit = None if self.time_limit is None else max(self.time_limit - spent, 1e-3)
        found = self._optimize(*model.own, c, start, limit)
        if limit is not None:
            model.own[0].setParam("limits/time", self.time_limit)
        return found

    def solve_instance(
        self, model: ScipModel, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        batch = model.batch
        finite = bool(
            np.isfinite(batch.lb).all() and np.isfinite(batch.ub).all()
        )  # never unbounded
        entered = time.perf_counter()
        if not finite and c.any() and self._relaxation_unbounded(model, c):
            return infeasible_or_unbounded(self, model, len(c), time.perf_counter() - entered), None
        if batch.unbounded_integers:
            status, point, no_bound = self._race(model, c, start)
        else:  # the start is added once the objective is the instance's own
            began = time.perf_counter()
            if (
                model.tuned and not model.switch.start_tuned()
            ):  # recent instances ran past the budget
                status, point, no_bound = self._escalate(model, c, start, 0.0)
            else:
                status, point, no_bound = self._optimize(model.scip, model.y, model.terms, c, start)
                if model.tuned:
                    model.switch.record(status == "nodelimit")
                    if status == "nodelimit":
                        status, point, no_bound = self._escalate(
                            model, c, start if point is None else point, time.perf_counter() - began
                        )
        if status == "optimal":
            return Status.OPTIMAL, point
        if status == "infeasible":
            return Status.INFEASIBLE, None
        if status in ("inforunbd", "unbounded") or (status == "gaplimit" and no_bound):
            return (
                Status.INFEASIBLE
                if finite
                else infeasible_or_unbounded(
                    self,
                    model,
                    len(c),
                    time.perf_counter() - entered if status == "inforunbd" else None,
                )
            ), None
        if status in ("timelimit", "nodelimit"):  # a limit stopped the search
            return (
                (Status.TIME_LIMIT, point)
                if point is not None
                else (Status.TIME_LIMIT_NO_SOLUTION, None)
            )
        raise RuntimeError(f"SCIP ended with status {status!r}")

    @contextlib.contextmanager
    def node_limit(self, model: ScipModel, nodes: int, seconds: float | None = None) -> Any:
        """At most ``nodes`` branch-and-bound nodes (and ``seconds``) per solve of ``model``
        inside (no switch to SCIP's own settings); for the core's feasibility check of an
        unbounded instance."""
        if model.batch.unbounded_integers and model.exact is None:
            model.exact = self._scip_model(model.batch, banded=False)
        forms = [form[0] for form in ((model.scip,), model.exact) if form is not None]
        for scip_model in forms:
            self._to_problem_stage(scip_model)
        times = (
            None
            if seconds is None
            else (
                lambda scip_model: scip_model.getParam("limits/time"),
                lambda scip_model, value: scip_model.setParam("limits/time", value),
                seconds,
            )
        )
        model.check_seconds = seconds
        try:
            with capped_nodes(
                model,
                forms,
                lambda scip_model: scip_model.getParam("limits/nodes"),
                lambda scip_model, value: scip_model.setParam("limits/nodes", value),
                nodes,
                times,
            ):
                yield
        finally:
            model.check_seconds = None
