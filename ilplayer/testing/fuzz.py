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

__all__ = [
    "ROW_KINDS",
    "STRICT_TOL",
    "FuzzCase",
    "FuzzReport",
    "Oracle",
    "fuzz_backend",
    "fuzz_case",
    "fuzz_cases",
    "fuzz_cases_for",
    "in_scope",
    "judge",
    "load_reproducer",
    "oracle",
    "save_reproducer",
]

# --- the fuzz cases (ilplayer fuzz: small enough to enumerate) ---------------------------------

FUZZ_MAX_POINTS = 4096  # box points of a fuzz case at most: the oracle enumerates them
ROW_KINDS = (
    "random",
    "integer",
    "zero-satisfied",
    "zero-infeasible",
    "tight",
    "equality-pair",
    "infeasible",
)


@dataclass(frozen=True)
class FuzzCase:
    """One ``(A, b)`` and box with ``c`` (k, n) cost vectors. ``kinds`` names its row kinds."""

    c: np.ndarray
    A: np.ndarray
    b: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    kinds: tuple[str, ...] = ()
    seed: int = 0
    # None is taken as 0 rows: __post_init__ makes both arrays.
    A_eq: np.ndarray = None  # type: ignore[assignment]
    b_eq: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.A_eq is None:
            object.__setattr__(self, "A_eq", np.zeros((0, len(self.lb))))
            object.__setattr__(self, "b_eq", np.zeros(0))

    def to_json(self) -> dict[str, Any]:
        return {
            "c": self.c.tolist(),
            "A": self.A.tolist(),
            "b": self.b.tolist(),
            "lb": self.lb.tolist(),
            "ub": self.ub.tolist(),
            "kinds": list(self.kinds),
            "seed": self.seed,
            "A_eq": self.A_eq.tolist(),
            "b_eq": self.b_eq.tolist(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FuzzCase:
        n = len(data["lb"])
        return cls(
            c=np.asarray(data["c"], dtype=np.float64).reshape(-1, n),
            A=np.asarray(data["A"], dtype=np.float64).reshape(-1, n),
            b=np.asarray(data["b"], dtype=np.float64),
            lb=np.asarray(data["lb"], dtype=np.int64),
            ub=np.asarray(data["ub"], dtype=np.int64),
            kinds=tuple(data.get("kinds", ())),
            seed=int(data.get("seed", 0)),
            A_eq=np.asarray(data.get("A_eq", []), dtype=np.float64).reshape(-1, n),
            b_eq=np.asarray(data.get("b_eq", []), dtype=np.float64),
        )


def _box(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    shape = rng.choice(["binary", "integer", "negative", "per-variable"])
    n = int(rng.integers(1, 9))
    if shape == "binary":
        lb, ub = np.zeros(n, np.int64), np.ones(n, np.int64)
    elif shape == "integer":
        width = int(rng.integers(1, 5))
        lb, ub = np.zeros(n, np.int64), np.full(n, width, np.int64)
    elif shape == "negative":
        half = int(rng.integers(1, 3))
        lb, ub = np.full(n, -half, np.int64), np.full(n, half, np.int64)
    else:
        lb = rng.integers(-4, 2, n).astype(np.int64)
        ub = lb + rng.integers(0, 4, n)
    while np.prod((ub - lb + 1).astype(np.float64)) > FUZZ_MAX_POINTS:  # keep it enumerable
        n -= 1
        lb, ub = lb[:n], ub[:n]
    return lb, ub


def _row(
    kind: str, rng: np.random.Generator, lb: np.ndarray, ub: np.ndarray
) -> list[tuple[np.ndarray, float]]:
    n = len(lb)
    point = rng.integers(lb, ub + 1).astype(np.float64)  # a box point
    if kind == "integer":
        a = rng.integers(-4, 5, n).astype(np.float64)
        return [(a, float(a @ point + rng.integers(0, 3)))]
    if kind == "zero-satisfied":
        return [(np.zeros(n), float(rng.choice([0.0, rng.uniform(0, 2)])))]
    if kind == "zero-infeasible":
        return [(np.zeros(n), -float(rng.uniform(0.01, 2)))]
    a = rng.uniform(-1, 1, n)
    if rng.random() < 0.3:
        a[rng.random(n) < 0.4] = 0.0
    if kind == "tight":  # the hyperplane passes through a box point
        return [(a, float(a @ point))]
    if kind == "equality-pair":  # a·y = a·p written as two rows
        return [(a, float(a @ point)), (-a, float(-(a @ point)))]
    if kind == "infeasible":  # below the least value a·y takes on the box
        least = float(np.minimum(a * lb, a * ub).sum())
        return [(a, least - float(rng.uniform(0.01, 1)))]
    return [(a, float(a @ point + rng.uniform(-0.5, 1.0)))]


def fuzz_case(seed: int, batch: int | None = None) -> FuzzCase:
    """The seeded case number ``seed``."""
    rng = np.random.default_rng([seed, 20261123])
    lb, ub = _box(rng)
    n = len(lb)
    m = int(rng.integers(0, 6))
    weights = np.array([6, 3, 1, 1, 3, 2, 1], dtype=np.float64)
    kinds = tuple(str(k) for k in rng.choice(ROW_KINDS, m, p=weights / weights.sum()))
    rows = [row for kind in kinds for row in _row(kind, rng, lb, ub)]
    A = np.array([a for a, _ in rows], dtype=np.float64).reshape(-1, n)
    b = np.array([beta for _, beta in rows], dtype=np.float64)
    if rng.random() < 0.3:  # data that went through float32, as in a training loop
        A, b = A.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
        kinds = (*kinds, "float32")
    k = batch or int(rng.integers(1, 5))
    c = (
        rng.uniform(-1, 1, (k, n))
        if rng.random() < 0.7
        else rng.integers(-2, 3, (k, n)).astype(np.float64)
    )
    A_eq, b_eq, eq_kinds = _equalities(
        np.random.default_rng([seed, 20261124]), lb, ub, "float32" in kinds
    )
    pair = _float32_equality_pair(np.random.default_rng([seed, 20261126]), lb, ub)
    if pair is not None:
        A, b, kinds = (
            np.vstack([A, pair[0]]),
            np.concatenate([b, pair[1]]),
            (*kinds, "equality-pair-float32"),
        )
    return FuzzCase(
        c=c,
        A=A,
        b=b,
        lb=lb,
        ub=ub,
        kinds=(*kinds, *eq_kinds) or ("box-only",),
        seed=seed,
        A_eq=A_eq,
        b_eq=b_eq,
    )


def _float32_equality_pair(
    rng: np.random.Generator, lb: np.ndarray, ub: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """In a sixth of the cases, an equality as two rows the way float32 training code writes
    it: non-integer float32 coefficients ``a`` through a box point ``p``, ``a·p`` summed in
    float32. ``p`` meets the pair only within float32 rounding (up to ~1e-7), inside the band
    every backend must admit; SCIP, with rows at ``b`` and its feastol at 1e-9, called such
    instances INFEASIBLE. From its own stream: the other draws of a case do not move."""
    if rng.random() >= 1 / 6:
        return None
    point = rng.integers(lb, ub + 1).astype(np.float32)
    a = rng.uniform(-1, 1, len(lb)).astype(np.float32)
    rhs = np.float32(np.sum(a * point, dtype=np.float32))
    return np.vstack([a, -a]).astype(np.float64), np.array([rhs, -rhs], dtype=np.float64)


def _equalities(
    rng: np.random.Generator, lb: np.ndarray, ub: np.ndarray, float32: bool
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """In a quarter of the cases, 1-2 native equalities ``a·y = a·p`` through a box point
    (integer or float coefficients, sometimes through float32), from their own stream so that
    the other draws of a case do not move; sometimes one more that no box point meets."""
    n = len(lb)
    if rng.random() >= 0.25:
        return np.zeros((0, n)), np.zeros(0), ()
    rows: list[np.ndarray] = []
    targets: list[float] = []
    kinds: list[str] = []
    for _ in range(int(rng.integers(1, 3))):
        a: np.ndarray
        point = rng.integers(lb, ub + 1).astype(np.float64)
        if rng.random() < 0.5:
            a, kind = rng.integers(-2, 3, n).astype(np.float64), "equality-integer"
        else:
            a, kind = 0.1 * rng.integers(-5, 6, n), "equality-float"
        rows.append(a)
        targets.append(float(a @ point) + (0.5 if rng.random() < 0.1 else 0.0))  # 10 %: off-grid
        kinds.append(kind)
    A_eq, b_eq = np.array(rows), np.array(targets)
    if float32:
        A_eq, b_eq = (
            A_eq.astype(np.float32).astype(np.float64),
            b_eq.astype(np.float32).astype(np.float64),
        )
    return A_eq, b_eq, tuple(kinds)


def fuzz_cases(count: int, start: int = 0) -> list[FuzzCase]:
    """Cases ``start .. start + count - 1``."""
    return [fuzz_case(seed) for seed in range(start, start + count)]


def fuzz_cases_for(instances: int, start: int = 0) -> list[FuzzCase]:
    """Consecutive cases from ``start`` until they hold at least ``instances`` cost vectors."""
    cases: list[FuzzCase] = []
    total, seed = 0, start
    while total < instances:
        cases.append(fuzz_case(seed))
        total += len(cases[-1].c)
        seed += 1
    return cases


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
