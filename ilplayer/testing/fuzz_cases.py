"""Fuzzed pure-integer cases: random boxes, rows of several kinds (dense, sparse, tight, fractional),
equalities, small enough for exhaustive enumeration to be the oracle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FUZZ_MAX_POINTS", "ROW_KINDS", "FuzzCase", "fuzz_case", "fuzz_cases", "fuzz_cases_for"]


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
