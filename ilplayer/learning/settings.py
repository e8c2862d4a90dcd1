"""The settings and data of learning a constraint set: `TrainingConfig` (the paper's), `BackendConfig`
(which backend solves), `ILPLossConfig`, the observed pairs (`SolutionData`,
`HiddenConstraintsData`) and what a run returns (`LearnResult`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.gradients import BASES
from ilplayer.learning.constraints import ORIGINS, StaticConstraints
from ilplayer.learning.separation import INITS
from ilplayer.losses import LOSSES
from ilplayer.metrics import exact_match

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "BackendConfig",
    "ConfigT",
    "HiddenConstraintsData",
    "ILPLossConfig",
    "LearnResult",
    "SolutionData",
    "TrainingConfig",
    "replace_checked",
    "restart_seed",
]


ConfigT = TypeVar("ConfigT", bound="DataclassInstance")


def replace_checked(config: ConfigT, overrides: dict[str, Any], what: str) -> ConfigT:
    """A copy of the dataclass ``config`` with ``overrides``; names it lacks are refused, with
    the ones it has (``what`` names them in the message)."""
    known = {field.name for field in fields(config)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; known: {sorted(known)}")
    return dataclasses.replace(config, **overrides)


@dataclass(frozen=True)
class TrainingConfig:
    """Hyper-parameters of constraint learning; the defaults are the paper's (supplementary A).

    Args:
        epochs: passes over the training pairs.
        lr: Adam's learning rate.
        batch_size: pairs per step.
        tau: the soft-min temperature of the gradient (None: hard minimum).
        basis: the decomposition of the incoming gradient, one of ``BASES``.
        origin: the constraint parametrisation, one of ``ORIGINS``.
        loss: the loss between normalised solutions, one of ``LOSSES``.
        k: learn ``k * m`` constraints for ``m`` hidden ones.
        box_relative_steps: give the offsets and origins (lengths in the units of ``y``) the
            step ``lr`` times the box's mean width, as if the box were ``[0, 1]``; the normals
            keep ``lr``. Nothing changes on a binary box.
        init: where the constraints start, one of ``INITS``: ``"random"`` (the paper's random
            hyperplanes through the box's centre) or ``"separating"`` (hyperplanes read off the
            training pairs, `ilplayer.learning.separation`; the rows it leaves are random normals
            placed so that every observed solution is feasible).
    """

    epochs: int = 100
    lr: float = 5e-4
    batch_size: int = 8
    tau: float | None = 0.5
    basis: str = "delta"
    origin: str = "learnable"
    loss: str = "mse"
    k: int = 1
    box_relative_steps: bool = False
    init: str = "random"
    init_choices: ClassVar[tuple[str, ...]] = INITS

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not (isinstance(self.lr, (int, float)) and self.lr >= 0):
            raise ValueError(f"lr must be a non-negative number, got {self.lr!r}")
        if self.tau is not None and not (isinstance(self.tau, (int, float)) and self.tau > 0):
            raise ValueError(f"tau must be a positive number or None, got {self.tau!r}")
        if not isinstance(self.box_relative_steps, bool):
            raise TypeError(
                f"box_relative_steps must be True or False, got {self.box_relative_steps!r}"
            )
        for name, choices in (
            ("basis", BASES),
            ("origin", ORIGINS),
            ("loss", sorted(LOSSES)),
            ("init", self.init_choices),
        ):
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"{name} must be one of {list(choices)}, got {getattr(self, name)!r}"
                )

    def replace(self, **overrides: Any) -> TrainingConfig:
        """A copy with ``overrides``; an unknown name is refused with the known ones."""
        return replace_checked(self, overrides, "hyper-parameter(s)")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BackendConfig:
    """Where the layer's instances are solved: the backend (None: the preferred one for the
    box, `preferred_backend`), its options and the executor."""

    solver: str | None = None
    solver_options: dict[str, Any] | None = None
    executor: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class HiddenConstraintsData:
    """A hidden constraint set ``A y <= b`` on the box ``[lb, ub]^n`` and its solved instances
    ``(c, y*)`` (all float64). Random Constraints and weighted set cover are both of this form."""

    A: torch.Tensor
    b: torch.Tensor
    lb: int
    ub: int
    c_train: torch.Tensor
    y_train: torch.Tensor
    c_test: torch.Tensor
    y_test: torch.Tensor

    def to_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @property
    def box_baseline_accuracy(self) -> float:
        """Accuracy of the box-only solution (no constraints): the "box-constrained" baseline."""
        y_box = torch.where(self.c_test < 0, float(self.ub), float(self.lb))
        return exact_match(y_box, self.y_test)


@dataclass(frozen=True)
class SolutionData:
    """Observed ``(c, y)`` pairs on the box ``[lb, ub]``: float64 tensors (N, n); ``A_eq``,
    ``b_eq``: equalities they all satisfy, kept fixed beside the learned rows (None: none)."""

    c_train: torch.Tensor
    y_train: torch.Tensor
    c_test: torch.Tensor
    y_test: torch.Tensor
    lb: Any
    ub: Any
    A_eq: torch.Tensor | None = None
    b_eq: torch.Tensor | None = None

    @property
    def num_variables(self) -> int:
        return int(self.c_train.shape[1])


@dataclass(frozen=True)
class ILPLossConfig:
    """ILP-Loss' settings. The loss, the negatives, the margins, the balancer, the start and the
    temperature rule are the authors' (their ``conf/random_constraints/*/ilploss``); the schedule
    is faster, because the authors trained for up to a day and this library aims at minutes
    (measured on binary Random Constraints m = 4, docs/records/ilploss.md).

    Args:
        epochs: at most this many passes over the training pairs (200).
        lr: the peak of AdamW's triangular cyclic learning rate, which rises from 0 to ``lr`` in
            ``cycle_epochs`` epochs and falls back in as many (3e-3; the authors: 1e-3).
        cycle_epochs: epochs of the schedule's rising half (5; the authors: 1 500 steps, 10 of
            their epochs).
        batch_size: pairs per step (40; the authors: 10, 4x the steps for the same accuracy).
        margin_pos: the distance by which an observed solution should lie inside (0.01).
        margin_neg: the distance by which a negative should lie outside (0.01).
        temperature: the soft-min temperature to start from, in units of the box's mean width
            (0.1: 0.1 on {0, 1}, 1.0 on [-5, 5]). The authors start at 1.0 on every box; on
            binary Random Constraints m = 4 that stalled until the first cut to 0.1, and 0.1 on
            the dense box never left 4 %.
        temperature_factor: the temperature is multiplied by this (0.1) when the validation
            accuracy has not improved for more than ``temperature_patience`` validations (2;
            the authors: 4 of theirs, 80 epochs).
        temperature_patience: see ``temperature_factor``.
        validate_every: epochs between validations (10, each at the bottom of a rate cycle,
            where the accuracy is steadiest; the authors: 20). The validation picks the
            temperature, the stop and the model returned.
        stop_patience: stop after this many validations without improvement (10; authors: 20).
        hops: the sizes of the random multi-step neighbours (2, 3, 4).
        samples_per_hop: random neighbours drawn per size (16).
        k: learn ``k * m`` constraints for ``m`` hidden ones (the authors: 2).
        origin: the constraint parametrisation (`ORIGINS`).
        init: only ``"random"``: the authors' random hyperplanes, each 0.2 from its origin.
    """

    epochs: int = 200
    lr: float = 3e-3
    cycle_epochs: float = 5.0
    batch_size: int = 40
    margin_pos: float = 0.01
    margin_neg: float = 0.01
    temperature: float = 0.1
    temperature_factor: float = 0.1
    temperature_patience: int = 2
    validate_every: int = 10
    stop_patience: int = 10
    hops: tuple[int, ...] = (2, 3, 4)
    samples_per_hop: int = 16
    k: int = 2
    origin: str = "learnable"
    init: str = "random"
    init_choices: ClassVar[tuple[str, ...]] = ("random",)

    def __post_init__(self) -> None:
        for name in (
            "epochs",
            "batch_size",
            "temperature_patience",
            "validate_every",
            "stop_patience",
            "samples_per_hop",
            "k",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("lr", "cycle_epochs", "margin_pos", "margin_neg", "temperature"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not (
            isinstance(self.temperature_factor, (int, float)) and 0 < self.temperature_factor < 1
        ):
            raise ValueError(
                f"temperature_factor must lie strictly between 0 and 1, got {self.temperature_factor!r}"
            )
        hops = tuple(self.hops)
        if not hops or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hops):
            raise ValueError(f"hops must be positive integers, got {self.hops!r}")
        object.__setattr__(self, "hops", hops)
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {list(ORIGINS)}, got {self.origin!r}")
        if self.init not in self.init_choices:
            raise ValueError(
                f"init must be one of {list(self.init_choices)} for ILP-Loss, got {self.init!r}"
            )

    def replace(self, **overrides: Any) -> ILPLossConfig:
        """A copy with ``overrides``; an unknown name is refused with the known ones."""
        return replace_checked(self, overrides, "ILP-Loss setting(s)")

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "hops": list(self.hops)}


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
