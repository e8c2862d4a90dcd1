"""Learn hidden constraints from your own observations: pairs of a cost vector ``c`` and the
integer solution ``y`` that was chosen for it (a scheduler's logs, a planner's decisions).

[`load_solutions`][ilplayer.learning.observations.load_solutions] reads and checks a file (re-exported here),
[`learn_constraints`][ilplayer.learning.learn.learn_constraints] trains a
[`StaticConstraints`][ilplayer.learning.constraints.StaticConstraints] so that ``argmin c·y s.t. A y <= b`` over the
box reproduces the observed ``y``; ``ilplayer learn`` is the command line of both
(docs/learn.md).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.errors import DataWarning
from ilplayer.layer import ILPLayer
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.ilploss import ILPLossConfig
from ilplayer.learning.loop import BackendConfig, SolutionData, TrainingConfig, box_points
from ilplayer.learning.observations import (
    check_solutions,
    holdout_size,
    load_solutions,
    split_holdout,
)
from ilplayer.learning.restarts import checkpoint_folder
from ilplayer.learning.selection import train_and_select
from ilplayer.learning.separation import INITS
from ilplayer.metrics import exact_match
from ilplayer.solvers.registry import preferred_backend

__all__ = [
    "LEARN_ILPLOSS",
    "LEARN_METHODS",
    "SOLVE_SECONDS",
    "AutoConfig",
    "DataWarning",
    "ILPLossConfig",
    "LearnConfig",
    "LearnResult",
    "check_solutions",
    "default_init",
    "holdout_size",
    "learn_constraints",
    "load_solutions",
    "restart_seed",
    "split_holdout",
    "with_equalities",
]

LEARN_K = 2
"""``learn_constraints`` learns 2 x num_constraints constraints by default: on Random Constraints
(binary, m = 4, one dataset, 10 training seeds) 2 x m gave 87.3 ± 4.8 % held out against
65.7 ± 18.8 % with m (docs/records/experiments.md, "Stable training")."""


SOLVE_SECONDS = 1.0
"""[`learn_constraints`][ilplayer.learning.learn.learn_constraints]' time limit per solve, in seconds:
past it an instance counts as wrong (a good constraint set solves a 9x9 sudoku, and a
16-variable program, in a small fraction of it; docs/records/sudoku.md)."""

LEARN_METHODS = ("combopt", "ilploss")
"""How `learn_constraints` trains: CombOptNet's gradients through the solver, or ILP-Loss
([`ilplayer.learning.ilploss`][ilplayer.learning.ilploss]: no solver while training, one only to measure accuracy).
Its default, ``"auto"``, trains both and keeps the better on the validation pairs."""

LEARN_ILPLOSS: dict[str, Any] = {"k": 4, "epochs": 600, "stop_patience": 30}
"""What ``learn_constraints`` and ``ilplayer learn`` change in `ILPLossConfig` for ILP-Loss (alone or
under ``method="auto"``). 4 x num_constraints rows (polish drops the spare ones): on binary Random
Constraints m = 8 (the reference generator's datasets, 200 epochs) they held out 83.0-90.5 % against
75.7-78.3 % with the authors' 2 x m. 600 epochs with a stop after 30 validations without a gain
instead of 200 and 10: the shorter schedule stopped on a plateau that later epochs leave (95.8,
90.2, 93.3 % on datasets 0-2 against 85.7, 83.0, 90.3 %; docs/records/learn.md, "The default method")."""


@dataclass(frozen=True)
class LearnConfig(TrainingConfig):
    """[`learn_constraints`][ilplayer.learning.learn.learn_constraints]' CombOptNet settings:
    `TrainingConfig`'s fields with
    learn's own defaults, the ones ``ilplayer learn`` uses: ``k = LEARN_K`` (2) and ``init="auto"``
    ([`default_init`][ilplayer.learning.learn.default_init]: separating on a box wider than {0, 1},
    else random). Set one field
    (``LearnConfig(epochs=10)``) and the others stay learn's; a plain `TrainingConfig`
    is the paper's settings throughout (``k = 1``, random start).
    """

    k: int = LEARN_K
    init: str = "auto"
    init_choices: ClassVar[tuple[str, ...]] = (*INITS, "auto")


@dataclass(frozen=True)
class AutoConfig:
    """``method="auto"``'s settings: each method's own config (defaults: `LearnConfig` and
    `ILPLossConfig` with [`LEARN_ILPLOSS`][ilplayer.learning.learn.LEARN_ILPLOSS])."""

    combopt: TrainingConfig = field(default_factory=LearnConfig)
    ilploss: ILPLossConfig = field(default_factory=lambda: ILPLossConfig(**LEARN_ILPLOSS))


def _keyword_defaults(function: Callable[..., Any]) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def default_init(lb: Any, ub: Any, n: int) -> str:
    """Where ``learn_constraints`` starts by default: ``"separating"`` when some variable can take
    more than two values, else the paper's ``"random"``. On Random Constraints dense m = 4
    (box [-5, 5], the reference generator's datasets 0-4, training seed 0) the separating start,
    polished, scored 91.6-95.3 % where the random start, polished, scored 34.3-95.1 %; on a
    binary box its separators are not facets, and bruteforce training from it was several times
    slower for the same accuracy (docs/records/learn.md, "Polish")."""
    widths = np.broadcast_to(
        np.asarray(ub, dtype=np.float64) - np.asarray(lb, dtype=np.float64), (n,)
    )
    return "separating" if (widths > 1).any() else "random"


@dataclass
class LearnResult:
    """What `learn_constraints` returns: the learned constraints and how well they fit."""

    model: StaticConstraints
    history: list[dict[str, float]]
    train_accuracy: float
    test_accuracy: float
    settings: dict[str, Any] = field(default_factory=dict)
    wall_time_s: float = 0.0

    A_eq: torch.Tensor | None = None
    b_eq: torch.Tensor | None = None

    def constraints(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The learned ``(A, b)``, detached: the rows of ``A y <= b`` (none when the equalities
        alone reproduce the observations)."""
        A, b = self.model()
        return A.detach(), b.detach()

    def equalities(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The equalities ``A_eq y = b_eq`` found in the observations
        ([`ilplayer.learning.equalities`][ilplayer.learning.equalities]),
        part of the learned program; None when there are none."""
        return None if self.A_eq is None or self.b_eq is None else (self.A_eq, self.b_eq)

    def record(self) -> dict[str, Any]:
        """A JSON-ready summary (the ``--json`` record of ``ilplayer learn``)."""
        A, b = self.constraints()
        equalities = self.equalities()
        return {
            "test_accuracy": self.test_accuracy,
            "train_accuracy": self.train_accuracy,
            "epochs": self.history[-1]["epoch"] if self.history else 0,
            **self.settings,
            "wall_time_s": self.wall_time_s,
            "A": A.tolist(),
            "b": b.tolist(),
            **(
                {"A_eq": equalities[0].tolist(), "b_eq": equalities[1].tolist()}
                if equalities
                else {}
            ),
            "history": self.history,
        }


def restart_seed(seed: int, restart: int) -> int:
    """The seed of restart ``restart`` (0: ``seed`` itself) of a run seeded ``seed``."""
    return seed if restart == 0 else derive_seed(seed, 200 + restart)


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
    ``config`` an [`ILPLossConfig`][ilplayer.learning.ilploss.ILPLossConfig], default one with
    [`LEARN_ILPLOSS`][ilplayer.learning.learn.LEARN_ILPLOSS]): no solver while
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
    [`SOLVE_SECONDS`][ilplayer.learning.learn.SOLVE_SECONDS]; None: no limit; a ``time_limit`` in
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
    if (
        method == "auto"
    ):  # a one-method config is that method's half: one field changed, one setting changed
        if isinstance(config, ILPLossConfig):
            config = AutoConfig(ilploss=config)
        elif isinstance(config, TrainingConfig):
            config = AutoConfig(combopt=config)
        return _learn_both(AutoConfig() if config is None else config, arguments)
    config = _checked_config(config, method, lb, ub, np.shape(c_train)[1])
    for name, value in (
        ("num_constraints", num_constraints),
        ("restarts", restarts),
        ("restart_workers", restart_workers),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if restarts > 1 and not validation_fraction:
        raise ValueError(
            "restarts > 1 needs a validation split to choose between the runs: "
            "set validation_fraction above 0"
        )
    data, validation, test_on = _splits(
        c_train, y_train, c_test, y_test, lb, ub, test_fraction, validation_fraction, seed
    )
    found = None
    if equalities:
        data, found = with_equalities(data, validation)
    n = data.num_variables
    backend = _with_time_limit(backend or BackendConfig(), box_points(lb, ub, n), time_limit)
    start = time.perf_counter()
    seeds = [restart_seed(seed, restart) for restart in range(restarts)]
    train: dict[str, Any] = dict(
        data=data,
        config=config,
        backend=backend,
        num_constraints=num_constraints,
        validation=validation,
        test_every=test_every,
        method=method,
    )
    resumed = [0] * len(seeds)
    if checkpoint is not None:
        train["checkpoint"], resumed = checkpoint_folder(checkpoint, train, lb, ub, seeds)
    layer = ILPLayer(
        lb,
        ub,
        solver=backend.solver,
        solver_options=backend.solver_options,
        executor=backend.executor,
        workers=backend.workers,
    )
    equalities_ = (data.A_eq, data.b_eq)
    try:
        with torch.no_grad():
            if found is not None and found["rows"]:
                c_pairs, y_pairs = (
                    validation if validation is not None else (data.c_train, data.y_train)
                )
                found["accuracy_alone"] = exact_match(
                    layer(c_pairs, None, None, *equalities_), y_pairs
                )
        if found is not None and found.get("accuracy_alone", 0.0) >= 1.0:  # nothing left to learn
            model = StaticConstraints(0, n, lb, ub, origin=config.origin, dtype=torch.float64)
            history = [{"epoch": 0, "validation_accuracy": found["accuracy_alone"]}]
            runs, kept, selected_epoch, polished = (
                [(found["accuracy_alone"], model, history)],
                0,
                0,
                None,
            )
        else:
            runs, kept, model, selected_epoch, polished = train_and_select(
                train, seeds, restart_workers, layer, polish, progress, on_epoch, resumed
            )
            history = runs[kept][2]
        with torch.no_grad():
            A, b = model()
            accuracy = lambda c, y: exact_match(layer(c, A, b, *equalities_), y)
            train_accuracy, test_accuracy = (
                accuracy(data.c_train, data.y_train),
                accuracy(data.c_test, data.y_test),
            )
            validation_accuracy = None if validation is None else accuracy(*validation)
    finally:
        layer.close()
    settings = {
        "seed": seed,
        "num_constraints": num_constraints,
        "num_variables": n,
        "lb": np.asarray(lb).tolist(),
        "ub": np.asarray(ub).tolist(),
        "solver": backend.solver,
        "executor": backend.executor,
        "workers": backend.workers,
        **config.as_dict(),
        "train_size": len(data.c_train),
        "test_size": len(data.c_test),
        "test_on": test_on,
        "validation_size": 0 if validation is None else len(validation[0]),
        "selected_epoch": selected_epoch,
        "restarts": restarts,
        "test_every": test_every,
        "selected_restart": kept,
        "restart_workers": restart_workers,
        "restart_validation_accuracies": [score for score, _, _ in runs],
        "polish": polished,
        "method": method,
        "equalities": found,
        "resumed_at_epoch": resumed[kept],
        "time_limit": (backend.solver_options or {}).get("time_limit"),
        "validation_accuracy": validation_accuracy,
    }
    return LearnResult(
        model,
        history,
        train_accuracy,
        test_accuracy,
        settings,
        time.perf_counter() - start,
        data.A_eq,
        data.b_eq,
    )


def _checked_config(
    config: Any, method: str, lb: Any, ub: Any, n: int
) -> TrainingConfig | ILPLossConfig:
    """``config`` checked against ``method``, its default where None, ``init="auto"`` resolved."""
    expected = ILPLossConfig if method == "ilploss" else TrainingConfig
    if config is not None and not isinstance(config, expected):
        raise TypeError(
            f"config must be a {expected.__name__} for method={method!r}, got {type(config).__name__}"
        )
    config = config or (ILPLossConfig(**LEARN_ILPLOSS) if method == "ilploss" else LearnConfig())
    if isinstance(config, TrainingConfig) and config.init == "auto":
        config = config.replace(init=default_init(lb, ub, n))
    return config


def _splits(
    c_train: Any,
    y_train: Any,
    c_test: Any,
    y_test: Any,
    lb: Any,
    ub: Any,
    test_fraction: float,
    validation_fraction: float,
    seed: int,
) -> tuple[SolutionData, tuple[torch.Tensor, torch.Tensor] | None, str]:
    """The training, test and validation pairs as float64 tensors, and what the test pairs are."""
    tensor = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    c_train, y_train = np.asarray(c_train, dtype=np.float64), np.asarray(y_train, dtype=np.float64)
    if not (isinstance(test_fraction, (int, float)) and 0 <= test_fraction < 1):
        raise ValueError(f"test_fraction must be a number in [0, 1), got {test_fraction!r}")
    if (c_test is None) != (y_test is None):
        raise ValueError("c_test and y_test go together: pass both or neither")
    test_on = "the test pairs given"
    if c_test is None and test_fraction:
        c_train, y_train, c_test, y_test = split_holdout(c_train, y_train, test_fraction, seed)
        test_on = (
            f"{len(c_test)} pairs held out of the training pairs (test_fraction {test_fraction})"
        )
    elif c_test is None:
        c_test, y_test = c_train, y_train
        test_on = "the training pairs (test_fraction 0: no pairs held out)"
    validation = None
    if validation_fraction:
        c_train, y_train, c_val, y_val = split_holdout(c_train, y_train, validation_fraction, seed)
        validation = (tensor(c_val), tensor(y_val))
    return (
        SolutionData(tensor(c_train), tensor(y_train), tensor(c_test), tensor(y_test), lb, ub),
        validation,
        test_on,
    )


def _with_time_limit(
    backend: BackendConfig, points: int | None, time_limit: float | None
) -> BackendConfig:
    """``backend`` with its solver named (the preferred one for the box of ``points`` points)
    and ``time_limit`` among its options where the solver takes one and none is set."""
    solver = backend.solver or preferred_backend(points)
    options = dict(backend.solver_options or {})
    if time_limit is not None and _takes_time_limit(solver):
        options.setdefault("time_limit", time_limit)
    return BackendConfig(solver, options or None, backend.executor, backend.workers)


def _learn_both(config: AutoConfig, arguments: dict[str, Any]) -> LearnResult:
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


def _takes_time_limit(solver: str) -> bool:
    """Whether the backend ``solver`` takes a ``time_limit`` option (enumeration does not: it
    is only chosen for boxes it finishes quickly)."""
    from ilplayer.solvers.registry import resolve_solver_name

    return resolve_solver_name(solver)[0].takes_option("time_limit")


def with_equalities(
    data: SolutionData, validation: tuple[torch.Tensor, torch.Tensor] | None
) -> tuple[SolutionData, dict[str, Any]]:
    """``data`` with the equalities every training pair satisfies
    ([`data_equalities`][ilplayer.learning.equalities.data_equalities]), found again on the training and validation
    pairs together when a validation pair is off them (the training pairs alone were too few to
    tell a rule from a coincidence); the summary says how many rows and from which pairs."""
    from ilplayer.learning.equalities import data_equalities, satisfied

    y = data.y_train.numpy()
    A_eq, b_eq = data_equalities(y)
    found_on = "training pairs"
    if (
        len(A_eq)
        and validation is not None
        and not satisfied(A_eq, b_eq, validation[1].numpy()).all()
    ):
        A_eq, b_eq = data_equalities(np.vstack([y, validation[1].numpy()]))
        found_on = "training and validation pairs"
    summary: dict[str, Any] = {"rows": len(A_eq), "found_on": found_on}
    if not len(A_eq):
        return data, summary
    return dataclasses.replace(
        data, A_eq=torch.as_tensor(A_eq), b_eq=torch.as_tensor(b_eq)
    ), summary


LEARN_DEFAULTS = _keyword_defaults(learn_constraints)
"""`learn_constraints`' keyword defaults by name: ``ilplayer learn`` takes its own from here."""
