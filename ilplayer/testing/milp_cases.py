"""Fuzzed mixed-integer cases and their families (slabs, near-tie knapsacks, lattices), for
scipy.optimize.milp to judge."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "MilpCase",
    "lattice_case",
    "milp_case",
    "milp_cases_for",
    "slab_case",
    "tie_knapsack_case",
]


@dataclass(frozen=True, eq=False)
class MilpCase:
    """One ``(A, b, A_eq, b_eq, lb, ub, integrality)`` with a few cost vectors ``c`` (k, n)."""

    seed: int
    c: np.ndarray
    A: np.ndarray
    b: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integrality: np.ndarray
    kinds: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        encode = lambda a: [
            None if not math.isfinite(v) else v for v in np.asarray(a, float).ravel().tolist()
        ]
        record: dict[str, Any] = {
            "seed": self.seed,
            "kinds": list(self.kinds),
            "n": int(self.c.shape[1]),
        }
        for name in ("c", "A", "b", "A_eq", "b_eq", "integrality"):
            record[name] = np.asarray(getattr(self, name), float).tolist()
        record["lb"], record["ub"] = encode(self.lb), encode(self.ub)  # JSON has no inf: None
        return record

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MilpCase:
        n = int(data["n"])
        rows = lambda key: np.asarray(data[key], float).reshape(-1, n)
        bound = lambda key, inf: np.array([inf if v is None else v for v in data[key]], float)
        return cls(
            seed=int(data["seed"]),
            c=rows("c"),
            A=rows("A"),
            b=np.asarray(data["b"], float),
            A_eq=rows("A_eq"),
            b_eq=np.asarray(data["b_eq"], float),
            lb=bound("lb", -np.inf),
            ub=bound("ub", np.inf),
            integrality=np.asarray(data["integrality"], float).astype(bool),
            kinds=tuple(data.get("kinds", ())),
        )


def _bounds(
    rng: np.random.Generator, integer: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    n = len(integer)
    low = rng.integers(-4, 1, n).astype(float)
    high = low + rng.integers(0, 6, n)
    kind = rng.choice(["finite", "lower", "upper", "free"], n, p=[0.55, 0.25, 0.1, 0.1])
    lb = np.where((kind == "upper") | (kind == "free"), -np.inf, low)
    ub = np.where((kind == "lower") | (kind == "free"), np.inf, high)
    fractional = ~integer & (rng.random(n) < 0.5)  # continuous variables get fractional bounds
    lb = np.where(fractional & np.isfinite(lb), lb - rng.uniform(0, 1, n), lb)
    ub = np.where(fractional & np.isfinite(ub), ub + rng.uniform(0, 1, n), ub)
    return lb, ub, sorted(set(kind.tolist()))


def milp_case(seed: int, batch: int | None = None) -> MilpCase:
    """A random mixed-integer program with 1-4 cost vectors (``batch`` to fix it)."""
    rng = np.random.default_rng([seed, 36])
    n, m = int(rng.integers(2, 9)), int(rng.integers(0, 6))
    mode = rng.choice(["mixed", "continuous", "integer"], p=[0.7, 0.15, 0.15])
    integer = {
        "mixed": rng.random(n) < 0.5,
        "continuous": np.zeros(n, bool),
        "integer": np.ones(n, bool),
    }[mode]
    lb, ub, bound_kinds = _bounds(rng, integer)
    kinds = [str(mode), *bound_kinds]
    # A point of the box, integral where asked, from which feasible rows are made.
    anchor = np.clip(rng.normal(0, 2, n), lb, ub)
    anchor = np.where(integer, np.clip(np.round(anchor), np.ceil(lb), np.floor(ub)), anchor)
    if rng.random() < 0.3:
        A, kinds = rng.integers(-3, 4, (m, n)).astype(float), [*kinds, "integer-rows"]
    else:
        A = np.round(rng.normal(size=(m, n)), 3) * (rng.random((m, n)) < 0.75)
    b = A @ anchor + rng.uniform(0, 2, m)
    if m and rng.random() < 0.1:
        b[0], kinds = A[0] @ anchor - 50.0 - abs(A[0]).sum() * 20, [*kinds, "infeasible-row"]
    k_eq = int(rng.integers(1, 3)) if rng.random() < 0.25 else 0
    A_eq = np.round(rng.normal(size=(k_eq, n)), 3) if k_eq else np.zeros((0, n))
    b_eq = A_eq @ anchor
    if k_eq:
        kinds.append("equalities")
    k = batch if batch is not None else int(rng.integers(1, 5))
    c = np.round(rng.normal(size=(k, n)), 3)
    return MilpCase(
        seed=seed,
        c=c,
        A=A,
        b=b,
        A_eq=A_eq,
        b_eq=b_eq,
        lb=lb,
        ub=ub,
        integrality=integer,
        kinds=tuple(kinds),
    )


def slab_case(seed: int, feasible: bool | None = None) -> MilpCase:
    """A program of the family where branch and bound without presolve and cuts need not end:
    9 variables, 8 integer, three of them with an infinite bound (one below, one above, one
    both), and two rows of fractional data that hold a combination of those three in a slab
    ``s g·y = s r`` (``g`` even integers, ``s`` a fraction). With ``r`` odd no lattice point
    lies in it (infeasible, by parity); with ``r`` even it holds lattice points without end,
    and the costs on the three are a multiple of the row's, so the optimum is finite. ``feasible``
    picks the kind (None: drawn). Each backend's own defaults settle these in milliseconds."""
    rng = np.random.default_rng([seed, 47])
    n = 9
    if feasible is None:
        feasible = bool(rng.random() < 0.5)
    lb = rng.integers(-4, 1, n).astype(float)
    ub = lb + rng.integers(1, 6, n)
    free = rng.choice(n, 3, replace=False)
    lb[free[0]] = -np.inf
    ub[free[1]] = np.inf
    lb[free[2]], ub[free[2]] = -np.inf, np.inf
    integer = np.ones(n, bool)
    integer[rng.choice(np.setdiff1d(np.arange(n), free))] = False
    g = 2 * rng.integers(-3, 4, 3)
    g[g == 0] = 2
    scale = round(float(rng.uniform(0.2, 1.5)), 3)
    row = np.zeros(n)
    row[free] = scale * g
    rhs = scale * (2 * int(rng.integers(-3, 4)) + (0 if feasible else 1))
    c = np.round(rng.normal(size=(1, n)), 3)
    c[0, free] = row[free] * round(float(rng.uniform(0.5, 2.0)), 3)
    return MilpCase(
        seed=seed,
        c=c,
        A=np.stack([row, -row]),
        b=np.array([rhs, -rhs]),
        A_eq=np.zeros((0, n)),
        b_eq=np.zeros(0),
        lb=lb,
        ub=ub,
        integrality=integer,
        kinds=("slab", "feasible" if feasible else "parity-infeasible"),
    )


def tie_knapsack_case(seed: int, items: int = 25) -> MilpCase:
    """A binary knapsack whose items are nearly alike: weights ``0.2505 ± 0.0005`` under a
    capacity of 2.5 (ten fit only when light enough) and prices ``0.2 ± 0.0004``, as an
    untrained network predicts them for every item (ILP-Loss' knapsack at 25 items). Bounded and
    pure-integer, yet branch and bound without presolve and cuts (the speed settings) meets
    about C(25, 10) near-ties and need not end within seconds; each backend's own defaults
    settle it in well under a second."""
    rng = np.random.default_rng([seed, 53])
    weights = 0.2505 + 0.0005 * rng.standard_normal(items)
    prices = 0.2 + 0.0004 * rng.standard_normal(items)
    return MilpCase(
        seed=seed,
        c=-prices[None, :],
        A=weights[None, :],
        b=np.array([2.5]),
        A_eq=np.zeros((0, items)),
        b_eq=np.zeros(0),
        lb=np.zeros(items),
        ub=np.ones(items),
        integrality=np.ones(items, bool),
        kinds=("tie-knapsack",),
    )


def lattice_case(seed: int) -> MilpCase:
    """A program of the family where a search on the core's band need not end: 5-8 integer
    variables, bounded, half-bounded and free as in `milp_case` (at least one without a bound),
    and a fixed continuous one; two equality rows of fractional (3-decimal) coefficients that an
    integer point meets exactly, and no other rows. Banded equalities (ranges) defeat presolve,
    and on an integrality tolerance of 1e-8 the search for a lattice point in them ran into the
    time limit where HiGHS' defaults answer at once (held-out seed 900998 of `milp_case`)."""
    rng = np.random.default_rng([seed, 59])
    while True:
        n = int(rng.integers(6, 10))
        integer = np.ones(n, bool)
        integer[-1] = False
        lb, ub, kinds = _bounds(rng, integer)
        if not (np.isfinite(lb[:-1]) & np.isfinite(ub[:-1])).all():
            break
    lb[-1] = ub[-1] = float(rng.integers(-2, 3))
    anchor = np.clip(np.round(rng.normal(0, 2, n)), lb, ub)
    A_eq = np.round(rng.normal(size=(2, n)), 3)
    c = np.round(rng.normal(size=(1, n)), 3)
    return MilpCase(
        seed=seed,
        c=c,
        A=np.zeros((0, n)),
        b=np.zeros(0),
        A_eq=A_eq,
        b_eq=A_eq @ anchor,
        lb=lb,
        ub=ub,
        integrality=integer,
        kinds=("lattice", *kinds),
    )


def milp_cases_for(instances: int, start: int = 0) -> list[MilpCase]:
    """Consecutive cases from seed ``start`` holding at least ``instances`` cost vectors."""
    cases, total, seed = [], 0, start
    while total < instances:
        cases.append(milp_case(seed))
        total += len(cases[-1].c)
        seed += 1
    return cases
