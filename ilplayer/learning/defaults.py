"""`learn_constraints`' own defaults and their reasons: how many rows, which start, which methods,
the time limit per solve, and the settings each method gets."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ilplayer.learning.separation import INITS
from ilplayer.learning.settings import (
    BackendConfig,
    ILPLossConfig,
    TrainingConfig,
)
from ilplayer.solvers.registry import preferred_backend

__all__ = [
    "LEARN_ILPLOSS",
    "LEARN_K",
    "LEARN_METHODS",
    "SOLVE_SECONDS",
    "AutoConfig",
    "LearnConfig",
    "check_counts",
    "checked_config",
    "default_init",
    "keyword_defaults",
    "takes_time_limit",
    "with_time_limit",
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
    `ILPLossConfig` with `LEARN_ILPLOSS`)."""

    combopt: TrainingConfig = field(default_factory=LearnConfig)
    ilploss: ILPLossConfig = field(default_factory=lambda: ILPLossConfig(**LEARN_ILPLOSS))


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


def checked_config(
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


def with_time_limit(
    backend: BackendConfig, points: int | None, time_limit: float | None
) -> BackendConfig:
    """``backend`` with its solver named (the preferred one for the box of ``points`` points)
    and ``time_limit`` among its options where the solver takes one and none is set."""
    solver = backend.solver or preferred_backend(points)
    options = dict(backend.solver_options or {})
    if time_limit is not None and takes_time_limit(solver):
        options.setdefault("time_limit", time_limit)
    return BackendConfig(solver, options or None, backend.executor, backend.workers)


def takes_time_limit(solver: str) -> bool:
    """Whether the backend ``solver`` takes a ``time_limit`` option (enumeration does not: it
    is only chosen for boxes it finishes quickly)."""
    from ilplayer.solvers.registry import resolve_solver_name

    return resolve_solver_name(solver)[0].takes_option("time_limit")


def keyword_defaults(function: Callable[..., Any]) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def check_counts(
    num_constraints: int, restarts: int, restart_workers: int, validation_fraction: float
) -> None:
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
