"""Instance generators shared by the tests, the benchmarks and the demonstrations.

* random constraints (paper, supplementary A): hyperplanes through origins near the box
  centre, flipped so that a chosen point stays feasible;
* random unit cost vectors;
* set-cover families of small subsets (paper, "Weighted Set Covering");
* the named families of one catalogue: the benchmarks' (`family_batch`: "binary m=4",
  "set cover" ...) and the tests' (`make_instances`: "binary-m4", "equalities" ...).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ilplayer.core.bounds import Bounds, as_bounds
from ilplayer.core.records import ILPBatch

__all__ = [
    "BENCH_FAMILIES",
    "INITIAL_OFFSET",
    "MAX_SUBSET_SIZE",
    "MIN_COVER",
    "TEST_FAMILIES",
    "Instances",
    "check_family",
    "family_batch",
    "make_instances",
    "market_split",
    "random_constraint_rows",
    "random_costs",
    "sample_cover",
    "sample_random_constraints",
    "set_cover",
]

INITIAL_OFFSET = -0.2
"""Initial ``r``: the reference's bias 0.2 in ``a·(y - o) + 0.2 <= 0``; each constraint starts
0.2 away from its origin, on the side that excludes it."""


def sample_random_constraints(
    num_constraints: int,
    num_variables: int,
    lb: Bounds = 0,
    ub: Bounds = 1,
    *,
    generator: torch.Generator | None = None,
    feasible_point: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float64,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random constraints as in supplementary A (Random Constraints).

    Origins are uniform in the centre sub-cube of the box (half its edge length), normals are
    uniform in [-0.5, 0.5]^n and normalised, offsets are ``INITIAL_OFFSET``. Constraints that
    ``feasible_point`` violates get their normal and offset negated, so that the point (and
    thus the problem) stays feasible.

    Returns:
        ``(normals, offsets, origins)`` of shapes (m, n), (m,), (m, n);
        ``A = normals`` and ``b = offsets + (normals * origins).sum(-1)``.
    """
    if num_constraints < 0 or num_variables < 1:
        raise ValueError(
            f"num_constraints must be >= 0 and num_variables >= 1, got "
            f"{num_constraints} and {num_variables}"
        )
    lo = torch.as_tensor(as_bounds(lb, num_variables, "lb"), dtype=dtype)
    hi = torch.as_tensor(as_bounds(ub, num_variables, "ub"), dtype=dtype)
    shape = (num_constraints, num_variables)
    normals = torch.rand(shape, generator=generator, dtype=dtype) - 0.5
    normals = normals / torch.linalg.vector_norm(normals, dim=-1, keepdim=True)
    centre, half_edge = (lo + hi) / 2, (hi - lo) / 4
    origins = centre + (2 * torch.rand(shape, generator=generator, dtype=dtype) - 1) * half_edge
    offsets = torch.full((num_constraints,), INITIAL_OFFSET, dtype=dtype)
    if feasible_point is not None:
        point = torch.as_tensor(feasible_point, dtype=dtype)
        violated = (normals * (point - origins)).sum(-1) > offsets
        flip = 1.0 - 2.0 * violated.to(dtype)
        normals, offsets = normals * flip[:, None], offsets * flip
    return normals, offsets, origins


def random_constraint_rows(
    num_constraints: int,
    num_variables: int,
    lb: Bounds = 0,
    ub: Bounds = 1,
    *,
    generator: torch.Generator | None = None,
    feasible_point: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`sample_random_constraints` as rows ``(A, b)`` of ``A y <= b``."""
    normals, offsets, origins = sample_random_constraints(
        num_constraints,
        num_variables,
        lb,
        ub,
        generator=generator,
        feasible_point=feasible_point,
        dtype=dtype,
    )
    return normals, offsets + (normals * origins).sum(-1)


def random_costs(k: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """Cost vectors uniform in [-0.5, 0.5]^n, normalised to unit length."""
    c = torch.rand(k, n, generator=generator, dtype=torch.float64) - 0.5
    return c / torch.linalg.vector_norm(c, dim=-1, keepdim=True)


MAX_SUBSET_SIZE = 3
MIN_COVER = 2
"""The reference generator's rule: every element lies in at least two subsets."""


def sample_cover(
    rng: np.random.Generator,
    universe: int,
    subsets: int,
    max_size: int = MAX_SUBSET_SIZE,
    min_cover: int = MIN_COVER,
) -> np.ndarray:
    """Incidence matrix (universe x subsets) of distinct subsets of at most ``max_size``
    elements, uniform among the families that cover every element at least ``min_cover`` times.

    The paper's reference generator rejects a family in which some element lies in fewer than
    two subsets (``min_cover=2``): with a single cover, that subset would be in every solution
    and the dataset would carry a constraint no cost can reveal.
    """
    candidates = [
        c for size in range(1, max_size + 1) for c in itertools.combinations(range(universe), size)
    ]
    if subsets > len(candidates):
        raise ValueError(
            f"subsets: only {len(candidates)} distinct subsets of <= {max_size} of "
            f"{universe} elements exist, {subsets} asked"
        )
    if min_cover * universe > max_size * subsets:
        raise ValueError(
            f"min_cover: {subsets} subsets of <= {max_size} elements cannot cover "
            f"{universe} elements {min_cover} times each"
        )
    for _ in range(100_000):  # rejection: 2m random small subsets pass with good probability
        chosen = rng.choice(len(candidates), size=subsets, replace=False)
        incidence = np.zeros((universe, subsets))
        for column, index in enumerate(chosen):
            incidence[list(candidates[index]), column] = 1.0
        if incidence.sum(axis=1).min() >= min_cover:
            return incidence
    raise RuntimeError(
        f"no family of {subsets} subsets covered {universe} elements {min_cover} "
        f"times each in 100000 draws"
    )


# --- the benchmark families (ilplayer bench, the tuning and cross-check scripts) --------------

BENCH_FAMILIES = (
    "binary m=1",
    "binary m=4",
    "binary m=8",
    "dense m=4",
    "dense m=8",
    "set cover",
    "knapsack",
)


def check_family(family: str) -> str:
    """``family`` if `family_batch` knows it, else a ValueError that lists the names."""
    box, _, m = family.partition(" m=")
    if family not in ("knapsack", "set cover") and not (
        box in ("binary", "dense") and m.isdigit() and int(m) > 0
    ):
        raise ValueError(
            f"unknown instance family {family!r}: use 'binary m=K', 'dense m=K', "
            "'set cover' or 'knapsack'"
        )
    return family


def family_batch(family: str, instances: int, seed: int = 0, n: int = 16) -> ILPBatch:
    """Instances of one benchmark family sharing ``(A, b)``: random constraints on a binary or
    dense [-5, 5] box (supplementary A), weighted set cover (n/2 elements, n subsets), or a
    0/1 knapsack (one weight row, capacity 30 % of the total weight, values to maximise)."""
    check_family(family)
    rng = np.random.default_rng(seed)
    if family == "knapsack":
        weights = rng.uniform(0.1, 1.0, (1, n))
        return ILPBatch(
            c=-rng.uniform(0.1, 1.0, (instances, n)),
            A=weights,
            b=np.array([0.3 * weights.sum()]),
            lb=np.zeros(n),
            ub=np.ones(n),
        )
    if family == "set cover":
        A, b = -sample_cover(rng, n // 2, n), -np.ones(n // 2)
        return ILPBatch(
            c=rng.uniform(0.1, 1, (instances, n)), A=A, b=b, lb=np.zeros(n), ub=np.ones(n)
        )
    box, m = family.split(" m=")
    lo, hi = (0, 1) if box == "binary" else (-5, 5)
    g = torch.Generator().manual_seed(seed)
    corner = torch.tensor([lo if rng.random() < 0.5 else hi for _ in range(n)], dtype=torch.float64)
    rows, sides = random_constraint_rows(int(m), n, lo, hi, generator=g, feasible_point=corner)
    c = rng.uniform(-0.5, 0.5, (instances, n))
    return ILPBatch(
        c=c / np.linalg.norm(c, axis=1, keepdims=True),
        A=rows.numpy(),
        b=sides.numpy(),
        lb=np.full(n, lo),
        ub=np.full(n, hi),
    )


# --- the test families (the conformance kit, ilplayer.testing) ---------------------------------


@dataclass(frozen=True)
class Instances:
    """A batch of ILP instances as float64 tensors (``A`` shared or per instance), with
    equalities ``A_eq y = b_eq`` in some families."""

    c: torch.Tensor
    A: torch.Tensor
    b: torch.Tensor
    lb: list[int]
    ub: list[int]
    A_eq: torch.Tensor | None = None
    b_eq: torch.Tensor | None = None


def _random_constraints(
    rng: np.random.Generator, m: int, lb: list[int], ub: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    n = len(lb)
    generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
    corner = torch.tensor(
        [l if rng.random() < 0.5 else u for l, u in zip(lb, ub)], dtype=torch.float64
    )
    return random_constraint_rows(m, n, lb, ub, generator=generator, feasible_point=corner)


def set_cover(
    rng: np.random.Generator, universe: int, subsets: int
) -> tuple[np.ndarray, np.ndarray]:
    """``-M y <= -1``: choose subsets (of <= 3 elements, covering every element) to cover all."""
    return -sample_cover(rng, universe, subsets), -np.ones(universe)


TEST_FAMILIES = (
    "binary-m1",
    "binary-m4",
    "binary-m8",
    "dense",
    "integer-coefficients",
    "negative-bounds",
    "set-cover",
    "infeasible",
    "single-point",
    "per-instance",
    "zero-rows",
    "tight-rows",
    "equality-pairs",
    "box-only",
    "equalities",
)
"""The instance families [`make_instances`][ilplayer.testing.instances.make_instances] draws, by name."""


def make_instances(family: str, seed: int = 0, batch: int = 12) -> Instances:
    """A seeded batch of one family (small enough for ``bruteforce``)."""
    rng = np.random.default_rng([seed, TEST_FAMILIES.index(family)])
    for build in (_random_row_families, _special_row_families, _shared_row_families):
        instances = build(family, rng, batch)
        if instances is not None:
            return instances
    raise ValueError(f"family must be one of {TEST_FAMILIES}, got {family!r}")


def _random_row_families(family: str, rng: np.random.Generator, batch: int) -> Instances | None:
    """Random rows on binary, wide, negative boxes; integer rows; set cover."""
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    A: Any
    b: Any
    if family.startswith("binary-m"):
        lb, ub = [0] * 10, [1] * 10
        A, b = _random_constraints(rng, int(family[len("binary-m") :]), lb, ub)
        return Instances(t(rng.uniform(-1, 1, (batch, 10))), A, b, lb, ub)
    if family == "dense":
        lb, ub = [-5] * 5, [5] * 5
        A, b = _random_constraints(rng, 3, lb, ub)
        return Instances(t(rng.uniform(-1, 1, (batch, 5))), A, b, lb, ub)
    if family == "integer-coefficients":
        lb, ub = [-2] * 6, [3] * 6
        A = rng.integers(-5, 6, (3, 6))
        b = np.abs(A).sum(1) // 2
        return Instances(t(rng.integers(-9, 10, (batch, 6))), t(A), t(b), lb, ub)
    if family == "negative-bounds":
        lb = rng.integers(-4, 1, 7).tolist()
        ub = [l + int(rng.integers(0, 4)) for l in lb]
        A, b = _random_constraints(rng, 3, lb, ub)
        return Instances(t(rng.uniform(-1, 1, (batch, 7))), A, b, lb, ub)
    if family == "set-cover":
        A, b = set_cover(rng, 5, 10)
        return Instances(t(rng.uniform(0.1, 1, (batch, 10))), t(A), t(b), [0] * 10, [1] * 10)
    return None


def _special_row_families(family: str, rng: np.random.Generator, batch: int) -> Instances | None:
    """Infeasible instances, a single feasible point, rows per instance."""
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    A: Any
    b: Any
    a: Any
    if family == "infeasible":  # per instance: a·y <= -1 and a·y >= 1 for odd rows
        n = 6
        a = rng.uniform(0.5, 1, (batch, n))
        A = np.stack([a, -a], axis=1)
        b = np.stack([np.full(batch, 2.0), np.full(batch, -1.0)], axis=1)
        b[1::2] = [-1.0, -1.0]  # odd rows: a·y <= -1 and -a·y <= -1 -> impossible
        return Instances(t(rng.uniform(-1, 1, (batch, n))), t(A), t(b), [0] * n, [1] * n)
    if family == "single-point":  # y <= p and -y <= -p: the feasible set is {p}
        n = 6
        point = rng.integers(-2, 3, n)
        A = np.concatenate([np.eye(n), -np.eye(n)])
        b = np.concatenate([point, -point])
        return Instances(t(rng.uniform(-1, 1, (batch, n))), t(A), t(b), [-2] * n, [2] * n)
    if family == "per-instance":  # distinct (A, b) per row, with repeats
        lb, ub = [0] * 8, [2] * 8
        groups = [_random_constraints(rng, 2, lb, ub) for _ in range(3)]
        pick = rng.integers(0, 3, batch)
        A = torch.stack([groups[g][0] for g in pick])
        b = torch.stack([groups[g][1] for g in pick])
        return Instances(t(rng.uniform(-1, 1, (batch, 8))), A, b, lb, ub)
    return None


def _shared_row_families(family: str, rng: np.random.Generator, batch: int) -> Instances | None:
    """Zero rows, rows through box points, no rows, equalities."""
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    A: Any
    b: Any
    a: Any
    if family == "zero-rows":  # all-zero rows: satisfied (0 <= b) on even rows, not on odd
        lb, ub = [-1] * 6, [2] * 6
        A, b = _random_constraints(rng, 2, lb, ub)
        A = torch.cat([A, torch.zeros(2, 6)]).expand(batch, -1, -1).clone()
        b = torch.cat([b, torch.tensor([0.0, 1.0])]).expand(batch, -1).clone()
        b[1::2, 2] = -0.5
        return Instances(t(rng.uniform(-1, 1, (batch, 6))), A, b, lb, ub)
    if family in ("tight-rows", "equality-pairs"):  # hyperplanes through box points
        lb, ub = [-2] * 6, [2] * 6
        a = rng.uniform(-1, 1, (3, 6))
        points = rng.integers(-2, 3, (3, 6)).astype(np.float64)  # row j passes through point j
        b = np.einsum("ij,ij->i", a, points)
        if family == "equality-pairs":
            a, b = np.concatenate([a[:2], -a[:2]]), np.concatenate([b[:2], -b[:2]])
        return Instances(t(rng.uniform(-1, 1, (batch, 6))), t(a), t(b), lb, ub)
    if family == "box-only":  # m = 0
        lb = rng.integers(-3, 1, 5).tolist()
        ub = [l + 2 for l in lb]
        return Instances(
            t(rng.uniform(-1, 1, (batch, 5))),
            torch.zeros(0, 5, dtype=torch.float64),
            torch.zeros(0, dtype=torch.float64),
            lb,
            ub,
        )
    if family == "equalities":  # native A_eq y = b_eq: a float row and a count, both through
        lb, ub = [-1] * 6, [2] * 6  # one of two feasible box points (two groups of rows)
        A, b = _random_constraints(rng, 2, lb, ub)
        box = np.array(list(itertools.product(range(-1, 3), repeat=6)), dtype=np.float64)
        feasible = box[(box @ A.numpy().T <= b.numpy()).all(axis=1)]
        points = feasible[rng.choice(len(feasible), 2, replace=False)]
        a = 0.1 * rng.integers(-3, 4, 6)  # not exact in binary: the tolerance matters
        A_eq = np.stack([np.broadcast_to(a, (batch, 6)), np.ones((batch, 6))], axis=1)
        chosen = points[np.arange(batch) % 2]
        b_eq = np.stack([chosen @ a, chosen.sum(axis=1)], axis=1)
        return Instances(t(rng.uniform(-1, 1, (batch, 6))), A, b, lb, ub, t(A_eq), t(b_eq))
    return None


def market_split(seed: int = 0, m: int = 4, n: int = 36) -> Instances:
    """Cornuéjols-Dawande market split: a·y = floor(sum(a)/2) rows, famously hard for branch
    and bound; used to trigger time limits."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, (m, n)).astype(np.float64)
    rhs = np.floor(a.sum(1) / 2)
    A, b = np.concatenate([a, -a]), np.concatenate([rhs, -rhs])
    return Instances(
        torch.tensor(rng.uniform(-1, 1, (1, n))), torch.tensor(A), torch.tensor(b), [0] * n, [1] * n
    )
