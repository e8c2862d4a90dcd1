"""One training run = one JSON record (and a PNG) in a results folder.

The record holds the task, its parameters, the hyper-parameters, the final held-out accuracy,
the loss and accuracy curves, the wall time, the solver and the versions: everything the
report needs, and enough to reproduce the run.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import time
from pathlib import Path
from typing import Any

import torch

from ilplayer.experiments import random_constraints, set_cover
from ilplayer.experiments.training import train_static_constraints
from ilplayer.plugins import available_solvers

PAPER = {  # paper, Figs. "Random Constraints" and "Weighted Set Covering": mean accuracy (%)
    ("rc", "binary"): {1: 97.8, 2: 94.2, 4: 77.4, 8: 46.5},
    ("rc", "dense"): {1: 87.3, 2: 70.2, 4: 29.6, 8: 2.3},
    ("wsc", "binary"): {4: 100.0, 6: 97.2, 8: 79.7, 10: 56.7},
    ("knapsack", "binary"): {1: 64.7},  # one learned constraint; paper: 64.7 ± 2.8
}
BRUTEFORCE_LIMIT = 2**16  # larger boxes train faster with a MIP backend on every core
DEFAULTS = dict(epochs=100, lr=5e-4, batch_size=8, tau=0.5, basis="delta", origin="learnable",
                loss="mse", k=1)  # supplementary, hyper-parameter table; k: learn k*m constraints
KNAPSACK_DEFAULTS = dict(epochs=100, lr=5e-4, batch_size=8, tau=0.5)


def versions(solver: str) -> dict[str, str]:
    found = {"python": platform.python_version(), "torch": torch.__version__}
    for dist in ("ilplayer", "ilplayer-" + solver.split(":")[0]):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def save_record(record: dict[str, Any], out_dir: str | Path, name: str,
                references: dict[str, float] | None) -> None:
    """Write ``<name>.json``, and ``<name>.png`` of its curves when ``references`` is given and
    matplotlib (the ``[demo]`` extra) is installed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=1))
    if references is None:
        return
    try:
        from ilplayer.experiments.plots import plot_training
    except ImportError:
        return
    plot_training(record["history"], out / f"{name}.png", name, references)


def run_name(task: str, params: dict[str, Any], overrides: dict[str, Any]) -> str:
    variant = "-".join(f"{k}={v}" for k, v in sorted(overrides.items())) or "default"
    fixed = "-".join(f"{k}{v}" for k, v in params.items())
    return f"{task}-{fixed}-{variant}"


def default_solver(box_points: int) -> str:
    """``bruteforce`` for small boxes, else the first MIP backend installed."""
    if box_points <= BRUTEFORCE_LIMIT:
        return "bruteforce"
    return next((s for s in ("gurobi", "cpsat", "highs", "scip") if s in available_solvers()),
                "bruteforce")


def run_static_constraints(task: str, m: int, seed: int, out_dir: str | Path, *, box: str = "binary",
                           solver: str | None = None, executor: str | None = None,
                           workers: int | None = None, n: int = 16, plot: bool = True,
                           method: str = "combopt", **overrides: Any) -> dict[str, Any]:
    """Train on one dataset of ``task`` ("rc": Random Constraints with ``m`` constraints on
    ``box``; "wsc": set cover of ``m`` elements) with ``method`` ("combopt" or the "mlp"
    baseline) and write ``<name>.json`` (and ``.png``)."""
    if method not in ("combopt", "mlp"):
        raise ValueError(f"method must be 'combopt' or 'mlp', got {method!r}")
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    hyper = {**DEFAULTS, **overrides}
    if task == "rc":
        lo, hi = random_constraints.BOXES[box]
        solver = solver or default_solver((hi - lo + 1) ** n)
        build = lambda: random_constraints.make_dataset(  # noqa: E731
            num_variables=n, num_constraints=m, box=box, seed=seed, solver=solver, cache=True)
    elif task == "wsc":
        box, n = "binary", 2 * m
        solver = solver or default_solver(2 ** n)
        build = lambda: set_cover.make_dataset(universe=m, seed=seed, solver=solver, cache=True)  # noqa: E731
    else:
        raise ValueError(f"task must be 'rc' or 'wsc', got {task!r}")
    start = time.perf_counter()
    data = build()
    if method == "mlp":
        from ilplayer.experiments.baselines import train_mlp_baseline

        _, history = train_mlp_baseline(data, epochs=hyper["epochs"], lr=hyper["lr"],
                                        batch_size=hyper["batch_size"], seed=seed)
        solver = None
    else:
        _, history = train_static_constraints(
            data, epochs=hyper["epochs"], lr=hyper["lr"], batch_size=hyper["batch_size"],
            tau=hyper["tau"], basis=hyper["basis"], origin=hyper["origin"], seed=seed,
            loss=hyper["loss"], k=hyper["k"], solver=solver, executor=executor, workers=workers)
    record = {
        "task": task, "method": method, "box": box, "m": m, "n": n, "seed": seed,
        "variant": {k: overrides[k] for k in sorted(overrides) if overrides[k] != DEFAULTS[k]},
        "hyperparameters": hyper, "solver": solver, "executor": executor, "workers": workers,
        "accuracy": history[-1]["accuracy"], "box_baseline_accuracy": data.box_baseline_accuracy,
        "paper_accuracy": PAPER.get((task, box), {}).get(m) if task == "wsc" or n == 16 else None,
        "history": history, "wall_time_s": time.perf_counter() - start, "versions": versions(solver or "none"),
    }
    prefix = task if method == "combopt" else f"{task}-{method}"
    name = run_name(prefix, {"": box, "m": m, "seed": seed}, record["variant"]).replace(f"{prefix}--", f"{prefix}-")
    references = {"box-constrained baseline": 100 * data.box_baseline_accuracy}
    if record["paper_accuracy"] is not None:
        references["paper (mean of 10 seeds)"] = record["paper_accuracy"]
    save_record(record, out_dir, name, references if plot else None)
    return record


def run_knapsack(seed: int, out_dir: str | Path, *, solver: str = "bruteforce", plot: bool = True,
                 train_size: int = 4500, test_size: int = 500, **overrides: Any) -> dict[str, Any]:
    """Train on the knapsack-from-text dataset (one restart per seed) and write a record."""
    from ilplayer.experiments import knapsack

    unknown = set(overrides) - set(KNAPSACK_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)} for knapsack")
    hyper = {**KNAPSACK_DEFAULTS, **overrides}
    start = time.perf_counter()
    # One dataset (seed 0), as in the paper's restarts; the seed picks the restart.
    train, test = knapsack.make_dataset(seed=0, train_size=train_size, test_size=test_size, cache=True)

    def embed(data: Any) -> torch.Tensor:
        flat = [s for row in data.sentences for s in row]
        vectors = knapsack.embed_sentences(flat)
        return torch.from_numpy(vectors).reshape(len(data.sentences), -1, vectors.shape[-1])

    _, history = knapsack.train_knapsack(train, test, embed(train), embed(test), seed=seed,
                                         solver=solver, **hyper)
    record = {
        "task": "knapsack", "box": "binary", "m": 1, "n": 10, "seed": seed,
        "variant": {k: v for k, v in sorted(overrides.items()) if v != KNAPSACK_DEFAULTS[k]},
        "hyperparameters": hyper, "solver": solver, "executor": None, "workers": None,
        "accuracy": history[-1]["accuracy"], "box_baseline_accuracy": 0.0,
        "paper_accuracy": PAPER[("knapsack", "binary")][1], "history": history,
        "wall_time_s": time.perf_counter() - start, "versions": versions(solver),
    }
    name = run_name("knapsack", {"seed": seed}, record["variant"])
    save_record(record, out_dir, name, {"paper": record["paper_accuracy"]} if plot else None)
    return record
