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

import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.learning.loop import fit_epochs
from ilplayer.learning.settings import HiddenConstraintsData
from ilplayer.losses import normalize_solution
from ilplayer.metrics import exact_match

__all__ = ["train_knapsack_mlp", "train_mlp_baseline"]


def train_mlp_baseline(
    data: HiddenConstraintsData,
    *,
    epochs: int = 100,
    lr: float = 5e-4,
    batch_size: int = 8,
    hidden: int = 512,
    seed: int = 0,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    """A two-layer MLP (ReLU, sigmoid output in [-0.5, 0.5]) trained with the MSE against the
    normalised solutions; evaluated on the rounded, de-normalised prediction."""
    torch.manual_seed(derive_seed(seed, 3))
    n = data.c_train.shape[1]
    model = torch.nn.Sequential(
        torch.nn.Linear(n, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n), torch.nn.Sigmoid()
    ).double()
    target = normalize_solution(data.y_train, data.lb, data.ub)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        return torch.nn.functional.mse_loss(model(data.c_train[rows]) - 0.5, target[rows]), {}

    def evaluate() -> dict[str, float]:
        y_test = torch.round(
            model(data.c_test) * (data.ub - data.lb) + data.lb
        )  # [0, 1] -> the box
        return {"accuracy": exact_match(y_test, data.y_test)}

    history = fit_epochs(
        len(data.c_train),
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        batch_loss=batch_loss,
        evaluate=evaluate,
        on_epoch=on_epoch,
    )
    return model, history


def train_knapsack_mlp(
    train: Any,
    test: Any,
    embed_train: torch.Tensor,
    embed_test: torch.Tensor,
    *,
    epochs: int = 100,
    lr: float = 5e-4,
    batch_size: int = 8,
    seed: int = 0,
    hidden: int = 100,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    """Supplementary, knapsack MLP baseline: the ten item embeddings, concatenated, through
    three layers of width 100 (ReLU), no output nonlinearity; the output is rounded."""
    torch.manual_seed(derive_seed(seed, 3))
    items, dim = embed_train.shape[1:]
    model = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(items * dim, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, items),
    )
    target = train.y.float() - 0.5

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        return torch.nn.functional.mse_loss(model(embed_train[rows]), target[rows]), {}

    def evaluate() -> dict[str, float]:
        y_test = torch.round(model(embed_test) + 0.5).clamp(0, 1)
        return {"accuracy": exact_match(y_test.double(), test.y.double())}

    history = fit_epochs(
        len(target),
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        batch_loss=batch_loss,
        evaluate=evaluate,
        on_epoch=on_epoch,
    )
    return model, history
