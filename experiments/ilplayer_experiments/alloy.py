"""Brass alloy production with unknown metal concentrations (Hu, Lee & Lee's covering LP; Odece's
integer variant): buy ore from 10 suppliers to get at least [627.54, 369.72] of 2 metals,
``min c.x  s.t.  G x >= r, x >= 0``, each supplier's price known and its ore's concentrations
``G`` predicted, one from each of two sentences of the knapsack from text (the concentration is
the weight the sentence states, / 100, and its features the sentence's embedding: the authors
also drew theirs from the knapsack data). Stage 2, under the true concentrations, may only buy
more, at ``(1 + sigma_j) c_j`` a unit, ``sigma_j ~ U[f - 0.015, f + 0.015]`` per supplier;
f in {0.25, 0.5, 1, 2, 4, 8}; 350 / 150 instances, ``runs`` random splits of 500.
``ilplayer experiment alloy``."""

from __future__ import annotations

import copy
import math
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
from ilplayer_experiments.knapsack_two_stage import load as load_knapsacks
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

SUPPLIERS, METALS = 10, 2
REQUIREMENT = (627.54, 369.72)
FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
TRAIN, TEST = 350, 150
LOWEST = 0.15  # the least concentration the data hold (the knapsack's lightest weight, 15, / 100)
DFL_METHODS = ("combopt", "post-hoc", "relaxed", "odece")
ALLOY_METHODS = (*BASELINES, "mse", *DFL_METHODS)
"""As for the knapsack; CombOptNet's gradient for the rows needs a pure integer program: it
runs on the integer variant (``integer=True``) only."""


@dataclass(frozen=True)
class AlloyData:
    """Embeddings (N, 2, 10, d), true concentrations (N, 2, 10) and prices (N, 10), float64."""

    features: torch.Tensor
    concentration: torch.Tensor
    prices: torch.Tensor

    def take(self, rows: Any) -> AlloyData:
        return AlloyData(self.features[rows], self.concentration[rows], self.prices[rows])


def load(count: int = TRAIN + TEST, seed: int = 0, model: str = "minilm") -> AlloyData:
    """Instance k from the knapsack data's instances 2k (metal 1, and the prices) and 2k + 1
    (metal 2)."""
    items = load_knapsacks(2 * count, seed, model)
    d = items.features.shape[-1]
    return AlloyData(
        items.features.reshape(count, METALS, SUPPLIERS, d),
        items.weights.reshape(count, METALS, SUPPLIERS) / 100.0,
        items.prices.reshape(count, METALS, SUPPLIERS)[:, 0].contiguous(),
    )


def program(integer: bool = False) -> Program:
    """``min c.x`` over ``0 <= x <= U`` (U: enough ore of the poorest kind for either metal, a
    bound no optimum reaches), continuous or (``integer``) whole units."""
    return Program(
        lb=0, ub=math.ceil(max(REQUIREMENT) / LOWEST), integrality=int(integer), sense="min"
    )


def rows(concentration: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``G x >= r`` as ``-G x <= -r``: (A, b)."""
    return -concentration, -torch.tensor(REQUIREMENT, dtype=torch.float64)


def penalties(factor: float, instances: int, rng: np.random.Generator) -> torch.Tensor:
    """(instances, 10) the sigma_j of each supplier, ``U[f - 0.015, f + 0.015]``."""
    return torch.from_numpy(rng.uniform(factor - 0.015, factor + 0.015, (instances, SUPPLIERS)))


def score(
    stages: TwoStage,
    predicted: torch.Tensor,
    data: AlloyData,
    sigma: torch.Tensor,
    optimal: torch.Tensor | None = None,
) -> Any:
    """The two-stage scores of the purchases under predicted (B, 2, 10) concentrations."""
    y1, _ = stages.optimum(data.prices, *rows(predicted))
    return stages.score(
        y1,
        data.prices,
        *rows(data.concentration),
        penalty=sigma * data.prices,
        changes="add",
        optimal=optimal,
    )


def baseline(name: str, train: AlloyData, test: AlloyData, seed: int) -> torch.Tensor:
    """(test, 2, 10): a regressor fitted on every training concentration's (embedding, value)."""
    return item_regression(
        name, train.features, train.concentration.unsqueeze(-1), test.features, seed
    ).squeeze(-1)


def _fine_tune(
    method: str,
    net: ItemNet,
    train: AlloyData,
    factor: float,
    solver: str,
    integer: bool,
    stages: TwoStage,
    epochs: int,
    seed: int,
) -> tuple[torch.nn.Module, int]:
    """``method``'s training from the squared-error network at one penalty factor (one draw of
    the training instances' penalties), kept at its epoch of least training post-hoc regret."""
    sigma = penalties(factor, len(train.prices), np.random.default_rng([seed, 1]))
    A_true, b = rows(train.concentration)
    optimal = stages.optimal_values(train.prices, A_true, b)
    model: torch.nn.Module = Calibrated(net) if method == "post-hoc" else copy.deepcopy(net)
    loss, step = _objective(method, net, train, sigma, optimal, solver, integer, seed)

    def training_regret() -> float:
        with torch.no_grad():
            return score(stages, model(train.features).squeeze(-1), train, sigma, optimal).mean

    try:
        kept = fine_tune(
            model,
            lambda batch: step(model(train.features[batch]).squeeze(-1), batch),
            training_regret,
            len(train.prices),
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
    train: AlloyData,
    sigma: torch.Tensor,
    optimal: torch.Tensor,
    solver: str,
    integer: bool,
    seed: int,
) -> tuple[Any, Callable[[torch.Tensor, np.ndarray], torch.Tensor]]:
    """``(loss module, step)``: the training loss of a batch of predicted (B, 2, 10) concentrations."""
    A_true, b = rows(train.concentration)
    prices, alloy = train.prices, program(integer)
    squared = lambda out, batch: net.squared_error(
        out.unsqueeze(-1), train.concentration[batch].unsqueeze(-1)
    )
    if method == "combopt":
        if not integer:
            raise ValueError(
                "method: CombOptNet's gradient for the rows needs whole units (integer=True)"
            )
        oracle = Oracle(alloy, solver=solver)
        y_true, _ = oracle(prices, A_true, b)
        layer = ILPLayer(oracle, CombOptNet(tau=0.5))
        scale = y_true.abs().mean().clamp(min=1.0)
        return (
            oracle,
            lambda out, batch: (
                (layer(prices[batch], *rows(out)) - y_true[batch]).abs().sum(-1).mean() / scale
            ),
        )
    if method == "post-hoc":
        smoothed = PostHocRegretLoss(
            alloy,
            solver=solver,
            changes="add",
            sigma={"A": net.scale.item() / 4},
            samples=1,
            seed=seed,
        )
        return smoothed, lambda out, batch: smoothed(
            A_pred=rows(out)[0],
            c=prices[batch],
            A=A_true[batch],
            b=b,
            penalty=sigma[batch] * prices[batch],
            optimal=optimal[batch],
        )
    if method == "relaxed":
        relaxed = RelaxedPostHocLoss(alloy, changes="add", mu=0.02)
        scale = (
            optimal.nanmean().item()
        )  # the regret in units of the mean optimum, beside the squared error
        return (
            relaxed,
            lambda out, batch: (
                relaxed(
                    A_pred=rows(out)[0],
                    c=prices[batch],
                    A=A_true[batch],
                    b=b,
                    penalty=sigma[batch] * prices[batch],
                    optimal=optimal[batch],
                )
                / scale
                + squared(out, batch)
            ),
        )
    if method == "odece":
        feasibility = FeasibilityLoss(alloy, solver=solver, alpha=0.5, margin=5.0)
        return (
            feasibility,
            lambda out, batch: (
                feasibility(
                    A_pred=rows(out)[0],
                    b_pred=b.expand(len(batch), -1),
                    c=prices[batch],
                    A=A_true[batch],
                    b=b.expand(len(batch), -1),
                )
                + squared(out, batch)
            ),
        )
    raise ValueError(f"method: {method!r} is not one of {DFL_METHODS}")


def run_alloy(
    out: str | Path = "results/alloy",
    methods: Sequence[str] | None = None,
    factors: Sequence[float] = FACTORS,
    runs: int = 10,
    train: int = TRAIN,
    test: int = TEST,
    solver: str = "highs",
    integer: bool = False,
    model: str = "minilm",
    epochs: int = 3,
    seed: int = 0,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every method at every penalty factor over ``runs`` splits (one penalty draw per test
    instance, factor and run); writes ``alloy[-integer].json`` under ``out`` after each run (a
    call with the same settings goes on from the runs saved) and returns the record."""
    methods = (
        tuple(method for method in ALLOY_METHODS if integer or method != "combopt")
        if methods is None
        else tuple(methods)
    )
    unknown = sorted(set(methods) - set(ALLOY_METHODS))
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; choose from {list(ALLOY_METHODS)}")
    settings = {
        "task": "alloy",
        "methods": list(methods),
        "integer": integer,
        "solver": solver,
        "sentence_model": model,
        "train": train,
        "test": test,
        "seed": seed,
        "epochs": epochs,
        "factors": list(factors),
    }
    path = Path(out) / f"alloy{'-integer' if integer else ''}.json"
    records = resumed(path, settings)
    record = save_runs(path, settings, records, ("factor",))
    data = load(train + test, seed, model)
    with TwoStage(program(integer), solver) as stages:
        for run in sorted(set(range(runs)) - {row["run"] for row in records}):
            order = torch.from_numpy(np.random.default_rng([run, 69]).permutation(len(data.prices)))
            part_train, part_test = data.take(order[:train]), data.take(order[train : train + test])
            optimal = stages.optimal_values(part_test.prices, *rows(part_test.concentration))
            sigmas = {
                f: penalties(f, test, np.random.default_rng([seed, run, int(100 * f)]))
                for f in factors
            }
            started = time.perf_counter()
            net = (
                fit_squared_error(
                    part_train.features, part_train.concentration.unsqueeze(-1), seed + run
                )
                if set(methods) - set(BASELINES)
                else None
            )
            net_s = time.perf_counter() - started
            for method in methods:
                for factor in factors if method in DFL_METHODS else (None,):
                    started, kept = time.perf_counter(), None
                    if method in BASELINES:
                        predicted = baseline(method, part_train, part_test, seed + run)
                    else:
                        assert net is not None
                        trained: torch.nn.Module = net
                        if factor is not None:
                            trained, kept = _fine_tune(
                                method,
                                net,
                                part_train,
                                factor,
                                solver,
                                integer,
                                stages,
                                epochs,
                                seed + run,
                            )
                        with torch.no_grad():
                            predicted = trained(part_test.features).squeeze(-1)
                    took = time.perf_counter() - started + (0.0 if method in BASELINES else net_s)
                    width = len(records)
                    for f in factors if factor is None else (factor,):
                        scores = score(stages, predicted, part_test, sigmas[f], optimal)
                        records.append(
                            {
                                "method": method,
                                "run": run,
                                "factor": f,
                                "post_hoc_regret": scores.mean,
                                "normalised": scores.normalised,
                                "train_s": took,
                                "kept_epoch": kept,
                                "infeasibility_rate": scores.infeasibility_rate,
                            }
                        )
                    report(
                        f"alloy run {run} {method}"
                        + ("" if factor is None else f" f={factor:g}")
                        + ": post-hoc regret "
                        + " ".join(f"{r['post_hoc_regret']:.2f}" for r in records[width:])
                        + ("" if kept is None else f", epoch {kept} kept")
                        + f" ({took:.0f} s)"
                    )
            record = save_runs(path, settings, records, ("factor",))
    plot_alloy(record, path.with_suffix(".png"))
    return record


def plot_alloy(record: dict[str, Any], path: str | Path) -> Path:
    """The record's post-hoc regret against the penalty factor, mean and std over its splits."""
    from ilplayer_experiments.plots import plot_post_hoc

    rows = [
        {
            "method": row["method"],
            "factor": row["factor"],
            "post_hoc_regret": row["post_hoc_regret_mean"],
            "std": row["post_hoc_regret_std"],
        }
        for row in record["summary"]
    ]
    kind = "whole units" if record["integer"] else "the LP"
    title = f"Brass alloy ({kind}), {record['solver']}, {record['runs']} splits"
    return plot_post_hoc({"rows": rows}, path, title)
