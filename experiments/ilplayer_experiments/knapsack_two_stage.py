"""The 0-1 knapsack with unknown prices and sizes, scored by the post-hoc regret (Hu, Lee &
Lee's Two-Stage protocol) on this project's knapsack from text: 10 items an instance, each
described by one sentence that states its price and its weight, embedded by an offline sentence
model (MiniLM, 384-d; the authors used 4,096-d sentence features). Stage 1 packs
``max 0.2 price_hat . y  s.t.  weight_hat . y <= C`` with the predicted numbers; Stage 2, under the
true ones, may only drop items, at ``sigma * 0.2 * price`` each; capacities C in {100, 150, 200,
250}, sigma in {0.05, 0.25, 0.5}; 700 / 300 instances, ``runs`` random splits of 1,000.
``ilplayer experiment knapsack-2s``."""

from __future__ import annotations

import copy
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
from ilplayer_experiments.two_stage_models import (
    Calibrated,
    ItemNet,
    fine_tune,
    fit_squared_error,
    item_regression,
    resumed,
    save_runs,
)
from ilplayer_experiments.two_stage_runs import BASELINES

CAPACITIES = (100, 150, 200, 250)
SIGMAS = (0.05, 0.25, 0.5)
PROFIT = 0.2  # the share of an item's price that packing it earns (the authors' purchase fee)
TRAIN, TEST = 700, 300
PUBLISHED = {
    "source": "Hu, Lee & Lee, NeurIPS 2023, as quoted in issue 68 (10 splits)",
    "2s_range": [0.07, 1.26],
    "combopt_range": [9.45, 20.42],
    "capacity 100, sigma 0.05": {"best_baseline": 9.45, "2s": 1.26},
}
PROGRAM = Program(lb=0, ub=1, sense="max")


@dataclass(frozen=True)
class TextKnapsacks:
    """Item embeddings (N, 10, d) and the numbers their sentences state (N, 10), float64."""

    features: torch.Tensor
    prices: torch.Tensor
    weights: torch.Tensor

    def take(self, rows: Any) -> TextKnapsacks:
        return TextKnapsacks(self.features[rows], self.prices[rows], self.weights[rows])


def load(count: int = TRAIN + TEST, seed: int = 0, model: str = "minilm") -> TextKnapsacks:
    """The first ``count`` instances of the knapsack experiment's data (its seed), embedded."""
    from ilplayer_experiments.knapsack import make_instances
    from ilplayer_experiments.sentences import embed_items

    data = make_instances(count, seed)
    return TextKnapsacks(
        embed_items(data.sentences, model=model).to(torch.float64), data.prices, data.weights
    )


def split(
    data: TextKnapsacks, run: int, train: int, test: int
) -> tuple[TextKnapsacks, TextKnapsacks]:
    """Run ``run``'s random split (its own permutation of the instances)."""
    order = torch.from_numpy(np.random.default_rng([run, 68]).permutation(len(data.prices)))
    return data.take(order[:train]), data.take(order[train : train + test])


def _parameters(
    predicted: torch.Tensor, capacity: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stage 1's (c, A, b) from predicted (B, 10, 2) prices and weights."""
    return (
        PROFIT * predicted[..., 0],
        predicted[..., 1].unsqueeze(1),
        torch.tensor([float(capacity)]),
    )


DFL_METHODS = ("combopt", "post-hoc", "relaxed", "odece")
KS_METHODS = (*BASELINES, "mse", *DFL_METHODS)
"""The baselines, the squared-error network, and four ways to train it on decisions, each at
one (capacity, sigma): CombOptNet's gradient (on solutions), the post-hoc regret's perturbed
gradient (on a calibration), 2S's relaxed surrogate and Odece's losses (both with the squared
error beside them)."""


def _numbers(data: TextKnapsacks) -> torch.Tensor:
    """(N, 10, 2) the true prices and weights."""
    return torch.stack([data.prices, data.weights], -1)


def _fine_tune(
    method: str,
    net: ItemNet,
    train: TextKnapsacks,
    capacity: float,
    sigma: float,
    solver: str,
    stages: TwoStage,
    epochs: int,
    seed: int,
) -> tuple[torch.nn.Module, int]:
    """``method``'s training from the squared-error network, kept at the epoch (or the start,
    0) of least training post-hoc regret: ``(model, epoch kept)``."""
    truth = _numbers(train)
    c_true, A_true, b = _parameters(truth, capacity)
    optimal = stages.optimal_values(c_true, A_true, b)
    model: torch.nn.Module = Calibrated(net) if method == "post-hoc" else copy.deepcopy(net)
    loss, step = _objective(
        method, net, capacity, sigma, solver, seed, optimal, c_true, A_true, b, truth
    )

    def training_regret() -> float:
        with torch.no_grad():
            return score(stages, model(train.features), train, capacity, sigma, optimal).mean

    try:
        kept = fine_tune(
            model,
            lambda batch: step(model(train.features[batch]), batch),
            training_regret,
            len(c_true),
            epochs,
            0.02 if method == "post-hoc" else 1e-4,
            seed,
        )
    finally:
        loss.close()
    return model, kept


def _objective(
    method: str,
    net: ItemNet,
    capacity: float,
    sigma: float,
    solver: str,
    seed: int,
    optimal: torch.Tensor,
    c_true: torch.Tensor,
    A_true: torch.Tensor,
    b: torch.Tensor,
    truth: torch.Tensor,
) -> tuple[Any, Callable[[torch.Tensor, np.ndarray], torch.Tensor]]:
    """``(loss module, step)``: the training loss of a batch of predicted (B, 10, 2) numbers."""
    squared = lambda out, batch: net.squared_error(out, truth[batch])
    if method == "combopt":
        oracle = Oracle(PROGRAM, solver=solver)
        y_true, _ = oracle(c_true, A_true, b)
        layer = ILPLayer(oracle, CombOptNet(tau=0.5))
        return (
            oracle,
            lambda out, batch: (
                (layer(*_parameters(out, capacity)) - y_true[batch].to(out.dtype))
                .abs()
                .sum(-1)
                .mean()
            ),
        )
    if method == "post-hoc":
        noise = {
            "c": PROFIT * net.scale[0].item() / 4,
            "A": net.scale[1].item() / 4,
        }  # a quarter of the spread
        smoothed = PostHocRegretLoss(
            PROGRAM, solver=solver, changes="drop", sigma=noise, samples=1, seed=seed
        )

        def post_hoc(out: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
            c_pred, A_pred, _ = _parameters(out, capacity)
            return smoothed(
                A_pred=A_pred,
                c_pred=c_pred,
                c=c_true[batch],
                A=A_true[batch],
                b=b,
                penalty=sigma * c_true[batch],
                optimal=optimal[batch],
            )

        return smoothed, post_hoc
    if method == "relaxed":
        relaxed = RelaxedPostHocLoss(PROGRAM, changes="drop", mu=0.02)

        def two_stage(out: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
            c_pred, A_pred, _ = _parameters(out, capacity)
            return relaxed(
                A_pred=A_pred,
                c_pred=c_pred,
                c=c_true[batch],
                A=A_true[batch],
                b=b,
                penalty=sigma * c_true[batch],
                optimal=optimal[batch],
            ) + squared(out, batch)

        return relaxed, two_stage
    if method == "odece":
        feasibility = FeasibilityLoss(PROGRAM, solver=solver, alpha=0.5, margin=1.0)

        def odece(out: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
            c_pred, A_pred, _ = _parameters(out, capacity)
            return feasibility(
                A_pred=A_pred,
                c_pred=c_pred,
                c=c_true[batch],
                A=A_true[batch],
                b=b.expand(len(batch), 1),
            ) + squared(out, batch)

        return feasibility, odece
    raise ValueError(f"method: {method!r} is not one of {DFL_METHODS}")


def score(
    stages: TwoStage,
    predicted: torch.Tensor,
    data: TextKnapsacks,
    capacity: float,
    sigma: float,
    optimal: torch.Tensor | None = None,
) -> Any:
    """The two-stage scores of the packings of predicted (B, 10, 2) numbers."""
    c_true, A_true, b = _parameters(_numbers(data), capacity)
    y1, _ = stages.optimum(
        *_parameters(predicted, capacity)
    )  # Stage 1: the predicted program's optimum
    return stages.score(
        y1, c_true, A_true, b, penalty=sigma * c_true, changes="drop", optimal=optimal
    )


def baseline(name: str, train: TextKnapsacks, test: TextKnapsacks, seed: int) -> torch.Tensor:
    """(test, 10, 2): a regressor fitted on every training item's (embedding, (price, weight))."""
    return item_regression(name, train.features, _numbers(train), test.features, seed)


def _cells(
    method: str, capacities: Sequence[float], sigmas: Sequence[float]
) -> list[tuple[Any, Any]]:
    """The (capacity, sigma) each training of ``method`` is for ((None, None): every one)."""
    if method in DFL_METHODS:
        return [(capacity, sigma) for capacity in capacities for sigma in sigmas]
    return [(None, None)]


def run_knapsack(
    out: str | Path = "results/knapsack-2s",
    methods: Sequence[str] = KS_METHODS,
    capacities: Sequence[float] = CAPACITIES,
    sigmas: Sequence[float] = SIGMAS,
    runs: int = 10,
    train: int = TRAIN,
    test: int = TEST,
    solver: str = "bruteforce",
    model: str = "minilm",
    epochs: int = 3,
    seed: int = 0,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every method at every (capacity, sigma) over ``runs`` splits; writes
    ``knapsack-2s.json`` under ``out`` after each run (per run and summarised; a call with the
    same settings goes on from the runs saved) and returns the record. A decision-focused
    method's time includes the squared-error network it starts from."""
    unknown = sorted(set(methods) - set(KS_METHODS))
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; choose from {list(KS_METHODS)}")
    settings = {
        "task": "knapsack-2s",
        "methods": list(methods),
        "solver": solver,
        "sentence_model": model,
        "train": train,
        "test": test,
        "seed": seed,
        "epochs": epochs,
        "capacities": list(capacities),
        "sigmas": list(sigmas),
    }
    path = Path(out) / "knapsack-2s.json"
    rows = resumed(path, settings)
    record = save_runs(path, settings, rows, ("capacity", "sigma"), published=PUBLISHED)
    data = load(train + test, seed, model)
    with TwoStage(PROGRAM, solver) as stages:
        for run in sorted(set(range(runs)) - {row["run"] for row in rows}):
            part_train, part_test = split(data, run, train, test)
            truth = _numbers(part_test)
            optima = {
                capacity: stages.optimal_values(*_parameters(truth, capacity))
                for capacity in capacities
            }
            started = time.perf_counter()
            net = (
                fit_squared_error(part_train.features, _numbers(part_train), seed + run)
                if set(methods) - set(BASELINES)
                else None
            )
            net_s = time.perf_counter() - started
            for method in methods:
                for cell in _cells(method, capacities, sigmas):
                    started = time.perf_counter()
                    kept = None
                    if method in BASELINES:
                        predicted = baseline(method, part_train, part_test, seed + run)
                    else:
                        assert net is not None
                        trained: torch.nn.Module = net
                        if method in DFL_METHODS:
                            trained, kept = _fine_tune(
                                method,
                                net,
                                part_train,
                                cell[0],
                                cell[1],
                                solver,
                                stages,
                                epochs,
                                seed + run,
                            )
                        with torch.no_grad():
                            predicted = trained(part_test.features)
                    took = time.perf_counter() - started + (0.0 if method in BASELINES else net_s)
                    width = len(rows)
                    for capacity, sigma in _every(cell, capacities, sigmas):
                        scores = score(
                            stages, predicted, part_test, capacity, sigma, optima[capacity]
                        )
                        rows.append(
                            {
                                "method": method,
                                "run": run,
                                "capacity": capacity,
                                "sigma": sigma,
                                "post_hoc_regret": scores.mean,
                                "normalised": scores.normalised,
                                "infeasibility_rate": scores.infeasibility_rate,
                                "train_s": took,
                                "kept_epoch": kept,
                            }
                        )
                    report(
                        f"knapsack-2s run {run} {method} {_label(cell)}: post-hoc regret "
                        + " ".join(f"{row['post_hoc_regret']:.2f}" for row in rows[width:])
                        + ("" if kept is None else f", epoch {kept} kept")
                        + f" ({took:.0f} s)"
                    )
            record = save_runs(path, settings, rows, ("capacity", "sigma"), published=PUBLISHED)
    return record


def _every(
    cell: tuple[Any, Any], capacities: Sequence[float], sigmas: Sequence[float]
) -> list[tuple[Any, Any]]:
    """The cells a prediction trained for ``cell`` is scored at (every one for (None, None))."""
    return [
        (capacity, sigma)
        for capacity in (capacities if cell[0] is None else (cell[0],))
        for sigma in (sigmas if cell[1] is None else (cell[1],))
    ]


def _label(cell: tuple[Any, Any]) -> str:
    capacity, sigma = cell
    return (
        "every cell"
        if capacity is None
        else f"C={capacity:g}" + ("" if sigma is None else f" sigma={sigma:g}")
    )
