"""Random Constraints (paper, section "Random Constraints"; supplementary A): learn a hidden
constraint set ``(A, b)`` from pairs ``(c, y*)`` of costs and optimal solutions."""

from __future__ import annotations

import torch

from ilplayer.constraints import sample_random_constraints
from ilplayer.experiments.cache import cached
from ilplayer.experiments.training import HiddenConstraintsData
from ilplayer.layer import solve
from ilplayer.solver import Status

__all__ = ["BOXES", "make_dataset", "random_costs"]

BOXES = {"binary": (0, 1), "dense": (-5, 5)}


def random_costs(k: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """Cost vectors uniform in [-0.5, 0.5]^n, normalised to unit length."""
    c = torch.rand(k, n, generator=generator, dtype=torch.float64) - 0.5
    return c / torch.linalg.vector_norm(c, dim=-1, keepdim=True)


def make_dataset(num_variables: int = 16, num_constraints: int = 2, box: str = "binary",
                 train_size: int = 1600, test_size: int = 1000, seed: int = 0,
                 solver: str = "bruteforce", cache: bool = False) -> HiddenConstraintsData:
    """Sample hidden constraints (feasible at a random corner) and solve random costs.

    With ``cache=True`` the dataset is generated once and kept under ``cache_dir()``; the
    solver does not enter the key (every backend returns the same optimal solutions, ties
    aside).
    """
    if box not in BOXES:
        raise ValueError(f"box must be one of {sorted(BOXES)}, got {box!r}")
    if cache:
        params = dict(n=num_variables, m=num_constraints, box=box, train=train_size,
                      test=test_size, seed=seed)
        return HiddenConstraintsData(**cached("rc", params, lambda: make_dataset(
            num_variables, num_constraints, box, train_size, test_size, seed, solver).to_dict()))
    lb, ub = BOXES[box]
    g = torch.Generator().manual_seed(seed)
    corner = torch.where(torch.rand(num_variables, generator=g) < 0.5, float(lb), float(ub))
    normals, offsets, origins = sample_random_constraints(
        num_constraints, num_variables, lb, ub, generator=g, feasible_point=corner)
    A, b = normals, offsets + (normals * origins).sum(-1)
    c_train, c_test = random_costs(train_size, num_variables, g), random_costs(test_size, num_variables, g)
    y_train, s_train = solve(c_train, A, b, lb, ub, solver=solver)
    y_test, s_test = solve(c_test, A, b, lb, ub, solver=solver)
    if not ((s_train == Status.OPTIMAL).all() and (s_test == Status.OPTIMAL).all()):
        raise RuntimeError("dataset generation left instances unsolved; check the solver")
    return HiddenConstraintsData(A, b, lb, ub, c_train, y_train, c_test, y_test)


