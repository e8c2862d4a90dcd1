"""PyEPO 2.2.7's own methods on the tasks of [`decision_focused`][ilplayer_experiments.decision_focused]:
the same data, splits, initial weights and batches as ilplayer's runs, with PyEPO's Gurobi
model or its Pyomo model on HiGHS, for side-by-side regret and time per epoch ([pyepo] extra).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from ilplayer.core.seeding import derive_seed
from ilplayer_experiments.decision_focused import (
    DECISION_METHODS,
    POOL_METHODS,
    POOL_SOLVE_RATIO,
    PYEPO_METHODS,
    EpochBatches,
    Task,
    noise_seed_of,
)

__all__ = ["run_pyepo"]


def run_pyepo(
    task: Task,
    method: str,
    *,
    epochs: int = 10,
    lr: float = 1e-2,
    batch_size: int = 32,
    seed: int = 0,
    processes: int = 1,
    solver: str = "gurobi",
    noise_seed: int | None = None,
) -> dict[str, Any]:
    """PyEPO's own method of the name, with its Gurobi model (``solver="gurobi"``) or its Pyomo
    model on HiGHS (``"pyomo:highs"``), on the same data and model (``processes``:
    PyEPO's own pool for the solves, 1 = in this process), with ilplayer's initial weights and
    batches. ``noise_seed``: the noise stream of PFYL, PFYMul and DPOMul (None: ilplayer's run's
    own, ``noise_seed_of``, so that the two runs draw the same noise; ``PYEPO_NOISE``: PyEPO's
    default, 135 whatever the training seed; I-MLE's sum-of-Gamma noise keeps PyEPO's own)."""
    import pyepo

    optmodel = _pyepo_model(task, solver)
    if method == "cave" and solver != "gurobi":
        raise ValueError(
            "PyEPO's CaVE reads the binding constraints off its Gurobi model: solver='gurobi'"
        )
    dataset = (
        pyepo.data.dataset.optDatasetConstrs if method == "cave" else pyepo.data.dataset.optDataset
    )
    train = _in_double(
        dataset(optmodel, task.x_train.numpy(), task.c_train.numpy()), task.x_train, task.c_train
    )
    test = _in_double(
        pyepo.data.dataset.optDataset(optmodel, task.x_test.numpy(), task.c_test.numpy()),
        task.x_test,
        task.c_test,
    )
    torch.manual_seed(derive_seed(seed, 1))
    model = torch.nn.Linear(task.x_train.shape[1], task.c_train.shape[1]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    noise_seed = noise_seed_of(method, seed) if noise_seed is None else noise_seed
    function = _pyepo_function(method, optmodel, train, processes, noise_seed)
    if (
        method in POOL_METHODS
    ):  # ilplayer's pool draws (PyEPO's rule), so the same batches answer from the pool
        function._branch_rng = np.random.RandomState(derive_seed(seed, 7))
    # ilplayer's batches, in its order (a shuffling DataLoader draws a seed first, so its order
    # differed from the same generator's randperm).
    loader = pyepo.data.dataset.optDataLoader(
        train, batch_sampler=EpochBatches(len(train), batch_size, seed)
    )
    test_loader = torch.utils.data.DataLoader(test, batch_size=256)

    def test_regret() -> float:
        return pyepo.metric.regret(model, optmodel, test_loader)

    history = [{"epoch": 0, "regret": test_regret(), "seconds": 0.0}]
    for epoch in range(epochs):
        start = time.perf_counter()
        for x, c, w, z, *tight in loader:
            loss = _pyepo_loss(method, function, model(x), c, w, z, tight, task.sense)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        history.append({"epoch": epoch + 1, "regret": test_regret(), "seconds": seconds})
    return {
        "task": task.name,
        "method": method,
        "solver": solver,
        "library": "pyepo",
        "seed": seed,
        "noise_seed": noise_seed,
        "processes": processes,
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "train_size": len(task.x_train),
        "test_size": len(task.x_test),
        "regret": history[-1]["regret"],
        "seconds_per_epoch": float(np.mean([h["seconds"] for h in history[1:]])) if epochs else 0.0,
        "history": history,
    }


def _pyepo_model(task: Task, solver: str) -> Any:
    """PyEPO's model of the task: its Gurobi model, or its Pyomo model on HiGHS."""
    import pyepo

    if solver not in ("gurobi", "pyomo:highs"):
        raise ValueError(
            f"PyEPO runs on its Gurobi model ('gurobi') or its Pyomo model with HiGHS "
            f"('pyomo:highs'), got solver={solver!r}"
        )
    family = pyepo.model.grb if solver == "gurobi" else pyepo.model.omo
    on_highs: dict[str, Any] = {} if solver == "gurobi" else {"solver": "appsi_highs"}
    if task.name == "tsp":
        formulation = {"gg": "tspGGModel", "mtz": "tspMTZModel"}[task.pyepo_args["formulation"]]
        return getattr(family, formulation)(task.pyepo_args["nodes"], **on_highs)
    if task.name == "shortest-path":
        return family.shortestPathModel(grid=task.pyepo_args["grid"], **on_highs)
    return family.knapsackModel(
        weights=task.pyepo_args["weights"], capacity=task.pyepo_args["capacity"], **on_highs
    )


def _pyepo_function(method: str, optmodel: Any, train: Any, processes: int, noise_seed: int) -> Any:
    """PyEPO's loss or optimiser module for ``method``, with the settings ilplayer's run uses."""
    from pyepo import func

    pooled = {"processes": processes, "solve_ratio": POOL_SOLVE_RATIO, "dataset": train}
    sampled = {"processes": processes, "seed": noise_seed}
    builders = {
        "spo+": lambda: func.SPOPlus(optmodel, processes=processes),
        "pfyl": lambda: func.perturbedFenchelYoung(optmodel, n_samples=10, sigma=1.0, **sampled),
        "pfymul": lambda: func.perturbedFenchelYoungMul(
            optmodel, n_samples=10, sigma=1.0, **sampled
        ),
        "dbb": lambda: func.blackboxOpt(optmodel, lambd=10, processes=processes),
        "pg": lambda: func.perturbationGradient(optmodel, sigma=0.1, processes=processes),
        "nce": lambda: func.NCE(optmodel, **pooled),
        "cmap": lambda: func.contrastiveMAP(optmodel, **pooled),
        "ptltr": lambda: func.pointwiseLearningToRank(optmodel, **pooled),
        "prltr": lambda: func.pairwiseLearningToRank(optmodel, **pooled),
        "lsltr": lambda: func.listwiseLearningToRank(optmodel, **pooled),
        "dpomul": lambda: func.perturbedOptMul(optmodel, n_samples=10, sigma=1.0, **sampled),
        "imle": lambda: func.implicitMLE(
            optmodel, n_samples=10, sigma=1.0, lambd=10, processes=processes
        ),
        "aimle": lambda: func.adaptiveImplicitMLE(
            optmodel, n_samples=10, sigma=1.0, processes=processes
        ),
        "rfwo": lambda: func.regularizedFrankWolfeOpt(optmodel, lambd=1.0, processes=processes),
        "rfy": lambda: func.regularizedFrankWolfeFenchelYoung(
            optmodel, lambd=1.0, processes=processes
        ),
        "cave": lambda: func.coneAlignedCosine(optmodel, max_iter=3, processes=processes),
    }
    if method not in builders:
        raise ValueError(f"PyEPO baselines: {PYEPO_METHODS}, got {method!r}")
    return builders[method]()


def _pyepo_loss(
    method: str,
    function: Any,
    c_pred: torch.Tensor,
    c: torch.Tensor,
    w: torch.Tensor,
    z: torch.Tensor,
    tight: list[torch.Tensor],
    sense: str,
) -> torch.Tensor:
    """One batch's loss, each method called as PyEPO's examples call it."""
    if method == "cave":
        return function(c_pred, tight[0].double())
    if method == "spo+":
        return function(c_pred, c, w, z)
    if method in ("pfyl", "pfymul", "nce", "cmap", "rfy"):
        return function(c_pred, w)
    if method in ("pg", "ptltr", "prltr", "lsltr"):
        return function(c_pred, c)
    if method in DECISION_METHODS:
        return (function(c_pred) - w).abs().sum(-1).mean()
    if method == "rfwo":  # MSE to the true decision, as ilplayer's
        return ((function(c_pred) - w) ** 2).sum(-1).mean()
    w_pred = function(c_pred)
    return (w_pred * c).sum(-1).mean() * (1 if sense == "min" else -1)


def _in_double(dataset: Any, x: torch.Tensor, c: torch.Tensor) -> Any:
    """PyEPO's dataset with the task's float64 features and costs (and its decisions and
    objectives in float64): its float32 copies fed PyEPO's run other inputs than ilplayer's, and
    rounding the model to float32 for its metric forked the two runs, so that the same method
    with the same weights and batches drifted apart by chance alone."""
    dataset.feats, dataset.costs = x, c
    dataset.sols = dataset.sols.double()
    dataset.objs = (c * dataset.sols).sum(-1, keepdim=True)
    return dataset
