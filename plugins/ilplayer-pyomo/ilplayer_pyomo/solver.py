"""Any Pyomo MIP solver by name (``solver="pyomo:appsi_highs"``).

One Pyomo model per ``(A, b)`` with the costs as mutable parameters, and one Pyomo solver
object per model (persistent interfaces get ``set_instance`` once and ``set_objective`` per
instance). Pyomo's own overhead is a few milliseconds per instance: use a native backend when
speed matters and this bridge to reach solvers that have none.

Soundness rules, each pinned by a test:

* A row is ``OPTIMAL`` only when the termination condition is ``optimal`` *and* a value was
  loaded for every variable in this solve: values are cleared before each solve, so a failed
  load can never hand back the previous instance's point. A failed load raises with Pyomo's
  message, and the row becomes ``Status.ERROR`` with that reason.
* Pyomo calls are serialised in a process (one lock): Pyomo captures solver output by swapping
  the process-wide file descriptors (``pyomo/common/tee.py``), and two threads doing that at
  once deadlock. Process pools give real parallelism; threads are safe but serial.
* The known solvers get the tolerances and settings of the native plugins (gap 0; Gurobi's
  IntFeasTol 1e-9; HiGHS with presolve off, see docs/records/solvers.md).
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib.util
import logging
import shutil
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ilplayer.plugin_api import (
    Capability,
    ILPBatch,
    PersistentModelSolver,
    SolverNotInstalledError,
    Status,
    infeasible_or_unbounded,
    native_value,
    row_entries,
)

# Options that make a known solver exact (MIP gap 0) and single-threaded, and the name of its
# time limit option. Solvers not listed here get the user's params only (and a warning).
# The HiGHS and Gurobi entries mirror the native plugins' exactness and tolerance settings.
# Every solver gets the core's tolerance in its rows (b + ROW_TOL), as the native plugins do:
# with HiGHS' own defaults answers in the tolerance band depended on the cost vector, and
# Gurobi called float32 data INFEASIBLE whose only point met an equality pair within 1.2e-7.
_HIGHS = {
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "threads": 1,
    "presolve": "off",
    "mip_feasibility_tolerance": 1e-8,
}
# Left out (unless params set it) on a model with an integer variable of infinite bound, as the
# native plugins leave their speed settings there: without presolve branch and bound need not
# end (ILPBatch.unbounded_integers).
SPEED_OPTIONS = ("presolve",)
HIGHS_FAMILY = ("appsi_highs", "highs")
ROW_TOL = 1e-6
EQUALITY_TOL = 1e-6  # A_eq y = b_eq within the core's tolerance: float data are rarely exact
KNOWN_SOLVERS: dict[str, tuple[dict[str, Any], str]] = {
    "appsi_highs": (_HIGHS, "time_limit"),
    "highs": (_HIGHS, "time_limit"),
    "gurobi*": (
        {"MIPGap": 0.0, "MIPGapAbs": 0.0, "Threads": 1, "IntFeasTol": 1e-9, "FeasibilityTol": 1e-9},
        "TimeLimit",
    ),
    "cplex*": (
        {"mip_tolerances_mipgap": 0.0, "mip_tolerances_absmipgap": 0.0, "threads": 1},
        "timelimit",
    ),
    "cbc": ({"ratioGap": 0.0, "allowableGap": 0.0, "threads": 1}, "seconds"),
    "glpk": ({"mipgap": 0.0}, "tmlim"),
    "scip": ({"limits/gap": 0.0, "limits/absgap": 0.0}, "limits/time"),
}


def _known(solver_name: str) -> tuple[dict[str, Any], str] | None:
    for pattern, entry in KNOWN_SOLVERS.items():
        if fnmatch.fnmatch(solver_name, pattern):
            return entry
    return None


# Pyomo swaps process-wide file descriptors to capture solver output: one call at a time.
_PYOMO_LOCK = threading.RLock()


@contextlib.contextmanager
def _quiet_pyomo() -> Iterator[None]:
    logger = logging.getLogger("pyomo")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


# The Pyomo MIP solvers that ilplayer lists where usable, each with the Python module or the
# executable it needs (any other SolverFactory name may still be given). Looked up with
# find_spec and which: listing backends imports no solver library.
LISTED_SOLVERS: dict[str, tuple[str | None, str | None]] = {
    "appsi_highs": ("highspy", None),
    "highs": ("highspy", None),
    "appsi_gurobi": ("gurobipy", None),
    "gurobi_direct": ("gurobipy", None),
    "gurobi_persistent": ("gurobipy", None),
    "appsi_cplex": ("cplex", None),
    "cplex_direct": ("cplex", None),
    "cplex_persistent": ("cplex", None),
    "xpress_direct": ("xpress", None),
    "xpress_persistent": ("xpress", None),
    "mosek_direct": ("mosek", None),
    "appsi_cbc": (None, "cbc"),
    "cbc": (None, "cbc"),
    "glpk": (None, "glpsol"),
    "scip": (None, "scip"),
}


def usable_solvers() -> tuple[str, ...]:
    """The `LISTED_SOLVERS` whose module or executable is on this machine."""
    return tuple(
        name
        for name, (module, program) in LISTED_SOLVERS.items()
        if (module is None or importlib.util.find_spec(module) is not None)
        and (program is None or shutil.which(program) is not None)
    )


@dataclass
class PyomoModel:
    """One constraint set's Pyomo model and its solver (``persistent``: the solver holds the
    model), the variables in no row (``free``), the box's finite lower ends, the LP relaxation
    ``(model, solver, persistent)`` asked first where an integer is unbounded (else None), and
    the solver's options for this model."""

    pyomo: Any
    solver: Any
    persistent: bool
    free: np.ndarray
    lb: np.ndarray
    relaxation: tuple[Any, Any, bool] | None
    options: dict[str, Any]


class PyomoSolver(PersistentModelSolver):
    """A Pyomo solver by name, exact by default for the solvers in ``KNOWN_SOLVERS``.

    Args:
        solver_name: the ``SolverFactory`` name (what follows ``pyomo:``).
        time_limit: seconds per instance (solvers with a known time option).
        params: solver options by their native names; override the defaults.
    """

    name = "pyomo"
    capabilities = frozenset(
        {
            Capability.IN_PLACE_UPDATES,
            Capability.TIME_LIMIT,
            Capability.EQUALITY_CONSTRAINTS,
            Capability.CONTINUOUS_VARIABLES,
            Capability.INFINITE_BOUNDS,
        }
    )

    @classmethod
    def family_members(cls) -> tuple[str, ...]:
        return usable_solvers()

    def __init__(
        self,
        solver_name: str | None = None,
        time_limit: float | None = None,
        params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(time_limit, params)
        if not isinstance(solver_name, str) or not solver_name:
            raise ValueError(
                "solver: the Pyomo bridge needs a Pyomo solver name after the colon, "
                "e.g. solver='pyomo:appsi_highs', 'pyomo:gurobi_persistent' or "
                "'pyomo:cbc'"
            )
        import pyomo.environ as pyo

        self._pyo = pyo
        self.solver_name = solver_name
        self.name = f"pyomo:{solver_name}"  # type: ignore[misc]  # one class, a name per Pyomo solver
        with _PYOMO_LOCK, _quiet_pyomo():  # Pyomo logs a traceback for an unknown name
            factory = pyo.SolverFactory(solver_name)
        with _PYOMO_LOCK:
            available = factory.available(exception_flag=False)
        if not available:
            raise SolverNotInstalledError(
                f"Pyomo solver {solver_name!r} is not available: its library or executable is "
                "not installed, it has no licence, or Pyomo knows no solver of that name (names "
                "are those of pyomo.environ.SolverFactory, e.g. appsi_highs, gurobi_persistent, "
                "cbc, glpk)"
            )
        known = _known(solver_name)
        capabilities = set()
        options: dict[str, Any] = {}
        if known is None:
            warnings.warn(
                f"ilplayer does not know the MIP-gap option of Pyomo solver "
                f"{solver_name!r}: pass params=... to make it exact",
                stacklevel=2,
            )
        else:
            options.update(known[0])
            capabilities.add(Capability.TIME_LIMIT)
            if self.time_limit is not None:
                options[known[1]] = self.time_limit
        if known is None and self.time_limit is not None:
            raise ValueError(
                f"time_limit: ilplayer does not know the time option of Pyomo solver "
                f"{solver_name!r}; pass it in params"
            )
        options.update(self.params)
        self.options = options
        # per Pyomo solverCapability.IN_PLACE_UPDATES,
        self.capabilities = frozenset(  # type: ignore[misc]
            capabilities
            | {
                Capability.EQUALITY_CONSTRAINTS,
                Capability.CONTINUOUS_VARIABLES,
                Capability.INFINITE_BOUNDS,
            }
        )
        if self.params:
            self._check_params(factory)

    def _check_params(self, factory: Any) -> None:
        """Refuse an unknown option name or a bad value now, with the solver's message, rather
        than failing every instance (or, as some interfaces do, ignoring it silently). HiGHS and
        Gurobi options are checked by their own libraries; others by a one-variable solve."""
        if self.solver_name in HIGHS_FAMILY:
            import highspy

            probe = highspy.Highs()
            probe.setOptionValue("output_flag", False)
            for key, value in self.params.items():
                found, current = probe.getOptionValue(key)
                if found != highspy.HighsStatus.kOk:
                    raise ValueError(
                        f"params: HiGHS rejected option {key}={value!r}: HiGHS has no option "
                        "of that name"
                    )
                self.options[key] = value = native_value("HiGHS", key, value, current)
                if probe.setOptionValue(key, value) != highspy.HighsStatus.kOk:
                    raise ValueError(
                        f"params: HiGHS rejected option {key}={value!r}: a value out of its range"
                    )
            return
        if fnmatch.fnmatch(self.solver_name, "gurobi*"):
            import gurobipy as gp

            with gp.Env(empty=True) as env:
                env.setParam("OutputFlag", 0)
                for key, value in self.params.items():
                    try:
                        self.options[key] = native_value("Gurobi", key, value, env.getParam(key))
                        env.setParam(key, self.options[key])
                    except (gp.GurobiError, TypeError) as exc:
                        raise ValueError(f"params: Gurobi rejected {key}={value!r}: {exc}") from exc
            return
        pyo = self._pyo
        probe = pyo.ConcreteModel()
        probe.y = pyo.Var(domain=pyo.Binary)
        probe.objective = pyo.Objective(expr=probe.y)
        try:
            with _PYOMO_LOCK, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                factory.solve(probe, options=dict(self.options), load_solutions=False)
        except Exception as exc:
            raise ValueError(
                f"params: Pyomo solver {self.solver_name!r} rejected the options "
                f"{sorted(self.params)}: {type(exc).__name__}: {exc}"
            ) from exc

    def solve(self, batch: ILPBatch) -> Any:
        with _PYOMO_LOCK:
            return super().solve(batch)

    def build_model(self, batch: ILPBatch) -> PyomoModel:
        pyo = self._pyo
        m, n = batch.A.shape
        model = pyo.ConcreteModel()
        model.I = pyo.RangeSet(0, n - 1)
        model.J = pyo.RangeSet(0, m - 1)
        bound = lambda value: float(value) if np.isfinite(value) else None  # None: infinite
        bounds = {i: (bound(batch.lb[i]), bound(batch.ub[i])) for i in range(n)}
        integer = batch.integrality
        model.y = pyo.Var(
            model.I,
            domain=lambda _, i: pyo.Integers if integer[i] else pyo.Reals,
            bounds=lambda _, i: bounds[i],
        )
        model.c = pyo.Param(model.I, mutable=True, initialize=0.0)
        rows, b = (
            list(row_entries(batch.A)),
            batch.b + batch.row_band(ROW_TOL),
        )  # non-zeros, dense or sparse
        terms = lambda mdl, columns, values: sum(
            float(a) * mdl.y[int(i)] for i, a in zip(columns, values)
        )
        model.rows = pyo.Constraint(
            model.J, rule=lambda mdl, j: terms(mdl, *rows[j]) <= float(b[j])
        )
        rows_eq, b_eq, tol = (
            list(row_entries(batch.A_eq)),
            batch.b_eq,
            batch.row_band(EQUALITY_TOL, equalities=True),
        )
        model.K = pyo.RangeSet(0, len(b_eq) - 1)
        model.equalities = pyo.Constraint(
            model.K,
            rule=lambda mdl, k: pyo.inequality(
                float(b_eq[k] - tol[k]), terms(mdl, *rows_eq[k]), float(b_eq[k] + tol[k])
            ),
        )
        model.objective = pyo.Objective(expr=sum(model.c[i] * model.y[i] for i in model.I))
        solver, persistent = self._attach(model)
        relaxation = None
        if integer.any() and not (np.isfinite(batch.lb).all() and np.isfinite(batch.ub).all()):
            # The LP relaxation, asked before the MIP (see _relaxation_unbounded).
            relaxed = model.clone()
            for var in relaxed.y.values():
                var.domain = pyo.Reals
            relaxation = (relaxed, *self._attach(relaxed))
        # A variable in no row and with cost 0 never reaches the solver (Pyomo drops zero
        # terms), so it gets no value; every box value is optimal for it: take its lower bound
        # (the box's point closest to 0 where that is -inf).
        free = np.ones(n, dtype=bool)  # in no row
        for columns, _ in rows + rows_eq:
            free[columns] = False
        options = self.options
        if batch.unbounded_integers:
            options = {
                key: value
                for key, value in options.items()
                if key not in SPEED_OPTIONS or key in self.params
            }
        return PyomoModel(
            model, solver, persistent, free, batch.finite_lower(), relaxation, options
        )

    def _attach(self, model: Any) -> tuple[Any, bool]:
        """A solver for ``model``, and whether it is persistent (holds the model, set once)."""
        solver = self._pyo.SolverFactory(self.solver_name)
        persistent = hasattr(solver, "set_instance") and hasattr(solver, "set_objective")
        if persistent:
            solver.set_instance(model)
        return solver, persistent

    def _run(
        self,
        pyomo_model: Any,
        solver: Any,
        persistent: bool,
        c: np.ndarray,
        options: dict[str, Any] | None = None,
    ) -> Any:
        """Solve ``pyomo_model`` under the costs ``c`` (with ``options``, by default the
        solver's), its solution not loaded."""
        for i, value in enumerate(c.tolist()):
            pyomo_model.c[i] = value
        for var in pyomo_model.y.values():  # no stale point can pass for this instance's
            var.set_value(None, skip_validation=True)
        if persistent:
            solver.set_objective(pyomo_model.objective)
        return solver.solve(
            pyomo_model, load_solutions=False, options=self.options if options is None else options
        )

    def _relaxation_unbounded(self, relaxation: Any, c: np.ndarray) -> bool:
        """Whether the LP relaxation under the costs ``c`` is unbounded (or unbounded or
        infeasible). Asked before the MIP of a model with an infinite bound: HiGHS 1.16's branch
        and bound (appsi_highs here too) ran for minutes without end on an unbounded MILP whose
        relaxation it settles at once (fuzz seed 200579). A feasible MILP with an unbounded
        relaxation is unbounded itself (rational data, Meyer 1974)."""
        from pyomo.opt import TerminationCondition as TC

        relaxed, solver, persistent = relaxation
        condition = self._run(relaxed, solver, persistent, c).solver.termination_condition
        return condition in (TC.infeasibleOrUnbounded, TC.unbounded)

    def solve_instance(
        self, model: PyomoModel, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        from pyomo.opt import TerminationCondition as TC

        pyomo_model, solver, persistent, relaxation, options = (
            model.pyomo,
            model.solver,
            model.persistent,
            model.relaxation,
            model.options,
        )
        free, lb = model.free, model.lb
        if relaxation is not None and c.any() and self._relaxation_unbounded(relaxation, c):
            return infeasible_or_unbounded(self, model, len(c)), None
        results = self._run(pyomo_model, solver, persistent, c, options)
        condition = results.solver.termination_condition
        if condition == TC.unknown and persistent:
            # Measured with appsi_highs (HiGHS 1.16): an LP re-solved from the basis of an
            # unbounded one may end "unknown"; a fresh solver decides it (fuzz seed 300188).
            solver, persistent = self._attach(pyomo_model)
            results = self._run(pyomo_model, solver, persistent, c, options)
            condition = results.solver.termination_condition
        if condition == TC.infeasible:
            return Status.INFEASIBLE, None
        if condition in (TC.infeasibleOrUnbounded, TC.unbounded):
            bounds = [var.bounds for var in pyomo_model.y.values()]
            if all(low is not None and high is not None for low, high in bounds):  # never unbounded
                return Status.INFEASIBLE, None
            return infeasible_or_unbounded(self, model, len(c)), None
        if condition not in (TC.optimal, TC.maxTimeLimit):
            raise RuntimeError(f"Pyomo solver {self.solver_name!r} ended with {condition}")
        point = self._load(
            pyomo_model,
            solver,
            results,
            required=condition == TC.optimal,
            unused=free & (c == 0),
            lb=lb,
        )
        if condition == TC.optimal:
            return Status.OPTIMAL, point
        return (
            (Status.TIME_LIMIT, point)
            if point is not None
            else (Status.TIME_LIMIT_NO_SOLUTION, None)
        )

    def _load(
        self,
        pyomo_model: Any,
        solver: Any,
        results: Any,
        required: bool,
        unused: np.ndarray,
        lb: np.ndarray,
    ) -> np.ndarray | None:
        """The solution of this solve, or None (time limit without incumbent). Raises when an
        optimal solve's point cannot be loaded: never OPTIMAL without one."""
        try:
            if hasattr(solver, "load_vars"):  # persistent interfaces (classic and APPSI)
                solver.load_vars()
            else:
                pyomo_model.solutions.load_from(results)
            values = [
                lb[i] if var.value is None and unused[i] else var.value
                for i, var in enumerate(pyomo_model.y.values())
            ]
            if any(value is None for value in values):
                raise RuntimeError("some variables have no value")
        except Exception as exc:
            if not required:
                return None
            raise RuntimeError(
                f"Pyomo solver {self.solver_name!r} reported an optimal solve but "
                f"its solution could not be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        return np.array(values, dtype=np.float64)
