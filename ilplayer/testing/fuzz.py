"""Fuzzing backends against exhaustive enumeration.

`fuzz_cases` draws seeded
random instances small enough to enumerate (at most a few thousand box points): binary,
integer, negative and per-variable boxes; random, integer, all-zero, tight, equality-like
(also float32 pairs met only within rounding) and infeasible rows; ``m = 0``; ties in the
costs. Each case is one ``(A, b)`` with a few cost vectors, as a training batch would have.

The oracle is a *tolerance band*. ``strict`` is the optimum over the box points that satisfy
``A y <= b + 1e-7`` (every backend admits them); ``loose`` over those that pass the core's answer check
(``A y <= b + 1e-6 (1 + |b|)``). A correct backend returns

* ``OPTIMAL`` with an objective at most ``strict`` (it may be lower, down to ``loose``, when it
  uses a point inside the tolerance); when no point passes the strict test but some pass the
  loose one, any checked point (the core verifies every answer) or ``INFEASIBLE``; or
* ``INFEASIBLE`` only when no point satisfies the strict test.

`fuzz_backend` counts wrong ``OPTIMAL`` rows, false ``INFEASIBLE`` rows and every other
non-optimal answer on a feasible instance, and keeps each failing case as a reproducer
(`save_reproducer` writes it as JSON; ``ilplayer fuzz --replay FILE`` solves it again).
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.core.records import Capability, Status
from ilplayer.errors import SolverFailureWarning
from ilplayer.solvers.contract import Solver
from ilplayer.testing.fuzz_cases import (
    FuzzCase,
)

__all__ = [
    "STRICT_TOL",
    "FuzzReport",
    "Oracle",
    "fuzz_backend",
    "in_scope",
    "judge",
    "load_reproducer",
    "oracle",
    "save_reproducer",
]


# Rows met within STRICT_TOL bind every backend: each admits 1e-6 (its rows hold b + 1e-6), so
# a point this close must not be called infeasible, and the best such point bounds OPTIMAL.
# (At 1e-9, float32 data that met an equality pair within 7.5e-9 counted as loose only, and
# SCIP's INFEASIBLE on them passed.)
STRICT_TOL = 1e-7
LOOSE_TOL = 1e-6  # the core's answer check (dispatch.VERIFY_TOL), relative to 1 + |b|
OBJECTIVE_TOL = 1e-6


@dataclass(frozen=True)
class Oracle:
    """Exhaustive optima per cost vector: ``strict`` and ``loose`` (NaN when none)."""

    strict: np.ndarray
    loose: np.ndarray


def _points(lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    axes = [np.arange(l, u + 1, dtype=np.float64) for l, u in zip(lb.tolist(), ub.tolist())]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(lb))


def oracle(case: FuzzCase) -> Oracle:
    """Enumerate the box (the test suite's independent, NumPy-only oracle)."""
    points = _points(case.lb, case.ub)
    excess = points @ case.A.T - case.b
    gap = np.abs(points @ case.A_eq.T - case.b_eq)
    strict = (excess <= STRICT_TOL).all(axis=1) & (gap <= STRICT_TOL).all(axis=1)
    loose = (excess <= LOOSE_TOL * (1.0 + np.abs(case.b))).all(axis=1) & (
        gap <= LOOSE_TOL * (1.0 + np.abs(case.b_eq))
    ).all(axis=1)
    costs = case.c @ points.T
    best = lambda mask: np.where(mask.any(), np.where(mask, costs, np.inf).min(axis=1), np.nan)
    return Oracle(strict=best(strict), loose=best(loose))


def judge(case: FuzzCase, reference: Oracle, y: np.ndarray, status: np.ndarray) -> list[str]:
    """One verdict per cost vector: ``"ok"``, ``"wrong-optimal"``, ``"false-infeasible"``,
    ``"not-optimal"`` (any other status on a feasible instance) or ``"not-infeasible"``."""
    verdicts = []
    for i in range(len(case.c)):
        code = Status(int(status[i]))
        feasible, admissible = (
            not math.isnan(reference.strict[i]),
            not math.isnan(reference.loose[i]),
        )
        if code == Status.OPTIMAL:
            # Only a strictly feasible instance bounds the objective: when every point lies in
            # the tolerance band, which of them a backend admits depends on its tolerance.
            value, bound = float(case.c[i] @ y[i]), reference.strict[i]
            ok = admissible and (not feasible or value <= bound + OBJECTIVE_TOL * (1 + abs(bound)))
            verdicts.append("ok" if ok else "wrong-optimal")
        elif code == Status.INFEASIBLE:
            verdicts.append("false-infeasible" if feasible else "ok")
        else:
            verdicts.append("not-optimal" if admissible else "not-infeasible")
    return verdicts


@dataclass
class FuzzReport:
    """Counts per verdict for one backend, and the failing cases."""

    backend: str
    instances: int = 0
    feasible: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[tuple[FuzzCase, list[str], np.ndarray, np.ndarray]] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, verdict: str) -> int:
        return self.counts.get(verdict, 0)

    @property
    def correct(self) -> bool:
        return (
            self.count("wrong-optimal") == 0
            and self.count("false-infeasible") == 0
            and self.count("false-unbounded") == 0
        )

    @property
    def not_optimal_fraction(self) -> float:
        return self.count("not-optimal") / max(1, self.feasible)

    def row(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "instances": self.instances,
            "feasible": self.feasible,
            "wrong_optimal": self.count("wrong-optimal"),
            "beats_oracle": self.count("beats-oracle"),
            "false_infeasible": self.count("false-infeasible"),
            "false_unbounded": self.count("false-unbounded"),
            "not_optimal": self.count("not-optimal"),
            "not_infeasible": self.count("not-infeasible"),
            "not_optimal_percent": round(100 * self.not_optimal_fraction, 3),
            "seconds": round(self.seconds, 2),
        }


def solve_case(case: FuzzCase, solver: Solver | str) -> tuple[np.ndarray, np.ndarray]:
    """Solve a case through the public [`ilplayer.solve`][ilplayer.solve] (validation, dispatch, checks)."""
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
        )
    return y.numpy(), status.numpy()


def in_scope(case: FuzzCase, capabilities: frozenset[Capability]) -> bool:
    """Whether a backend with ``capabilities`` takes ``case``: one that declares
    ``Capability.ONE_ROW_ONLY`` takes at most one row with a non-zero coefficient and no equality."""
    if Capability.ONE_ROW_ONLY in capabilities:
        return int((case.A != 0).any(axis=1).sum()) <= 1 and len(case.A_eq) == 0
    return True


def fuzz_backend(solver: Solver, cases: list[FuzzCase], keep: int = 50) -> FuzzReport:
    """Solve every case in ``solver``'s scope ([in_scope][ilplayer.testing.fuzz.in_scope]) and
    judge it against the oracle."""
    report = FuzzReport(backend=solver.name)
    start = time.perf_counter()
    for case in (case for case in cases if in_scope(case, solver.capabilities)):
        reference = oracle(case)
        try:
            y, status = solve_case(case, solver)
        except Exception as exc:  # a crash of the call is a failure of every row
            y = np.zeros_like(case.c)
            status = np.full(len(case.c), int(Status.ERROR), np.int8)
            warnings.warn(
                f"{solver.name}: case {case.seed} raised {type(exc).__name__}: {exc}",
                SolverFailureWarning,
                stacklevel=2,
            )
        verdicts = judge(case, reference, y, status)
        report.instances += len(verdicts)
        report.feasible += int((~np.isnan(reference.strict)).sum())
        for verdict in verdicts:
            report.counts[verdict] = report.counts.get(verdict, 0) + 1
        if any(v != "ok" for v in verdicts) and len(report.failures) < keep:
            report.failures.append((case, verdicts, y, status))
    report.seconds = time.perf_counter() - start
    return report


def save_reproducer(
    directory: str | Path,
    backend: str,
    case: FuzzCase,
    verdicts: list[str],
    y: np.ndarray,
    status: np.ndarray,
    options: dict[str, Any] | None = None,
) -> Path:
    """Write one failing case, the backend's answer and the oracle's as JSON; ``options``: the
    backend's keyword options (``get_solver(backend, **options)``), replayed with the case."""
    reference = oracle(case)
    path = Path(directory) / f"{backend.replace(':', '-')}-case{case.seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "backend": backend,
        "options": options or {},
        "case": case.to_json(),
        "verdicts": verdicts,
        "status": Status.names(status),
        "y": np.asarray(y).tolist(),
        "oracle": {
            k: [None if math.isnan(v) else v for v in vals.tolist()]
            for k, vals in asdict(reference).items()
        },
        "replay": f"python -m ilplayer fuzz --replay {path}",
    }
    path.write_text(json.dumps(record, indent=1))
    return path


def load_reproducer(path: str | Path) -> tuple[str, FuzzCase, dict[str, Any]]:
    """The backend name, the case and the backend's keyword options of a saved reproducer."""
    record = json.loads(Path(path).read_text())
    return record["backend"], FuzzCase.from_json(record["case"]), record.get("options", {})
