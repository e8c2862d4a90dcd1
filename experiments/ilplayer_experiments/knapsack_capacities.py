"""The multidimensional knapsack with its capacities predicted (Odece's second knapsack
setting, from a seeded generator of this project's, after Odece's): 50 items, 3 dimensions,
the item sizes and prices known per instance, the 3 capacities a degree-4 polynomial of 10
instance features with multiplicative noise. Stage 1 packs under the predicted capacities;
Stage 2, under the true ones, may only drop items (free). ``ilplayer experiment mkp --predict
capacities``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.gradients import CombOptNet
from ilplayer.layer import ILPLayer
from ilplayer.losses import FeasibilityLoss, PostHocRegretLoss, RelaxedPostHocLoss
from ilplayer.metrics.two_stage import TwoStage
from ilplayer.oracle import Oracle
from ilplayer.program import Program
from ilplayer_experiments.multi_knapsack import (
    DEGREE,
    DIMENSIONS,
    FEATURES,
    ITEMS,
    MKP_METHODS,
    NOISE,
    fit_on,
    record_settings,
)
from ilplayer_experiments.two_stage_runs import BASELINES, regressor

PROGRAM = Program(lb=0, ub=1, sense="max")


@dataclass(frozen=True)
class CapacityData:
    """Features (N, 10), true capacities (N, 3), and the known sizes (N, 3, 50) and prices (N, 50)."""

    x: np.ndarray
    capacity: np.ndarray
    sizes: np.ndarray
    prices: np.ndarray

    def take(self, rows: slice) -> CapacityData:
        return CapacityData(self.x[rows], self.capacity[rows], self.sizes[rows], self.prices[rows])


def generate(count: int, seed: int = 0) -> CapacityData:
    """Capacities ``5 m ((B x / sqrt(p) + 3)^deg + 1) / 3.5^deg * e / 10`` (m items, p
    features, ``B`` a fixed 0-1 matrix, ``e ~ U[1 - NOISE, 1 + NOISE]``, at most m / 2), sizes
    U[1, 2), prices Gumbel(100, 20) from 5 (Odece's generator's forms)."""
    rng = np.random.default_rng([seed, 1])
    basis = rng.binomial(1, 0.5, (DIMENSIONS, FEATURES))
    x = rng.uniform(0.0, 1.0, (count, FEATURES))
    signal = ((x @ basis.T / np.sqrt(FEATURES) + 3.0) ** DEGREE + 1.0) / 3.5**DEGREE
    capacity = (
        np.minimum(5 * ITEMS * signal * rng.uniform(1 - NOISE, 1 + NOISE, signal.shape), 5 * ITEMS)
        / 10
    )
    sizes = rng.uniform(1.0, 2.0, (count, DIMENSIONS, ITEMS))
    prices = np.clip(rng.gumbel(100.0, 20.0, (count, ITEMS)), 5.0, None)
    return CapacityData(x, capacity, sizes, prices)


class CapacityNet(torch.nn.Module):
    """An instance's 3 capacities from its 10 features (positive: softplus), in the training
    capacities' units."""

    def __init__(self, train: CapacityData, hidden: int = 32) -> None:
        super().__init__()
        self.level: torch.Tensor
        self.register_buffer("level", torch.from_numpy(train.capacity.mean(0)))
        self.body = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, DIMENSIONS)
        ).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.level * torch.nn.functional.softplus(
            self.body(x) + 0.5413
        )  # softplus(0.5413) = 1


def _predict(
    method: str,
    train: CapacityData,
    test: CapacityData,
    solver: str,
    epochs: dict[str, int],
    seed: int,
) -> torch.Tensor:
    """(test, 3) the predicted capacities."""
    if method in BASELINES:
        model = regressor(method, seed).fit(train.x, train.capacity)
        return torch.from_numpy(model.predict(test.x))
    torch.manual_seed(seed)
    net = CapacityNet(train)
    x, capacity = torch.from_numpy(train.x), torch.from_numpy(train.capacity)
    c, sizes = torch.from_numpy(train.prices), torch.from_numpy(train.sizes)
    squared = lambda batch: (((net(x[batch]) - capacity[batch]) / net.level) ** 2).mean()
    fit_on(net, squared, len(x), 200, 0.01, seed)
    if method == "combopt":
        with Oracle(PROGRAM, solver=solver) as oracle:
            y_true, _ = oracle(c, sizes, capacity)
            layer = ILPLayer(oracle, CombOptNet(tau=0.5))
            fit_on(
                net,
                lambda batch: (
                    (layer(c[batch], sizes[batch], net(x[batch])) - y_true[batch])
                    .abs()
                    .sum(-1)
                    .mean()
                ),
                len(x),
                epochs["combopt"],
                1e-3,
                seed,
            )
    elif method in ("post-hoc", "relaxed"):
        with TwoStage(PROGRAM, solver) as stages:
            optimal = stages.optimal_values(c, sizes, capacity)
        if method == "post-hoc":
            loss: Any = PostHocRegretLoss(
                PROGRAM, solver=solver, changes="drop", sigma=0.5, samples=1, seed=seed
            )
            step = lambda batch: loss(
                net(x[batch]), c=c[batch], A=sizes[batch], b=capacity[batch], optimal=optimal[batch]
            )
        else:  # 2S's surrogate in units of the mean optimum, beside the squared error
            loss, scale = (
                RelaxedPostHocLoss(PROGRAM, changes="drop", mu=0.02),
                optimal.nanmean().item(),
            )
            step = lambda batch: (
                loss(
                    b_pred=net(x[batch]),
                    c=c[batch],
                    A=sizes[batch],
                    b=capacity[batch],
                    optimal=optimal[batch],
                )
                / scale
                + squared(batch)
            )
        fit_on(net, step, len(x), epochs[method], 1e-3, seed)
        loss.close()
    elif method == "odece":
        feasibility = FeasibilityLoss(PROGRAM, solver=solver, alpha=0.5, margin=0.5)
        with feasibility.oracle:
            fit_on(
                net,
                lambda batch: (
                    feasibility(b_pred=net(x[batch]), c=c[batch], A=sizes[batch], b=capacity[batch])
                    + squared(batch)
                ),
                len(x),
                epochs["odece"],
                1e-3,
                seed,
            )
    with torch.no_grad():
        return net(torch.from_numpy(test.x))


def run_capacities(
    out: str | Path = "results/mkp",
    methods: Sequence[str] = MKP_METHODS,
    solver: str = "highs",
    train: int = 1000,
    test: int = 500,
    seed: int = 0,
    epochs: dict[str, int] | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every method on one generated data set; ``mkp-capacities-seed{S}.json``."""
    unknown = sorted(set(methods) - set(MKP_METHODS))
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; choose from {list(MKP_METHODS)}")
    epochs = {"combopt": 3, "post-hoc": 3, "relaxed": 3, "odece": 3, **(epochs or {})}
    data = generate(train + test, seed)
    part_train, part_test = data.take(slice(0, train)), data.take(slice(train, train + test))
    c, sizes = torch.from_numpy(part_test.prices), torch.from_numpy(part_test.sizes)
    capacity = torch.from_numpy(part_test.capacity)
    rows = []
    with TwoStage(PROGRAM, solver) as stages:
        optimal = stages.optimal_values(c, sizes, capacity)
        for method in methods:
            started = time.perf_counter()
            predicted = _predict(method, part_train, part_test, solver, epochs, seed)
            y1, _ = stages.optimum(c, sizes, predicted)
            trained = time.perf_counter() - started
            scores = stages.score(y1, c, sizes, capacity, changes="drop", optimal=optimal)
            rows.append(
                {
                    "method": method,
                    "post_hoc_regret": scores.mean,
                    "normalised": scores.normalised,
                    "infeasibility_rate": scores.infeasibility_rate,
                    "train_s": trained,
                    "capacity_mse": float(((predicted - capacity) ** 2).mean()),
                }
            )
            report(
                f"mkp capacities {method}: post-hoc regret {scores.mean:.3f} (normalised "
                f"{100 * scores.normalised:.2f} %), Stage 1 infeasible {100 * scores.infeasibility_rate:.1f} % "
                f"({trained:.0f} s)"
            )
    record = {**record_settings("mkp-capacities", seed, solver, train, test, epochs), "rows": rows}
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"mkp-capacities-seed{seed}.json").write_text(json.dumps(record, indent=1))
    return record
