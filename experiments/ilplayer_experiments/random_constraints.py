"""Random Constraints (paper, section "Random Constraints"; supplementary A): learn a hidden
constraint set ``(A, b)`` from pairs ``(c, y*)`` of costs and optimal solutions."""

from __future__ import annotations

import torch

from ilplayer.core.records import Status
from ilplayer.layer import solve
from ilplayer.learning.settings import HiddenConstraintsData
from ilplayer.testing.instances import random_constraint_rows, random_costs
from ilplayer_experiments.cache import cached

__all__ = ["BOXES", "make_dataset"]

BOXES = {"binary": (0, 1), "dense": (-5, 5)}


def make_dataset(
    num_variables: int = 16,
    num_constraints: int = 2,
    box: str = "binary",
    train_size: int = 1600,
    test_size: int = 1000,
    seed: int = 0,
    solver: str = "bruteforce",
    cache: bool = False,
) -> HiddenConstraintsData:
    """Sample hidden constraints (feasible at a random corner) and solve random costs.

    With ``cache=True`` the dataset is generated once and kept under ``cache_dir()``; the
    solver does not enter the key (every backend returns the same optimal solutions, ties
    aside).
    """
    if box not in BOXES:
        raise ValueError(f"box must be one of {sorted(BOXES)}, got {box!r}")
    if cache:
        params = dict(
            n=num_variables, m=num_constraints, box=box, train=train_size, test=test_size, seed=seed
        )
        return HiddenConstraintsData(
            **cached(
                "rc",
                params,
                lambda: make_dataset(
                    num_variables, num_constraints, box, train_size, test_size, seed, solver
                ).to_dict(),
            )
        )
    lb, ub = BOXES[box]
    g = torch.Generator().manual_seed(seed)
    corner = torch.where(torch.rand(num_variables, generator=g) < 0.5, float(lb), float(ub))
    A, b = random_constraint_rows(
        num_constraints, num_variables, lb, ub, generator=g, feasible_point=corner
    )
    c_train, c_test = (
        random_costs(train_size, num_variables, g),
        random_costs(test_size, num_variables, g),
    )
    y_train, s_train = solve(c_train, A, b, lb, ub, solver=solver)
    y_test, s_test = solve(c_test, A, b, lb, ub, solver=solver)
    if not ((s_train == Status.OPTIMAL).all() and (s_test == Status.OPTIMAL).all()):
        raise RuntimeError("dataset generation left instances unsolved; check the solver")
    return HiddenConstraintsData(A, b, lb, ub, c_train, y_train, c_test, y_test)
