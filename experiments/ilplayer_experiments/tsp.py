"""PyEPO's travelling salesperson task for [`ILPLayer`][ilplayer.ILPLayer]: its data generator,
and the tours of a formulation (`ilplayer.testing.formulations` builds the GG and MTZ programs)."""

from __future__ import annotations

import numpy as np
import torch

from ilplayer.testing.formulations import TspProgram

__all__ = ["solve_tours", "tsp_data"]


def tsp_data(
    num_data: int,
    num_features: int,
    num_nodes: int,
    deg: int = 1,
    noise_width: float = 0.0,
    seed: int = 135,
) -> tuple[np.ndarray, np.ndarray]:
    """``pyepo.data.tsp.genData``, the same numbers for the same arguments (a test checks them
    against PyEPO when it is installed)."""
    from scipy.spatial import distance

    rnd = np.random.RandomState(seed)
    m, edges = num_nodes, num_nodes * (num_nodes - 1) // 2
    coords = np.concatenate((rnd.uniform(-2, 2, (m // 2, 2)), rnd.normal(0, 1, (m - m // 2, 2))))
    dist_upper = distance.pdist(coords, "euclidean")
    B = rnd.binomial(1, 0.5, (edges, num_features)) * rnd.uniform(-2, 2, (edges, num_features))
    x = rnd.normal(0, 1, (num_data, num_features))
    feature_cost = ((x @ B.T / np.sqrt(num_features) + 3) ** deg) / 3 ** (deg - 1)
    noise = rnd.uniform(1 - noise_width, 1 + noise_width, (num_data, edges))
    c = np.around(dist_upper + feature_cost * noise, decimals=4).astype(np.float32)
    return x, c


def solve_tours(
    program: TspProgram, c: torch.Tensor, solver: str = "highs"
) -> tuple[torch.Tensor, torch.Tensor]:
    """The optimal tours' edges (B, edges) for edge costs ``c`` (B, edges), and the statuses."""
    from ilplayer.layer import solve

    t = lambda a: torch.as_tensor(a, dtype=torch.float64)
    return solve(
        c.double(),
        t(program.A),
        t(program.b),
        program.lb,
        program.ub,
        solver=solver,
        A_eq=t(program.A_eq),
        b_eq=t(program.b_eq),
        integrality=program.integrality,
        cost_map=t(program.embed),
    )
