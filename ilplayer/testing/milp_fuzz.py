"""Fuzzing the mixed-integer backends against ``scipy.optimize.milp``.

`milp_case` draws seeded random mixed-integer programs: integer and continuous variables
(also all continuous, the LP), finite, half-infinite and free bounds (fractional on the
continuous variables), random and integer rows, equalities, infeasible right-hand sides and
costs that leave an instance unbounded. The box is not enumerable, so the oracle is scipy's
MILP solver with a zero gap, run twice per cost vector as a tolerance band: ``strict`` on the
exact rows and ``loose`` on rows relaxed by the backends' own 1e-6 (``b + 1e-6``, equalities
``b_eq -/+ 1e-6``). A correct backend returns

* ``OPTIMAL`` with an objective between ``loose`` and ``strict`` (within 1e-6 relative) when
  the instance is feasible; ``INFEASIBLE`` only when the strict problem is; ``UNBOUNDED``
  exactly when the instance is. The oracle first decides feasibility with zero costs (never
  unbounded), then solves with the costs: a solver's "unbounded" may speak of its relaxation's
  ray alone, and "infeasible" from scipy's presolve was seen on an unbounded LP.

An ``OPTIMAL`` answer below ``loose`` whose point meets the rows within the band, the bounds
and the integrality is a certificate against the oracle, not a wrong answer: ``"beats-oracle"``
(scipy's HiGHS missed an optimum Gurobi and ilplayer's warm start found: case 991008).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.core.records import Status
from ilplayer.core.silence import quiet_stdout
from ilplayer.errors import SolverFailureWarning
from ilplayer.solvers.contract import Solver
from ilplayer.testing.fuzz import FuzzReport
from ilplayer.testing.milp_cases import (
    MilpCase,
)

__all__ = [
    "MilpOracle",
    "fuzz_milp_backend",
    "judge_milp",
    "milp_oracle",
    "save_milp_reproducer",
    "solve_milp_case",
]

BAND = 1e-6  # the backends' tolerance in the rows
OBJECTIVE_TOL = 1e-6
# Branch and bound need not end on integer variables without bounds (an integer row with real
# coefficients that no lattice point meets: seed 200949 ran for minutes in scipy's HiGHS, whose
# time limit it overran 4-fold; the node limit stops it in a second). Past either limit the
# oracle says "unknown" and the backends are not asked.
ORACLE_SECONDS = 10.0
ORACLE_NODES = 20_000


@dataclass(frozen=True)
class MilpOracle:
    """Per cost vector: ``status`` ("optimal", "infeasible", "unbounded" or "unknown") of the
    strict problem, and the ``strict`` and ``loose`` optima (NaN where there is none)."""

    status: list[str]
    strict: np.ndarray
    loose: np.ndarray
    loose_status: list[str]


def _scipy_solve(case: MilpCase, c: np.ndarray, band: float) -> tuple[str, float]:
    """scipy's status and optimum for the costs ``c``, the rows relaxed by ``band``.

    Feasibility is decided with zero costs (never unbounded); then boundedness by the LP
    relaxation: with rational data a feasible MILP is unbounded exactly when its relaxation is
    (Meyer, 1974). scipy's MILP alone was wrong both ways here: with presolve it called
    unbounded programs infeasible (seed 85), without it it returned an "optimum" of programs
    whose relaxation is unbounded (seed 100338; Gurobi agrees that they are unbounded).
    Presolve stays off: its answers on these tiny programs were the unreliable ones.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    constraints = []
    if len(case.b):
        constraints.append(LinearConstraint(case.A, -np.inf, case.b + band))
    if len(case.b_eq):
        constraints.append(LinearConstraint(case.A_eq, case.b_eq - band, case.b_eq + band))
    run = lambda costs: milp(
        costs,
        constraints=constraints,
        integrality=case.integrality.astype(int),
        bounds=Bounds(case.lb, case.ub),
        options={
            "mip_rel_gap": 0.0,
            "presolve": False,
            "time_limit": ORACLE_SECONDS,
            "node_limit": ORACLE_NODES,
        },
    )
    feasible = run(np.zeros_like(c))
    if feasible.status == 2:
        return "infeasible", math.nan
    if feasible.status != 0:
        return "unknown", math.nan
    relaxation = _relaxation(case, c, band)
    if relaxation.status == 3:
        return "unbounded", math.nan
    result = run(c)
    if result.status == 0 and relaxation.status == 0:
        return "optimal", float(result.fun)
    return "unknown", math.nan


def _relaxation(case: MilpCase, c: np.ndarray, band: float) -> Any:
    """The LP relaxation (presolve off), its rows relaxed by ``band`` (equalities as a band)."""
    from scipy.optimize import linprog

    rows = [(case.A, case.b + band)]
    if len(case.b_eq):
        rows += [(case.A_eq, case.b_eq + band), (-case.A_eq, -(case.b_eq - band))]
    A = np.vstack([r for r, _ in rows])
    b = np.concatenate([v for _, v in rows])
    return linprog(
        c,
        A_ub=A if len(b) else None,
        b_ub=b if len(b) else None,
        bounds=list(zip(case.lb, case.ub)),
        options={"presolve": False},
    )


def milp_oracle(case: MilpCase) -> MilpOracle:
    """scipy's answers for every cost vector of ``case``, on the exact rows and in the band."""
    with quiet_stdout():
        strict = [_scipy_solve(case, c, 0.0) for c in case.c]
        loose = [_scipy_solve(case, c, BAND) for c in case.c]
    return MilpOracle(
        status=[s for s, _ in strict],
        strict=np.array([v for _, v in strict]),
        loose=np.array([v for _, v in loose]),
        loose_status=[s for s, _ in loose],
    )


def judge_milp(
    case: MilpCase, reference: MilpOracle, y: np.ndarray, status: np.ndarray
) -> list[str]:
    """One verdict per cost vector: ``"ok"``, ``"wrong-optimal"``, ``"beats-oracle"``,
    ``"false-infeasible"``, ``"false-unbounded"``, ``"not-optimal"``, ``"not-infeasible"`` or
    ``"skipped"`` (scipy gave no answer)."""
    verdicts = []
    for i in range(len(case.c)):
        code, expected = Status(int(status[i])), reference.status[i]
        loose = reference.loose_status[i]
        if expected == "unknown" or loose == "unknown":
            verdicts.append("skipped")
            continue
        if code == Status.OPTIMAL:
            value = float(case.c[i] @ y[i])
            low, high = reference.loose[i], reference.strict[i]
            scale = OBJECTIVE_TOL * (1 + abs(value))
            ok = (
                loose == "optimal"
                and value >= low - scale
                and (expected != "optimal" or value <= high + scale)
            )
            beats = loose == "optimal" and value < low - scale and _in_band(case, y[i])
            verdicts.append("ok" if ok else "beats-oracle" if beats else "wrong-optimal")
        elif code == Status.INFEASIBLE:
            verdicts.append("ok" if expected == "infeasible" else "false-infeasible")
        elif code == Status.UNBOUNDED:
            verdicts.append("ok" if "unbounded" in (expected, loose) else "false-unbounded")
        elif code == Status.INFEASIBLE_OR_UNBOUNDED:
            verdicts.append(
                "ok" if {expected, loose} & {"infeasible", "unbounded"} else "not-optimal"
            )
        else:
            verdicts.append("not-infeasible" if expected == "infeasible" else "not-optimal")
    return verdicts


def _in_band(case: MilpCase, y: np.ndarray) -> bool:
    """Whether ``y`` is a point of ``case`` on the backends' terms: rows within ``BAND``, the
    bounds, and integers within 1e-9."""
    integer = case.integrality.astype(bool)
    return bool(
        (case.A @ y <= case.b + BAND).all()
        and (np.abs(case.A_eq @ y - case.b_eq) <= BAND).all()
        and (y >= case.lb - 1e-9).all()
        and (y <= case.ub + 1e-9).all()
        and (np.abs(y[integer] - np.round(y[integer])) <= 1e-9).all()
    )


def solve_milp_case(case: MilpCase, solver: Solver | str) -> tuple[np.ndarray, np.ndarray]:
    """Solve a case through the public [`ilplayer.solve`][ilplayer.solve]."""
    from ilplayer.layer import solve

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverFailureWarning)  # counted as verdicts instead
        y, status = solve(
            torch.from_numpy(case.c),
            torch.from_numpy(case.A),
            torch.from_numpy(case.b),
            case.lb,
            case.ub,
            solver=solver,
            executor="serial",
            A_eq=torch.from_numpy(case.A_eq),
            b_eq=torch.from_numpy(case.b_eq),
            integrality=case.integrality,
        )
    return y.numpy(), status.numpy()


def fuzz_milp_backend(solver: Solver, cases: list[MilpCase], keep: int = 50) -> FuzzReport:
    """Solve every case with ``solver`` and judge it against scipy's answers."""
    report = FuzzReport(backend=solver.name)
    start = time.perf_counter()
    for case in cases:
        reference = milp_oracle(case)
        # Rows the oracle could not settle are skipped verdicts: not asked of the backend either.
        known = np.array(
            [
                s != "unknown" and loose != "unknown"
                for s, loose in zip(reference.status, reference.loose_status)
            ]
        )
        y, status = np.zeros_like(case.c), np.full(len(case.c), int(Status.ERROR), np.int8)
        if known.any():
            try:
                y[known], status[known] = solve_milp_case(
                    dataclasses.replace(case, c=case.c[known]), solver
                )
            except Exception as exc:  # a crash of the call is a failure of every row
                warnings.warn(
                    f"{solver.name}: MILP case {case.seed} raised {type(exc).__name__}: {exc}",
                    SolverFailureWarning,
                    stacklevel=2,
                )
        verdicts = judge_milp(case, reference, y, status)
        report.instances += len(verdicts)
        report.feasible += sum(s == "optimal" for s in reference.status)
        for verdict in verdicts:
            report.counts[verdict] = report.counts.get(verdict, 0) + 1
        if any(v not in ("ok", "skipped") for v in verdicts) and len(report.failures) < keep:
            report.failures.append((case, verdicts, y, status))  # type: ignore[arg-type]
    report.seconds = time.perf_counter() - start
    return report


def save_milp_reproducer(
    directory: str | Path,
    backend: str,
    case: MilpCase,
    verdicts: list[str],
    y: np.ndarray,
    status: np.ndarray,
    options: dict[str, Any] | None = None,
) -> Path:
    """Write one failing MILP case and the backend's answer as JSON (``ilplayer fuzz --replay``)."""
    path = Path(directory) / f"{backend.replace(':', '-')}-milp{case.seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "backend": backend,
        "options": options or {},
        "milp": True,
        "case": case.to_json(),
        "verdicts": verdicts,
        "status": Status.names(status),
        "y": np.asarray(y).tolist(),
        "replay": f"python -m ilplayer fuzz --replay {path}",
    }
    path.write_text(json.dumps(record, indent=1))
    return path
