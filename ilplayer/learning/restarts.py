"""Training runs of [`learn_constraints`][ilplayer.learning.learn.learn_constraints]: one restart from its start, and
several at once in worker processes (each seeded as it would be alone, so the result is the
same either way), their epochs reaching the caller's progress bar through a queue; the run's
checkpoint folder and each restart's file in it."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.learning.checkpoint import EpochCheckpoint, fingerprint_tensors, run_folder
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.ilploss import initial_ilploss_constraints, train_ilploss
from ilplayer.learning.loop import initial_constraints, train_static_constraints

__all__ = [
    "History",
    "checkpoint_folder",
    "restart_checkpoint",
    "train_from_start",
    "train_in_processes",
]

_progress: Any = None  # a worker's queue of epoch records for the caller's progress bar


def _restart_worker_init(progress: Any, torch_threads: int) -> None:
    """After the solver pools' worker setup: the caller's progress queue, a share of the cores."""
    global _progress
    _progress = progress
    torch.set_num_threads(torch_threads)


History = list[dict[str, float]]


def checkpoint_folder(
    checkpoint: str | os.PathLike[str], train: dict[str, Any], lb: Any, ub: Any, seeds: list[int]
) -> tuple[Any, list[int]]:
    """The run's checkpoint folder, checked to hold this run's epochs (`run_folder`; more
    epochs extend it), and the epochs each restart has there."""
    data, validation, config, method = (
        train["data"],
        train["validation"],
        train["config"],
        train["method"],
    )
    folder = run_folder(
        checkpoint,
        f"run-{method}.json",
        {
            "data": fingerprint_tensors(
                data.c_train,
                data.y_train,
                data.c_test,
                data.y_test,
                data.A_eq,
                data.b_eq,
                *(validation or ()),
            ),
            "lb": np.asarray(lb).tolist(),
            "ub": np.asarray(ub).tolist(),
            "num_constraints": train["num_constraints"],
            "seeds": seeds,
            "solver": train["backend"].solver,
            "test_every": train["test_every"],
            **config.as_dict(),
        },
        extendable=("epochs",),
    )
    return folder, [
        restart_checkpoint(folder, method, run_seed).epochs_done() for run_seed in seeds
    ]


def restart_checkpoint(folder: str | Path, method: str, run_seed: int) -> EpochCheckpoint:
    """The checkpoint file of one method's restart in a run's folder."""
    return EpochCheckpoint(Path(folder) / f"{method}-seed{run_seed}.pt")


def train_from_start(
    run_seed: int, train: dict[str, Any], on_epoch: Callable[[dict[str, float]], None] | None
) -> tuple[StaticConstraints, History, StaticConstraints]:
    """`train_static_constraints` from its usual start, returned too: the start competes
    with the trained epochs, and building a separating start again costs seconds."""
    train = dict(train)
    data, config, method = train["data"], train["config"], train.pop("method")
    folder = train.pop("checkpoint", None)
    if (
        folder is not None
    ):  # one file per method and restart: a stopped run goes on from its last epoch
        train["checkpoint"] = restart_checkpoint(folder, method, run_seed)
    count = config.k * train["num_constraints"]
    if method == "ilploss":
        start = initial_ilploss_constraints(
            count, data.num_variables, data.lb, data.ub, config.origin, run_seed
        )
    else:
        start = initial_constraints(
            config, count, data.c_train, data.y_train, data.lb, data.ub, run_seed
        )
    untouched = copy.deepcopy(start)  # training moves the model it is given
    trainer = train_ilploss if method == "ilploss" else train_static_constraints
    model, history = trainer(seed=run_seed, on_epoch=on_epoch, model=start, **train)
    return model, history, untouched


def _train_restart(
    run_seed: int, train: dict[str, Any]
) -> tuple[dict[str, torch.Tensor], History, dict[str, torch.Tensor]]:
    model, history, start = train_from_start(run_seed, train, _progress.put)
    return model.state_dict(), history, start.state_dict()


def train_in_processes(
    train: dict[str, Any],
    seeds: list[int],
    workers: int,
    report: Callable[[dict[str, float]], None],
) -> list[tuple[StaticConstraints, History, StaticConstraints]]:
    """`train_from_start` for each seed, ``workers`` at a time in worker processes;
    their epochs reach ``report`` as they finish. Models come back as state dicts."""
    import multiprocessing
    import queue

    from ilplayer.parallel.workers import (
        default_start_method,
        default_workers,
        start_process_pool,
        terminate_process_pool,
    )

    progress = multiprocessing.get_context(default_start_method()).Queue()
    pool = start_process_pool(
        workers,
        starter="learn_constraints(restart_workers > 1)",
        instead="restart_workers=1",
        initializer=_restart_worker_init,
        initargs=(progress, max(1, default_workers() // workers)),
    )
    try:
        futures = [pool.submit(_train_restart, run_seed, train) for run_seed in seeds]
        while True:
            try:
                report(progress.get(timeout=0.2))
            except queue.Empty:
                if all(future.done() for future in futures):
                    break
        results = [future.result() for future in futures]  # a failed restart raises here
    except BaseException:  # Ctrl-C or a failed restart: stop the others now
        terminate_process_pool(pool)
        raise
    pool.shutdown()
    while True:  # epochs still in the queue after the last restart ended
        try:
            report(progress.get_nowait())
        except queue.Empty:
            break
    return [_models_of(train, result) for result in results]


def _models_of(
    train: dict[str, Any], result: tuple[Any, Any, Any]
) -> tuple[StaticConstraints, Any, StaticConstraints]:
    """A restart's ``(model, history, start)`` from the state dicts a worker sent back."""
    state, history, start_state = result
    data, config, m = train["data"], train["config"], train["num_constraints"]
    model, start = (
        StaticConstraints(
            config.k * m,
            data.num_variables,
            data.lb,
            data.ub,
            origin=config.origin,
            seed=0,
            dtype=torch.float64,
        )
        for _ in range(2)
    )
    model.load_state_dict(state)
    start.load_state_dict(start_state)
    return model, history, start
