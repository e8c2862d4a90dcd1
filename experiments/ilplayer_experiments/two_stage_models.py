"""What the text-feature two-stage benchmarks (the knapsack, the brass alloy) train: a network
from an item's sentence embedding to its unknown numbers, a calibration of it, its fit on the
squared error, and a decision-focused fine-tune kept at its best epoch."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer_experiments.two_stage_runs import batches, regressor


class ItemNet(torch.nn.Module):
    """An item's ``k`` unknown numbers from its embedding (standardised with the training
    items'), in the training targets' units: (..., d) -> (..., k)."""

    def __init__(self, features: torch.Tensor, targets: torch.Tensor, hidden: int = 256) -> None:
        super().__init__()
        d, k = features.shape[-1], targets.shape[-1]
        flat, values = features.reshape(-1, d), targets.reshape(-1, k)
        self.mean: torch.Tensor
        self.scale: torch.Tensor
        self.centre: torch.Tensor
        self.spread: torch.Tensor
        self.register_buffer("mean", values.mean(0))
        self.register_buffer("scale", values.std(0).clamp(min=1e-9))
        self.register_buffer("centre", flat.mean(0))
        self.register_buffer("spread", flat.std(0).clamp(min=1e-9))
        self.body = torch.nn.Sequential(
            torch.nn.Linear(d, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, k)
        ).double()

    def standardised(self, features: torch.Tensor) -> torch.Tensor:
        """(..., k) the standardised predictions."""
        return self.body((features - self.centre) / self.spread)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.mean + self.scale * self.standardised(features)

    def squared_error(self, predicted: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The mean squared error of predictions in the targets' units, standardised."""
        return (((predicted - targets) / self.scale) ** 2).mean()


class Calibrated(torch.nn.Module):
    """A frozen network's predictions, each output ``mean + shrink * (value - mean) + shift``:
    the ``2 k`` parameters the post-hoc regret's perturbed gradient trains."""

    def __init__(self, net: ItemNet) -> None:
        super().__init__()
        self.net = copy.deepcopy(net).requires_grad_(False)
        k = net.mean.shape[0]
        self.shrink = torch.nn.Parameter(torch.ones(k, dtype=torch.float64))
        self.shift = torch.nn.Parameter(torch.zeros(k, dtype=torch.float64))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        mean = self.net.mean
        return mean + self.shrink * (self.net(features) - mean) + self.shift


def item_regression(
    name: str, features: torch.Tensor, targets: torch.Tensor, test_features: torch.Tensor, seed: int
) -> torch.Tensor:
    """A two-stage baseline: the regressor ``name`` fitted on every training item's (embedding,
    its ``k`` targets), predicting the test items': (..., d) and (..., k) -> (test ..., k)."""
    d, k = features.shape[-1], targets.shape[-1]
    model = regressor(name, seed)
    if name == "rf":  # a third of the features per split: the forest in a minute, not three
        model.set_params(randomforestregressor__max_features=0.33)
    model = model.fit(features.reshape(-1, d).numpy(), targets.reshape(-1, k).numpy())
    predicted = model.predict(test_features.reshape(-1, d).numpy()).reshape(
        *test_features.shape[:-1], k
    )
    return torch.from_numpy(predicted)


def fit_squared_error(
    features: torch.Tensor, targets: torch.Tensor, seed: int, epochs: int = 300, lr: float = 1e-3
) -> ItemNet:
    """An [ItemNet][ilplayer_experiments.two_stage_models.ItemNet] on the targets' squared
    error (standardised), per item, AdamW in batches of 128 items."""
    torch.manual_seed(seed)
    net = ItemNet(features, targets)
    k = targets.shape[-1]
    flat, values = features.reshape(-1, features.shape[-1]), targets.reshape(-1, k)
    optimiser = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for batch in batches(len(values), 128, rng):
            optimiser.zero_grad()
            net.squared_error(net(flat[batch]), values[batch]).backward()
            optimiser.step()
    return net


def fine_tune(
    model: torch.nn.Module,
    step: Callable[[np.ndarray], torch.Tensor],
    training_regret: Callable[[], float],
    count: int,
    epochs: int,
    lr: float,
    seed: int,
    batch_size: int = 20,
) -> int:
    """Adam on ``step(batch)`` (the loss of a batch of instance indices) for ``epochs``, the
    model kept at the epoch (or the start, 0) of least ``training_regret()``; returns it."""
    rng = np.random.default_rng(seed)
    best: tuple[float, int, dict[str, Any]] = (
        training_regret(),
        0,
        copy.deepcopy(model.state_dict()),
    )
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    for epoch in range(1, epochs + 1):
        for batch in batches(count, batch_size, rng):
            optimiser.zero_grad()
            step(batch).backward()
            optimiser.step()
        if (regret := training_regret()) < best[0]:
            best = (regret, epoch, copy.deepcopy(model.state_dict()))
    model.load_state_dict(best[2])
    return best[1]


SUMMARISED = ("post_hoc_regret", "infeasibility_rate", "train_s")


def summarise(
    rows: list[dict[str, Any]], cell: tuple[str, ...], names: tuple[str, ...] = SUMMARISED
) -> list[dict[str, Any]]:
    """Mean and std over the runs of each of ``names`` (the post-hoc regret, infeasibility rate
    and training time), per method and ``cell`` (the rows' keys that name a setting)."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["method"], *(row[key] for key in cell)), []).append(row)
    return [
        {
            "method": key[0],
            **dict(zip(cell, key[1:])),
            "runs": len(group),
            **{
                f"{name}_{stat}": float(fn([row[name] for row in group]))
                for name in names
                for stat, fn in (("mean", np.mean), ("std", np.std))
            },
        }
        for key, group in groups.items()
    ]


def resumed(path: Path, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the runs that a call with the same ``settings`` already saved at ``path``
    (none where there is no such record): a benchmark interrupted goes on from there."""
    if not path.exists():
        return []
    record = json.loads(path.read_text())
    same = json.loads(json.dumps(settings)) == {key: record.get(key) for key in settings}
    return list(record["rows"]) if same else []


def save_runs(
    path: Path,
    settings: dict[str, Any],
    rows: list[dict[str, Any]],
    cell: tuple[str, ...],
    **extra: Any,
) -> dict[str, Any]:
    """The record of the runs so far (settings, their summary, every row), written atomically."""
    record = {
        **settings,
        **extra,
        "runs": len({row["run"] for row in rows}),
        "summary": summarise(rows, cell),
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(record, indent=1))
    partial.replace(path)
    return record
