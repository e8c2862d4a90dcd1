"""Learn hidden constraints from your own observations: pairs of a cost vector ``c`` and the
integer solution ``y`` that was chosen for it (a scheduler's logs, a planner's decisions).

[`load_solutions`][ilplayer.learning.observations.load_solutions] reads and checks a file (re-exported here),
[`learn_constraints`][ilplayer.learning.learn.learn_constraints] trains a
[`StaticConstraints`][ilplayer.learning.constraints.StaticConstraints] so that ``argmin c·y s.t. A y <= b`` over the
box reproduces the observed ``y``; ``ilplayer learn`` is the command line of both
(docs/learn.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ilplayer.errors import DataWarning
from ilplayer.layer import ILPLayer
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.defaults import (
    LEARN_ILPLOSS,
    LEARN_K,
    LEARN_METHODS,
    SOLVE_SECONDS,
    AutoConfig,
    LearnConfig,
    check_counts,
    checked_config,
    default_init,
    keyword_defaults,
    with_time_limit,
)
from ilplayer.learning.loop import box_points
from ilplayer.learning.observations import (
    check_solutions,
    holdout_size,
    load_solutions,
    split_holdout,
)
from ilplayer.learning.restarts import checkpoint_folder
from ilplayer.learning.selection import train_and_select
from ilplayer.learning.settings import (
    BackendConfig,
    ILPLossConfig,
    LearnResult,
    SolutionData,
    TrainingConfig,
    restart_seed,
)
from ilplayer.learning.splits import pair_splits, with_equalities
from ilplayer.metrics import exact_match

__all__ = [
    "LEARN_ILPLOSS",
    "LEARN_K",
    "LEARN_METHODS",
    "SOLVE_SECONDS",
    "AutoConfig",
    "BackendConfig",
    "DataWarning",
    "ILPLossConfig",
    "LearnConfig",
    "LearnResult",
    "TrainingConfig",
    "check_solutions",
    "default_init",
    "holdout_size",
    "learn_constraints",
    "load_solutions",
    "restart_seed",
    "split_holdout",
    "with_equalities",
]


def learn_constraints(
    c_train: Any,
    y_train: Any,
    lb: Any,
    ub: Any,
    num_constraints: int,
    *,
    c_test: Any = None,
    y_test: Any = None,
    config: TrainingConfig | ILPLossConfig | AutoConfig | None = None,
    backend: BackendConfig | None = None,
    seed: int = 0,
    progress: bool = True,
    test_fraction: float = 0.2,
    validation_fraction: float = 0.1,
    restarts: int = 1,
    test_every: int = 1,
    restart_workers: int = 1,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    polish: bool = True,
    method: str = "auto",
    equalities: bool = True,
    time_limit: float | None = SOLVE_SECONDS,
    checkpoint: str | os.PathLike[str] | None = None,
) -> LearnResult:
    """Learn ``num_constraints`` (times ``config.k``) constraints ``A y <= b`` such that
    ``argmin c·y`` over them and the box reproduces the observed ``y`` for each ``c``.

    ``c_test``/``y_test`` measure held-out accuracy each epoch; without them ``test_fraction``
    of the pairs (default 0.2, seeded by ``seed``) is held out for it, as ``ilplayer learn``
    does (0: the training pairs; ``settings["test_on"]`` says which).
    ``config`` defaults to [`LearnConfig`][ilplayer.learning.learn.LearnConfig]: the paper's settings (`TrainingConfig`)
    with changes measured in docs/records/experiments.md ("Stable training") and docs/records/learn.md
    ("Polish"): ``2 x num_constraints`` constraints are learned (``LEARN_K``; a
    ``TrainingConfig`` or ``k=1`` gives the paper's rule), training starts from the data's
    separating hyperplanes on a box wider than {0, 1} ([`default_init`][ilplayer.learning.learn.default_init]), and
    ``validation_fraction`` of the training pairs (default 0.1; 0 turns it off) is set aside:
    the model of the epoch with the best accuracy on them is
    returned instead of the last. A start read off the data competes too: it is returned
    untrained when it scores better (after polish, when ``polish``).
    With ``restarts`` > 1 training runs that many times from different initialisations (the
    first from ``seed`` itself) and the run whose selected epoch is best on the validation
    pairs is kept (the paper's appendix protocol: restarts, selection on validation data).
    ``restart_workers`` > 1 trains that many restarts at once in worker processes (each
    restart is seeded as above, so the result is the same as one after the other; a script
    that does this needs an ``if __name__ == "__main__":`` guard).
    The backend is the preferred one for the box unless ``backend.solver`` names one. A
    progress bar (tqdm) shows the epochs unless ``progress`` is False. The held-out accuracy
    is measured on every ``test_every``-th epoch and the last (only the curve changes: the
    model and the final accuracies do not).
    With ``polish`` (default) the kept constraints are then refitted to what the training pairs
    prove and spare rows dropped (`ilplayer.learning.polish`); the polished set replaces the trained
    one only if it scores at least as well on the validation pairs (on the training pairs
    without a validation split). ``settings["polish"]`` says what happened.

    ``method="ilploss"`` trains with ILP-Loss instead ([`train_ilploss`][ilplayer.learning.ilploss.train_ilploss],
    ``config`` an [`ILPLossConfig`][ilplayer.learning.settings.ILPLossConfig], default one with
    `LEARN_ILPLOSS`): no solver while
    training, the validation pairs pick the temperature, the stop and the epoch; everything
    after training (restarts, polish, the accuracies) is the same. ``method="combopt"`` trains
    with CombOptNet's gradients alone (``config`` a `TrainingConfig`, default `LearnConfig`).
    The default, ``method="auto"``, runs ILP-Loss and then CombOptNet on the same splits and
    returns the result whose final model does better on the validation pairs (on the training
    pairs without them; ties: CombOptNet's); ``settings["auto"]`` gives both scores. Its
    ``config`` is an [`AutoConfig`][ilplayer.learning.learn.AutoConfig] (or None); a `TrainingConfig` or an
    `ILPLossConfig` replaces that method's half of it (the other keeps its defaults): name the
    ``method`` to train one alone.

    With ``equalities`` (default) the equalities that every training pair satisfies are found
    first ([`data_equalities`][ilplayer.learning.equalities.data_equalities]: the equations of their affine hull,
    exact, no training; recomputed on the training and validation pairs together when a
    validation pair is off them) and kept fixed in every solve; where they alone reproduce
    every validation pair (the rules of sudoku), nothing is trained and the result has no
    inequality rows. ``settings["equalities"]`` says what was found.

    Every solve (training and accuracy checks) stops after ``time_limit`` seconds (default
    `SOLVE_SECONDS`; None: no limit; a ``time_limit`` in
    ``backend.solver_options``
    wins; the bruteforce backend takes none): an instance past it counts as wrong. Untrained
    rows can make a hard program: a 4x4 sudoku (64 binaries) under ILP-Loss' random start of
    128 rows took HiGHS and Gurobi close to a minute per puzzle to prove infeasible, where the
    learned rules take under a millisecond (docs/records/sudoku.md).

    ``checkpoint`` names a folder where every epoch of every restart (and method) is saved
    (`EpochCheckpoint`): the same call after a crash, a time limit or a reboot goes on from the
    last finished epochs and returns what the uninterrupted run would have. The folder remembers
    the run's data and settings and refuses another run's, naming what differs; a larger
    ``epochs`` extends the run from its last epoch (the result is the shorter run trained on,
    which can differ from a run of that length from the start where the old last epoch did
    something a last epoch does: a test score, ILP-Loss' validation). ``settings["resumed_at_epoch"]``
    is the epoch the kept restart went on from (0: from the start).
    """
    arguments = dict(locals())
    if method not in (*LEARN_METHODS, "auto"):
        raise ValueError(f"method must be one of {[*LEARN_METHODS, 'auto']}, got {method!r}")
    if method == "auto":
        return _learn_both(_auto_config(config), arguments)
    config = checked_config(config, method, lb, ub, np.shape(c_train)[1])
    check_counts(num_constraints, restarts, restart_workers, validation_fraction)
    data, validation, test_on = pair_splits(
        c_train, y_train, c_test, y_test, lb, ub, test_fraction, validation_fraction, seed
    )
    found = None
    if equalities:
        data, found = with_equalities(data, validation)
    points = box_points(lb, ub, data.num_variables)
    backend = with_time_limit(backend or BackendConfig(), points, time_limit)
    start = time.perf_counter()
    seeds = [restart_seed(seed, restart) for restart in range(restarts)]
    train: dict[str, Any] = dict(data=data, config=config, backend=backend)
    train.update(num_constraints=num_constraints)
    train.update(validation=validation, test_every=test_every, method=method)
    resumed = _resumed(checkpoint, train, seeds)
    layer = ILPLayer(lb, ub, **vars(backend))  # solver, solver_options, executor, workers
    try:
        run = (restart_workers, polish, progress, on_epoch, resumed)
        runs, kept, model, selected_epoch, polished = _train(layer, train, found, seeds, run)
        accuracies = _accuracies(layer, model, data, validation)
    finally:
        layer.close()
    outcome = (selected_epoch, kept, runs, polished, found, resumed[kept], accuracies[2])
    settings = _settings(arguments, train, test_on, outcome)
    elapsed = time.perf_counter() - start
    return LearnResult(
        model, runs[kept][2], *accuracies[:2], settings, elapsed, data.A_eq, data.b_eq
    )


def _resumed(checkpoint: Any, train: dict[str, Any], seeds: list[int]) -> list[int]:
    """The epoch each restart goes on from (0: from the start); with a ``checkpoint`` folder,
    ``train["checkpoint"]`` is where its epochs are saved."""
    if checkpoint is None:
        return [0] * len(seeds)
    data = train["data"]
    train["checkpoint"], resumed = checkpoint_folder(checkpoint, train, data.lb, data.ub, seeds)
    return resumed


def _train(
    layer: ILPLayer,
    train: dict[str, Any],
    found: dict[str, Any] | None,
    seeds: list[int],
    run: tuple[Any, ...],
) -> tuple[list[Any], int, StaticConstraints, int, Any]:
    """The restarts trained and one kept (`train_and_select`), or, where the data's equalities
    alone reproduce the validation pairs, an empty set of inequalities, untrained. ``run`` is
    ``(restart_workers, polish, progress, on_epoch, resumed)``."""
    data, validation = train["data"], train["validation"]
    if found is not None and found["rows"]:
        c_pairs, y_pairs = validation if validation is not None else (data.c_train, data.y_train)
        with torch.no_grad():
            found["accuracy_alone"] = exact_match(
                layer(c_pairs, None, None, data.A_eq, data.b_eq), y_pairs
            )
    if found is not None and found.get("accuracy_alone", 0.0) >= 1.0:  # nothing left to learn
        n, origin = data.num_variables, train["config"].origin
        model = StaticConstraints(0, n, data.lb, data.ub, origin=origin, dtype=torch.float64)
        history = [{"epoch": 0, "validation_accuracy": found["accuracy_alone"]}]
        return [(found["accuracy_alone"], model, history)], 0, model, 0, None
    restart_workers, polish, progress, on_epoch, resumed = run
    return train_and_select(
        train, seeds, restart_workers, layer, polish, progress, on_epoch, resumed
    )


def _accuracies(
    layer: ILPLayer,
    model: StaticConstraints,
    data: SolutionData,
    validation: tuple[torch.Tensor, torch.Tensor] | None,
) -> tuple[float, float, float | None]:
    """The exact-match accuracies of ``model`` on the training, test and validation pairs."""
    with torch.no_grad():
        A, b = model()
        accuracy = lambda c, y: exact_match(layer(c, A, b, data.A_eq, data.b_eq), y)
        return (
            accuracy(data.c_train, data.y_train),
            accuracy(data.c_test, data.y_test),
            None if validation is None else accuracy(*validation),
        )


def _settings(
    arguments: dict[str, Any], train: dict[str, Any], test_on: str, outcome: tuple[Any, ...]
) -> dict[str, Any]:
    """The run's record: what was asked (``arguments``), what was trained and what came out
    (``outcome``: the selected epoch and restart, the runs, the polish, the equalities, the
    epoch resumed at, the validation accuracy)."""
    data, validation, backend = train["data"], train["validation"], train["backend"]
    selected_epoch, kept, runs, polished, found, resumed_at, validation_accuracy = outcome
    return {
        "seed": arguments["seed"],
        "num_constraints": arguments["num_constraints"],
        "num_variables": data.num_variables,
        "lb": np.asarray(arguments["lb"]).tolist(),
        "ub": np.asarray(arguments["ub"]).tolist(),
        "solver": backend.solver,
        "executor": backend.executor,
        "workers": backend.workers,
        **train["config"].as_dict(),
        "train_size": len(data.c_train),
        "test_size": len(data.c_test),
        "test_on": test_on,
        "validation_size": 0 if validation is None else len(validation[0]),
        "selected_epoch": selected_epoch,
        "restarts": arguments["restarts"],
        "test_every": arguments["test_every"],
        "selected_restart": kept,
        "restart_workers": arguments["restart_workers"],
        "restart_validation_accuracies": [score for score, _, _ in runs],
        "polish": polished,
        "method": arguments["method"],
        "equalities": found,
        "resumed_at_epoch": resumed_at,
        "time_limit": (backend.solver_options or {}).get("time_limit"),
        "validation_accuracy": validation_accuracy,
    }


def _auto_config(config: Any) -> Any:
    """``method="auto"``'s config: a one-method config is that method's half (one field
    changed, one setting changed); None, the defaults."""
    if isinstance(config, ILPLossConfig):
        return AutoConfig(ilploss=config)
    if isinstance(config, TrainingConfig):
        return AutoConfig(combopt=config)
    return AutoConfig() if config is None else config


def _learn_both(config: Any, arguments: dict[str, Any]) -> LearnResult:
    """``method="auto"``: ILP-Loss, then CombOptNet, the better on the validation pairs kept."""
    if not isinstance(config, AutoConfig):
        raise TypeError(
            f"config must be an AutoConfig, a TrainingConfig or an ILPLossConfig for method='auto', "
            f"got {type(config).__name__}"
        )
    began = time.perf_counter()
    results = {}
    for method in ("ilploss", "combopt"):
        results[method] = result = learn_constraints(
            **{**arguments, "method": method, "config": getattr(config, method)}
        )
        found = result.settings["equalities"]
        if (
            found and found.get("accuracy_alone", 0.0) >= 1.0
        ):  # nothing to train: the other would agree
            break
    judged_on = (
        "validation" if results["ilploss"].settings["validation_accuracy"] is not None else "train"
    )
    score = lambda r: (
        r.settings["validation_accuracy"] if judged_on == "validation" else r.train_accuracy
    )
    kept = max(results.values(), key=lambda r: (score(r), r.settings["method"] == "combopt"))
    kept.settings["auto"] = {
        "judged_on": judged_on,
        "kept": kept.settings["method"],
        **{f"{method}_accuracy": score(result) for method, result in results.items()},
        **{f"{method}_seconds": result.wall_time_s for method, result in results.items()},
    }
    kept.wall_time_s = time.perf_counter() - began
    return kept


LEARN_DEFAULTS = keyword_defaults(learn_constraints)
"""`learn_constraints`' keyword defaults by name: ``ilplayer learn`` takes its own from here."""
