"""Any Pyomo MIP solver by name (``solver="pyomo:appsi_highs"``).

One Pyomo model per ``(A, b)`` with the costs as mutable parameters, and one Pyomo solver
object per model (persistent interfaces get ``set_instance`` once and ``set_objective`` per
instance). Pyomo's own overhead is a few milliseconds per instance: use a native backend when
speed matters and this bridge to reach solvers that have none.
"""

from __future__ import annotations

import fnmatch
import warnings
from typing import Any

import numpy as np

from ilplayer import Capability, ILPBatch, PersistentModelSolver, SolverNotInstalledError, Status

# Options that make a known solver exact (MIP gap 0) and single-threaded, and the name of its
# time limit option. Solvers not listed here get the user's params only (and a warning).
KNOWN_SOLVERS: dict[str, tuple[dict[str, Any], str]] = {
    "appsi_highs": ({"mip_rel_gap": 0.0, "mip_abs_gap": 0.0, "threads": 1}, "time_limit"),
    "highs": ({"mip_rel_gap": 0.0, "mip_abs_gap": 0.0, "threads": 1}, "time_limit"),
    "gurobi*": ({"MIPGap": 0.0, "MIPGapAbs": 0.0, "Threads": 1}, "TimeLimit"),
    "cplex*": ({"mip_tolerances_mipgap": 0.0, "mip_tolerances_absmipgap": 0.0, "threads": 1}, "timelimit"),
    "cbc": ({"ratioGap": 0.0, "allowableGap": 0.0, "threads": 1}, "seconds"),
    "glpk": ({"mipgap": 0.0}, "tmlim"),
    "scip": ({"limits/gap": 0.0, "limits/absgap": 0.0}, "limits/time"),
}


def _known(solver_name: str) -> tuple[dict[str, Any], str] | None:
    for pattern, entry in KNOWN_SOLVERS.items():
        if fnmatch.fnmatch(solver_name, pattern):
            return entry
    return None


class PyomoSolver(PersistentModelSolver):
    """A Pyomo solver by name, exact by default for the solvers in ``KNOWN_SOLVERS``.

    Args:
        solver_name: the ``SolverFactory`` name (what follows ``pyomo:``).
        time_limit: seconds per instance (solvers with a known time option).
        params: solver options by their native names; override the defaults.
    """

    name = "pyomo"

    def __init__(self, solver_name: str, time_limit: float | None = None,
                 params: dict[str, Any] | None = None) -> None:
        super().__init__(time_limit, params)
        import pyomo.environ as pyo

        self._pyo = pyo
        self.solver_name = solver_name
        self.name = f"pyomo:{solver_name}"
        if not pyo.SolverFactory(solver_name).available(exception_flag=False):
            raise SolverNotInstalledError(
                f"Pyomo solver {solver_name!r} is not available (its library or executable is "
                "not installed, or it has no licence)")
        known = _known(solver_name)
        capabilities = set()
        options: dict[str, Any] = {}
        if known is None:
            warnings.warn(f"ilplayer does not know the MIP-gap option of Pyomo solver "
                          f"{solver_name!r}: pass params=... to make it exact", stacklevel=2)
        else:
            options.update(known[0])
            capabilities.add(Capability.TIME_LIMIT)
            if self.time_limit is not None:
                options[known[1]] = self.time_limit
        if known is None and self.time_limit is not None:
            raise ValueError(f"time_limit: ilplayer does not know the time option of Pyomo solver "
                             f"{solver_name!r}; pass it in params")
        options.update(self.params)
        self.options = options
        self.capabilities = frozenset(capabilities | {Capability.IN_PLACE_UPDATES})

    def build_model(self, batch: ILPBatch) -> Any:
        pyo = self._pyo
        m, n = batch.A.shape
        model = pyo.ConcreteModel()
        model.I = pyo.RangeSet(0, n - 1)
        model.J = pyo.RangeSet(0, m - 1)
        bounds = {i: (int(batch.lb[i]), int(batch.ub[i])) for i in range(n)}
        model.y = pyo.Var(model.I, domain=pyo.Integers, bounds=lambda _, i: bounds[i])
        model.c = pyo.Param(model.I, mutable=True, initialize=0.0)
        A, b = batch.A, batch.b
        model.rows = pyo.Constraint(model.J, rule=lambda mdl, j: sum(
            float(A[j, i]) * mdl.y[i] for i in range(n) if A[j, i] != 0) <= float(b[j]))
        model.objective = pyo.Objective(expr=sum(model.c[i] * model.y[i] for i in model.I))
        solver = pyo.SolverFactory(self.solver_name)
        persistent = hasattr(solver, "set_instance") and hasattr(solver, "set_objective")
        if persistent:
            solver.set_instance(model)
        return model, solver, persistent

    def solve_instance(self, model: Any, c: np.ndarray) -> tuple[Status, np.ndarray | None]:
        from pyomo.opt import TerminationCondition as TC

        pyomo_model, solver, persistent = model
        for i, value in enumerate(c.tolist()):
            pyomo_model.c[i] = value
        if persistent:
            solver.set_objective(pyomo_model.objective)
        results = solver.solve(pyomo_model, load_solutions=False, options=self.options)
        condition = results.solver.termination_condition
        if condition in (TC.infeasible, TC.infeasibleOrUnbounded):  # a bounded box
            return Status.INFEASIBLE, None
        if condition not in (TC.optimal, TC.maxTimeLimit):
            raise RuntimeError(f"Pyomo solver {self.solver_name!r} ended with {condition}")
        try:
            if persistent:
                solver.load_vars()
            else:
                pyomo_model.solutions.load_from(results)
            point = np.array([self._pyo.value(pyomo_model.y[i]) for i in pyomo_model.I], dtype=float)
        except Exception:  # no incumbent to load
            point = None
        if condition == TC.optimal:
            return Status.OPTIMAL, point
        return (Status.TIME_LIMIT, point) if point is not None else (Status.TIME_LIMIT_NO_SOLUTION, None)
