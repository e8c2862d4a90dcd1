"""Instance generators shared by the tests, the benchmarks and the demonstrations.

* random constraints (paper, supplementary A): hyperplanes through origins near the box
  centre, flipped so that a chosen point stays feasible;
* random unit cost vectors;
* set-cover families of small subsets (paper, "Weighted Set Covering").
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from ilplayer.problem import Bounds, as_bounds
from ilplayer.types import ILPBatch

__all__ = ["BENCH_FAMILIES", "INITIAL_OFFSET", "MAX_SUBSET_SIZE", "MIN_COVER", "check_family", "family_batch",
           "random_constraint_rows", "random_costs", "sample_cover", "sample_random_constraints"]

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
    if num_constraints < 1 or num_variables < 1:
        raise ValueError(f"num_constraints and num_variables must be >= 1, got "
                         f"{num_constraints} and {num_variables}")
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


def random_constraint_rows(num_constraints: int, num_variables: int, lb: Bounds = 0, ub: Bounds = 1, *,
                           generator: torch.Generator | None = None,
                           feasible_point: torch.Tensor | None = None,
                           dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sample_random_constraints` as rows ``(A, b)`` of ``A y <= b``."""
    normals, offsets, origins = sample_random_constraints(
        num_constraints, num_variables, lb, ub, generator=generator,
        feasible_point=feasible_point, dtype=dtype)
    return normals, offsets + (normals * origins).sum(-1)


def random_costs(k: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """Cost vectors uniform in [-0.5, 0.5]^n, normalised to unit length."""
    c = torch.rand(k, n, generator=generator, dtype=torch.float64) - 0.5
    return c / torch.linalg.vector_norm(c, dim=-1, keepdim=True)


MAX_SUBSET_SIZE = 3
MIN_COVER = 2
"""The reference generator's rule: every element lies in at least two subsets."""


def sample_cover(rng: np.random.Generator, universe: int, subsets: int,
                 max_size: int = MAX_SUBSET_SIZE, min_cover: int = MIN_COVER) -> np.ndarray:
    """Incidence matrix (universe x subsets) of distinct subsets of at most ``max_size``
    elements, uniform among the families that cover every element at least ``min_cover`` times.

    The paper's reference generator rejects a family in which some element lies in fewer than
    two subsets (``min_cover=2``): with a single cover, that subset would be in every solution
    and the dataset would carry a constraint no cost can reveal.
    """
    candidates = [c for size in range(1, max_size + 1)
                  for c in itertools.combinations(range(universe), size)]
    if subsets > len(candidates):
        raise ValueError(f"subsets: only {len(candidates)} distinct subsets of <= {max_size} of "
                         f"{universe} elements exist, {subsets} asked")
    if min_cover * universe > max_size * subsets:
        raise ValueError(f"min_cover: {subsets} subsets of <= {max_size} elements cannot cover "
                         f"{universe} elements {min_cover} times each")
    for _ in range(100_000):  # rejection: 2m random small subsets pass with good probability
        chosen = rng.choice(len(candidates), size=subsets, replace=False)
        incidence = np.zeros((universe, subsets))
        for column, index in enumerate(chosen):
            incidence[list(candidates[index]), column] = 1.0
        if incidence.sum(axis=1).min() >= min_cover:
            return incidence
    raise RuntimeError(f"no family of {subsets} subsets covered {universe} elements {min_cover} "
                       f"times each in 100000 draws")


# --- the benchmark families (ilplayer bench, the tuning and cross-check scripts) --------------

BENCH_FAMILIES = ("binary m=1", "binary m=4", "binary m=8", "dense m=4", "dense m=8", "set cover", "knapsack")


def check_family(family: str) -> str:
    """``family`` if :func:`family_batch` knows it, else a ValueError that lists the names."""
    box, _, m = family.partition(" m=")
    if family not in ("knapsack", "set cover") and not (box in ("binary", "dense") and m.isdigit() and int(m) > 0):
        raise ValueError(f"unknown instance family {family!r}: use 'binary m=K', 'dense m=K', "
                         "'set cover' or 'knapsack'")
    return family


def family_batch(family: str, instances: int, seed: int = 0, n: int = 16) -> ILPBatch:
    """Instances of one benchmark family sharing ``(A, b)``: random constraints on a binary or
    dense [-5, 5] box (supplementary A), weighted set cover (n/2 elements, n subsets), or a
    0/1 knapsack (one weight row, capacity 30 % of the total weight, values to maximise)."""
    check_family(family)
    rng = np.random.default_rng(seed)
    if family == "knapsack":
        weights = rng.uniform(0.1, 1.0, (1, n))
        return ILPBatch(c=-rng.uniform(0.1, 1.0, (instances, n)), A=weights,
                        b=np.array([0.3 * weights.sum()]), lb=np.zeros(n), ub=np.ones(n))
    if family == "set cover":
        A, b = -sample_cover(rng, n // 2, n), -np.ones(n // 2)
        return ILPBatch(c=rng.uniform(0.1, 1, (instances, n)), A=A, b=b, lb=np.zeros(n), ub=np.ones(n))
    box, m = family.split(" m=")
    lo, hi = (0, 1) if box == "binary" else (-5, 5)
    g = torch.Generator().manual_seed(seed)
    corner = torch.tensor([lo if rng.random() < 0.5 else hi for _ in range(n)], dtype=torch.float64)
    rows, sides = random_constraint_rows(int(m), n, lo, hi, generator=g, feasible_point=corner)
    c = rng.uniform(-0.5, 0.5, (instances, n))
    return ILPBatch(c=c / np.linalg.norm(c, axis=1, keepdims=True), A=rows.numpy(), b=sides.numpy(),
                    lb=np.full(n, lo), ub=np.full(n, hi))
