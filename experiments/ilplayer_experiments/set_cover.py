"""Weighted set cover (paper, "Weighted Set Covering"): learn the covering constraints of a
fixed family of subsets from (cost, optimal sub-cover) pairs.

A universe of ``m`` elements, ``n = 2m`` distinct subsets of at most 3 elements that together
cover each element at least twice (the reference generator's rule); an instance is a positive
cost per subset; its label is the cheapest sub-family that still covers every element:
``min c·y s.t. -M y <= -1, y in {0, 1}^n`` with ``M`` the element-by-subset incidence matrix.
"""

from __future__ import annotations

import numpy as np
import torch

from ilplayer.core.records import Status
from ilplayer.layer import solve
from ilplayer.learning.settings import HiddenConstraintsData
from ilplayer.testing.instances import MIN_COVER, sample_cover
from ilplayer_experiments.cache import cached

__all__ = ["make_dataset"]


def make_dataset(
    universe: int = 4,
    train_size: int = 1600,
    test_size: int = 1000,
    seed: int = 0,
    solver: str = "bruteforce",
    cache: bool = False,
) -> HiddenConstraintsData:
    """Subsets (n = 2 * universe), positive uniform costs normalised to unit length, labels."""
    if cache:
        params = dict(
            universe=universe, train=train_size, test=test_size, seed=seed, min_cover=MIN_COVER
        )
        return HiddenConstraintsData(
            **cached(
                "wsc",
                params,
                lambda: make_dataset(universe, train_size, test_size, seed, solver).to_dict(),
            )
        )
    rng = np.random.default_rng([seed, universe])
    n = 2 * universe
    incidence = sample_cover(rng, universe, n)
    A, b = torch.tensor(-incidence), -torch.ones(universe, dtype=torch.float64)

    def costs(k: int) -> torch.Tensor:
        c = torch.tensor(rng.uniform(0.0, 1.0, (k, n)))
        return c / torch.linalg.vector_norm(c, dim=-1, keepdim=True)

    c_train, c_test = costs(train_size), costs(test_size)
    y_train, s_train = solve(c_train, A, b, 0, 1, solver=solver)
    y_test, s_test = solve(c_test, A, b, 0, 1, solver=solver)
    if not ((s_train == Status.OPTIMAL).all() and (s_test == Status.OPTIMAL).all()):
        raise RuntimeError("dataset generation left instances unsolved; check the solver")
    return HiddenConstraintsData(A, b, 0, 1, c_train, y_train, c_test, y_test)
