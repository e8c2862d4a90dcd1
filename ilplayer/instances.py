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

__all__ = ["INITIAL_OFFSET", "MAX_SUBSET_SIZE", "MIN_COVER", "random_constraint_rows", "random_costs",
           "sample_cover", "sample_random_constraints"]

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
