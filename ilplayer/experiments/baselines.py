"""Baselines of the paper's demonstrations that need no ILP layer.

* MLP: agnostic to any constraint, a network predicts the solution from the cost vector;
  its output, mapped back to the box, is rounded to the nearest integer point.
* knapsack MLP: the item embeddings through a three-layer MLP, rounded (supplementary).
* box-constrained: the solution of the problem constrained only by the box, which is
  ``HiddenConstraintsData.box_baseline_accuracy`` (no training).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ilplayer.experiments.training import HiddenConstraintsData, exact_match, normalize_solution

__all__ = ["train_knapsack_mlp", "train_mlp_baseline"]


def train_mlp_baseline(data: HiddenConstraintsData, *, epochs: int = 100, lr: float = 5e-4,
                       batch_size: int = 8, hidden: int = 512, seed: int = 0,
                       on_epoch: Callable[[dict[str, float]], None] | None = None
                       ) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    """A two-layer MLP (ReLU, sigmoid output in [-0.5, 0.5]) trained with the MSE against the
    normalised solutions; evaluated on the rounded, de-normalised prediction."""
    torch.manual_seed(int(np.random.SeedSequence([seed, 3]).generate_state(1)[0]))
    n = data.c_train.shape[1]
    model = torch.nn.Sequential(torch.nn.Linear(n, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, n), torch.nn.Sigmoid()).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, 2]).generate_state(1)[0]))
    target = normalize_solution(data.y_train, data.lb, data.ub)

    def predict(c: torch.Tensor) -> torch.Tensor:
        return torch.round(model(c) * (data.ub - data.lb) + data.lb)  # [0, 1] -> the box

    history: list[dict[str, float]] = []
    for epoch in range(epochs):
        order = torch.randperm(len(data.c_train), generator=g)
        total = 0.0
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            loss = torch.nn.functional.mse_loss(model(data.c_train[rows]) - 0.5, target[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(rows)
        with torch.no_grad():
            accuracy = exact_match(predict(data.c_test), data.y_test)
        record = {"epoch": epoch + 1, "loss": total / len(order), "accuracy": accuracy}
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
    return model, history


def train_knapsack_mlp(train: Any, test: Any, embed_train: torch.Tensor, embed_test: torch.Tensor,
                       *, epochs: int = 100, lr: float = 5e-4, batch_size: int = 8, seed: int = 0,
                       hidden: int = 100, on_epoch: Callable[[dict[str, float]], None] | None = None
                       ) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    """Supplementary, knapsack MLP baseline: the ten item embeddings, concatenated, through
    three layers of width 100 (ReLU), no output nonlinearity; the output is rounded."""
    torch.manual_seed(int(np.random.SeedSequence([seed, 3]).generate_state(1)[0]))
    items, dim = embed_train.shape[1:]
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(items * dim, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, items))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, 2]).generate_state(1)[0]))
    target = train.y.float() - 0.5
    history: list[dict[str, float]] = []
    for epoch in range(epochs):
        order = torch.randperm(len(target), generator=g)
        total = 0.0
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            loss = torch.nn.functional.mse_loss(model(embed_train[rows]), target[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(rows)
        with torch.no_grad():
            y_test = torch.round(model(embed_test) + 0.5).clamp(0, 1)
        record = {"epoch": epoch + 1, "loss": total / len(order),
                  "accuracy": exact_match(y_test.double(), test.y.double())}
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
    return model, history
