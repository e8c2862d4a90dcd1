"""Random Constraints (paper, section "Random Constraints"; supplementary A): learn a hidden
constraint set ``(A, b)`` from pairs ``(c, y*)`` of costs and optimal solutions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ilplayer.constraints import StaticConstraints, sample_random_constraints
from ilplayer.experiments.cache import cached
from ilplayer.layer import ILPLayer, solve
from ilplayer.solver import Status

__all__ = ["BOXES", "RandomConstraintsData", "make_dataset", "normalize_solution",
           "train_static_constraints"]

BOXES = {"binary": (0, 1), "dense": (-5, 5)}


@dataclass(frozen=True)
class RandomConstraintsData:
    """A hidden constraint set and its solved instances (all float64)."""

    A: torch.Tensor
    b: torch.Tensor
    lb: int
    ub: int
    c_train: torch.Tensor
    y_train: torch.Tensor
    c_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def box_baseline_accuracy(self) -> float:
        """Accuracy of the box-only solution (no constraints): the "box-constrained" baseline."""
        y_box = torch.where(self.c_test < 0, float(self.ub), float(self.lb))
        return exact_match(y_box, self.y_test)


def exact_match(y: torch.Tensor, y_true: torch.Tensor) -> float:
    return (y == y_true).all(dim=-1).to(torch.float64).mean().item()


def random_costs(k: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """Cost vectors uniform in [-0.5, 0.5]^n, normalised to unit length."""
    c = torch.rand(k, n, generator=generator, dtype=torch.float64) - 0.5
    return c / torch.linalg.vector_norm(c, dim=-1, keepdim=True)


def make_dataset(num_variables: int = 16, num_constraints: int = 2, box: str = "binary",
                 train_size: int = 1600, test_size: int = 1000, seed: int = 0,
                 solver: str = "bruteforce", cache: bool = False) -> RandomConstraintsData:
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
        return cached("rc", params, lambda: make_dataset(num_variables, num_constraints, box,
                                                         train_size, test_size, seed, solver))
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
    return RandomConstraintsData(A, b, lb, ub, c_train, y_train, c_test, y_test)


def normalize_solution(y: torch.Tensor, lb: float, ub: float) -> torch.Tensor:
    """Map the box to [-0.5, 0.5]^n (supplementary A, the loss's scale)."""
    return (y - lb) / (ub - lb) - 0.5


def train_static_constraints(
    data: RandomConstraintsData, *, epochs: int = 100, lr: float = 5e-4, batch_size: int = 8,
    tau: float | None = 0.5, basis: str = "delta", origin: str = "learnable", seed: int = 0,
    solver: str = "bruteforce", solver_options: dict[str, Any] | None = None,
    executor: str | None = None, workers: int | None = None,
    model: StaticConstraints | None = None, target_accuracy: float | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[StaticConstraints, list[dict[str, float]]]:
    """Adam on the MSE between normalised solutions, as in the supplementary's table.

    Stops early once the held-out accuracy reaches ``target_accuracy`` (when given).
    Returns the model and one record per epoch (loss, accuracy, infeasible fraction).
    """
    m, n = data.A.shape
    if model is None:  # an init stream independent of the dataset's, whatever the seed
        init_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
        model = StaticConstraints(m, n, data.lb, data.ub, origin=origin, seed=init_seed,
                                  dtype=torch.float64)
    layer = ILPLayer(data.lb, data.ub, solver=solver, solver_options=solver_options, tau=tau,
                     basis=basis, executor=executor, workers=workers)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, 2]).generate_state(1)[0]))
    y_true = normalize_solution(data.y_train, data.lb, data.ub)
    history: list[dict[str, float]] = []
    try:
        for epoch in range(epochs):
            order = torch.randperm(len(data.c_train), generator=g)
            total_loss, infeasible = 0.0, 0
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                A, b = model()
                y = layer(data.c_train[rows], A, b)
                loss = torch.nn.functional.mse_loss(normalize_solution(y, data.lb, data.ub), y_true[rows])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total_loss += loss.item() * len(rows)
                infeasible += int((layer.last_status == Status.INFEASIBLE).sum())
            with torch.no_grad():
                y_test = layer(data.c_test, *model())
            record = {"epoch": epoch + 1, "loss": total_loss / len(order),
                      "accuracy": exact_match(y_test, data.y_test),
                      "infeasible_fraction": infeasible / len(order)}
            history.append(record)
            if on_epoch is not None:
                on_epoch(record)
            if target_accuracy is not None and record["accuracy"] >= target_accuracy:
                break
    finally:
        layer.close()
    return model, history
