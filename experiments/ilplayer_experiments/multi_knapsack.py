"""A multidimensional knapsack whose item sizes are predicted from features (the setting of
Mandi et al.'s Odece, NeurIPS 2025, from a seeded generator of this project's): 50 items, 3
size dimensions, 10 features per item; the prices and capacities are known. Stage 1 packs with
the predicted sizes; Stage 2, with the true sizes, may only drop items (free): the post-hoc
regret is what the dropping leaves of the true optimum. ``ilplayer experiment mkp``."""

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
from ilplayer_experiments.two_stage_models import resumed, summarise
from ilplayer_experiments.two_stage_runs import BASELINES, batches, regressor

ITEMS, DIMENSIONS, FEATURES = 50, 3, 10
MKP_METHODS = (*BASELINES, "mse", "combopt", "post-hoc", "relaxed", "odece")
"""The baselines, the squared-error network and its fine-tunes: CombOptNet's gradient, the
perturbed post-hoc regret, 2S's relaxed surrogate and Odece's losses."""
DEGREE, NOISE = (
    4,
    0.5,
)  # the sizes' polynomial degree in the features and their multiplicative noise


@dataclass(frozen=True)
class KnapsackData:
    """Train and test instances: item features (N, 50, 10), true sizes (N, 3, 50); the prices
    (50,) and capacities (3,) are the same for all."""

    x_train: np.ndarray
    sizes_train: np.ndarray
    x_test: np.ndarray
    sizes_test: np.ndarray
    prices: np.ndarray
    capacity: np.ndarray


def generate(train: int = 1000, test: int = 500, seed: int = 0) -> KnapsackData:
    """Sizes ``1 + ((B x_j / sqrt(p) + 3)^deg / 3.5^deg) * e``, ``e ~ U[1 - NOISE, 1 + NOISE]``,
    ``B`` a fixed 0-1 matrix (PyEPO's polynomial map, here for the sizes); prices U[1, 10];
    each capacity a third of the items' expected total size."""
    rng = np.random.default_rng(seed)
    basis = rng.binomial(1, 0.5, (DIMENSIONS, FEATURES))
    prices = rng.uniform(1.0, 10.0, ITEMS)

    def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(count, ITEMS, FEATURES))
        signal = (
            np.einsum("dp,kjp->kdj", basis, x) / np.sqrt(FEATURES) + 3.0
        ) ** DEGREE / 3.5**DEGREE
        return x, 1.0 + signal * rng.uniform(1 - NOISE, 1 + NOISE, signal.shape)

    x_train, sizes_train = draw(train)
    x_test, sizes_test = draw(test)
    capacity = sizes_train.mean(axis=(0, 2)) * ITEMS / 3.0
    return KnapsackData(x_train, sizes_train, x_test, sizes_test, prices, capacity)


def program_of(data: KnapsackData) -> Program:
    """max prices · y subject to sizes y <= capacity (the sizes per call), y in {0, 1}^50."""
    return Program(lb=0, ub=1, sense="max", c=torch.from_numpy(data.prices))


class SizeNet(torch.nn.Module):
    """An item's 3 sizes from its 10 features (positive: 1 + softplus)."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, DIMENSIONS)
        ).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, 50, 10) -> (B, 3, 50)
        return (1.0 + torch.nn.functional.softplus(self.body(x))).transpose(-1, -2)


def fit_on(
    model: torch.nn.Module,
    step: Callable[[np.ndarray], torch.Tensor],
    count: int,
    epochs: int,
    lr: float,
    seed: int,
    batch_size: int = 32,
) -> None:
    """Adam on ``step(batch)`` (the loss of a batch of instance indices) for ``epochs``."""
    rng = np.random.default_rng(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        for batch in batches(count, batch_size, rng):
            optimiser.zero_grad()
            step(batch).backward()
            optimiser.step()


def _predict(
    method: str,
    data: KnapsackData,
    program: Program,
    solver: str,
    epochs: dict[str, int],
    seed: int,
) -> torch.Tensor:
    """(test, 3, 50) predicted sizes."""
    if method in BASELINES:
        model = regressor(method, seed).fit(
            data.x_train.reshape(-1, FEATURES),
            data.sizes_train.transpose(0, 2, 1).reshape(-1, DIMENSIONS),
        )
        flat = model.predict(data.x_test.reshape(-1, FEATURES)).reshape(
            len(data.x_test), ITEMS, DIMENSIONS
        )
        return torch.from_numpy(np.ascontiguousarray(flat.transpose(0, 2, 1)))
    torch.manual_seed(seed)
    net = SizeNet()
    x, sizes = torch.from_numpy(data.x_train), torch.from_numpy(data.sizes_train)
    fit_on(net, lambda batch: ((net(x[batch]) - sizes[batch]) ** 2).mean(), len(x), 60, 0.01, seed)
    c, capacity = torch.as_tensor(program.c), torch.from_numpy(data.capacity)
    if method == "combopt":
        with Oracle(program, solver=solver) as oracle:
            y_true, _ = oracle(c.expand(len(x), -1), sizes, capacity)
            layer = ILPLayer(oracle, CombOptNet(tau=0.5))
            fit_on(
                net,
                lambda batch: (
                    (layer(c.expand(len(batch), -1), net(x[batch]), capacity) - y_true[batch])
                    .abs()
                    .sum(-1)
                    .mean()
                ),
                len(x),
                epochs["combopt"],
                1e-3,
                seed,
            )
    elif method == "post-hoc":
        loss = PostHocRegretLoss(
            program, solver=solver, changes="drop", sigma=0.1, samples=1, seed=seed
        )
        with loss.stages:
            optimal = loss.stages.optimal_values(c.expand(len(x), -1), sizes, capacity)
            fit_on(
                net,
                lambda batch: loss(
                    A_pred=net(x[batch]), c=c, A=sizes[batch], b=capacity, optimal=optimal[batch]
                ),
                len(x),
                epochs["post-hoc"],
                1e-3,
                seed,
            )
        loss.close()
    elif (
        method == "relaxed"
    ):  # 2S's surrogate, in units of the mean optimum, beside the squared error
        with TwoStage(program, solver) as stages:
            optimal = stages.optimal_values(c.expand(len(x), -1), sizes, capacity)
        relaxed, scale = (
            RelaxedPostHocLoss(program, changes="drop", mu=0.02),
            optimal.nanmean().item(),
        )
        fit_on(
            net,
            lambda batch: (
                relaxed(
                    A_pred=net(x[batch]), c=c, A=sizes[batch], b=capacity, optimal=optimal[batch]
                )
                / scale
                + ((net(x[batch]) - sizes[batch]) ** 2).mean()
            ),
            len(x),
            epochs["relaxed"],
            1e-3,
            seed,
        )
    elif method == "odece":
        feasibility = FeasibilityLoss(program, solver=solver, alpha=0.5, margin=0.5)
        with feasibility.oracle:
            fit_on(
                net,
                lambda batch: (
                    feasibility(A_pred=net(x[batch]), c=c, A=sizes[batch], b=capacity)
                    + ((net(x[batch]) - sizes[batch]) ** 2).mean()
                ),
                len(x),
                epochs["odece"],
                1e-3,
                seed,
            )
    with torch.no_grad():
        return net(torch.from_numpy(data.x_test))


def record_settings(
    task: str, seed: int, solver: str, train: int, test: int, epochs: dict[str, int]
) -> dict[str, Any]:
    """What a multidimensional-knapsack record says of its run (beside its rows)."""
    return {
        "task": task,
        "seed": seed,
        "solver": solver,
        "train": train,
        "test": test,
        "epochs": epochs,
        "items": ITEMS,
        "dimensions": DIMENSIONS,
        "features": FEATURES,
    }


def run_mkp(
    out: str | Path = "results/mkp",
    methods: Sequence[str] = MKP_METHODS,
    solver: str = "highs",
    train: int = 1000,
    test: int = 500,
    seed: int = 0,
    epochs: dict[str, int] | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every method on one generated data set: post-hoc regret (items dropped free), its
    normalised form and the infeasibility rate of the Stage-1 packings; ``mkp-seed{S}.json``.
    A method that record already holds with the same settings is kept, not run again."""
    unknown = sorted(set(methods) - set(MKP_METHODS))
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; choose from {list(MKP_METHODS)}")
    epochs = {"combopt": 3, "post-hoc": 3, "relaxed": 3, "odece": 3, **(epochs or {})}
    settings = record_settings("mkp", seed, solver, train, test, epochs)
    path = Path(out) / f"mkp-seed{seed}.json"
    rows = resumed(path, settings)
    done = {row["method"] for row in rows}
    data = generate(train, test, seed)
    program = program_of(data)
    c, capacity = torch.as_tensor(program.c), torch.from_numpy(data.capacity)
    true_sizes = torch.from_numpy(data.sizes_test)
    with TwoStage(program, solver) as stages, Oracle(program, solver=solver) as oracle:
        optimal = stages.optimal_values(c.expand(test, -1), true_sizes, capacity)
        for method in (method for method in methods if method not in done):
            started = time.perf_counter()
            predicted = _predict(method, data, program, solver, epochs, seed)
            y1, _ = oracle(c.expand(test, -1), predicted, capacity)
            trained = time.perf_counter() - started
            scores = stages.score(y1, c, true_sizes, capacity, changes="drop", optimal=optimal)
            rows.append(
                {
                    "method": method,
                    "post_hoc_regret": scores.mean,
                    "normalised": scores.normalised,
                    "infeasibility_rate": scores.infeasibility_rate,
                    "train_s": trained,
                    "size_mse": float(((predicted - true_sizes) ** 2).mean()),
                }
            )
            report(
                f"mkp {method}: post-hoc regret {scores.mean:.3f} (normalised {100 * scores.normalised:.2f} %), "
                f"Stage 1 infeasible {100 * scores.infeasibility_rate:.1f} % ({trained:.0f} s)"
            )
            record = {**settings, "rows": rows}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1))
    return {**settings, "rows": rows}


def run_mkp_seeds(
    out: str | Path = "results/mkp",
    runs: int = 10,
    first_seed: int = 0,
    report: Callable[[str], None] = print,
    **options: Any,
) -> dict[str, Any]:
    """`run_mkp` on the data sets of ``runs`` seeds from ``first_seed`` (each generated and
    trained anew; what a seed's record holds is kept), then every method's mean and std over
    them, written to ``mkp-seeds.json``."""
    records = [
        run_mkp(out, seed=seed, report=report, **options)
        for seed in range(first_seed, first_seed + runs)
    ]
    record = summarise_seeds(records)
    Path(out, "mkp-seeds.json").write_text(json.dumps(record, indent=1))
    return record


def summarise_seeds(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The settings of ``run_mkp`` records of several seeds and every method's mean and std
    over them."""
    rows = [row for record in records for row in record["rows"]]
    names = ("post_hoc_regret", "normalised", "infeasibility_rate", "train_s", "size_mse")
    summary = summarise(rows, (), names)
    settings = {key: value for key, value in records[0].items() if key not in ("seed", "rows")}
    return {**settings, "seeds": [record["seed"] for record in records], "summary": summary}
