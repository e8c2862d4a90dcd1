"""``ilplayer learn``'s options: the data, the program, the method and its settings, the backend,
the outputs."""

from __future__ import annotations

import argparse
from typing import Any

from ilplayer.cli.arguments import EXECUTOR_CHOICES, bounds, positive_int, solver_name
from ilplayer.learning.defaults import LEARN_ILPLOSS, LEARN_METHODS, LearnConfig
from ilplayer.learning.learn import LEARN_DEFAULTS, ILPLossConfig

__all__ = ["add_learn_parser"]


def add_learn_parser(commands: Any) -> None:
    """``ilplayer learn FILE``: its options in three groups."""
    learn = commands.add_parser(
        "learn", help="learn hidden constraints from your (cost, solution) pairs"
    )
    _add_data_options(learn.add_argument_group("the observations and the program"))
    _add_method_options(learn.add_argument_group("the method, restarts and selection"))
    _add_step_options(learn.add_argument_group("the training steps"))
    _add_after_training_options(learn.add_argument_group("the start and what follows training"))
    _add_run_options(learn.add_argument_group("the run: seed, resuming, backend, outputs"))


def _add_data_options(learn: Any) -> None:
    learn.add_argument(
        "train",
        help="observations: .npz with arrays c (N, n) and y (N, n) "
        "(optionally lb, ub), or .csv with columns c0.., y0..",
    )
    learn.add_argument("--test", default=None, help="held-out observations, same format")
    learn.add_argument(
        "--test-fraction",
        type=float,
        default=LEARN_DEFAULTS["test_fraction"],
        help="without --test: the share of TRAIN held out (default 0.2)",
    )
    learn.add_argument("--lb", type=bounds, default=None, help="lower bounds: 0 or 0,0,-5,...")
    learn.add_argument("--ub", type=bounds, default=None, help="upper bounds: 1 or 1,1,5,...")
    learn.add_argument(
        "--num-constraints",
        type=positive_int,
        required=True,
        help="constraints to learn (times --k)",
    )


def _add_method_options(learn: Any) -> None:
    learn.add_argument(
        "--method",
        choices=[*LEARN_METHODS, "auto"],
        default=LEARN_DEFAULTS["method"],
        help="auto (default): both, the better on the validation pairs kept; combopt: "
        "CombOptNet's gradients through the solver; ilploss: ILP-Loss, no solver while "
        "training (docs/learn.md). With auto, --epochs, --lr, --batch-size and --k "
        "apply to both methods, the others to theirs",
    )
    learn.add_argument(
        "--k",
        type=positive_int,
        default=None,
        help=f"learn k x num-constraints (default {LearnConfig.k}: steadier, see docs/learn.md; "
        f"the CombOptNet paper: 1; ilploss, alone or under auto: {LEARN_ILPLOSS['k']})",
    )
    learn.add_argument(
        "--validation-fraction",
        type=float,
        default=LEARN_DEFAULTS["validation_fraction"],
        help="share of TRAIN used to pick the best epoch (default 0.1; 0: keep the last)",
    )
    learn.add_argument(
        "--restarts",
        type=positive_int,
        default=LEARN_DEFAULTS["restarts"],
        help="train from this many initialisations and keep the best on the "
        "validation split (default 1; the paper's appendix: 2)",
    )
    learn.add_argument(
        "--restart-workers",
        type=positive_int,
        default=None,
        help="restarts trained at once, in worker processes (default: one per core, "
        "up to --restarts; 1: one after the other). The result is the same",
    )
    learn.add_argument(
        "--test-every",
        type=positive_int,
        default=LEARN_DEFAULTS["test_every"],
        help="measure the held-out accuracy on every Nth epoch and the last (default 1; "
        "the model is the same, only the curve is sparser)",
    )


def _add_step_options(learn: Any) -> None:
    learn.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        help=f"at most this many (default: combopt {LearnConfig.epochs}, the paper's; "
        f"ilploss {LEARN_ILPLOSS['epochs']})",
    )
    learn.add_argument(
        "--lr",
        type=float,
        default=None,
        help=f"learning rate (default: combopt Adam {LearnConfig.lr}, the paper's; ilploss "
        f"the peak of AdamW's cyclic rate, {ILPLossConfig.lr})",
    )
    learn.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help=f"(default: combopt {LearnConfig.batch_size}; ilploss {ILPLossConfig.batch_size})",
    )
    learn.add_argument(
        "--tau",
        type=float,
        default=None,
        help="combopt: the gradient's soft-min temperature (paper: 0.5)",
    )
    learn.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="ilploss: the negatives' starting soft-min temperature, in box widths (default "
        f"{ILPLossConfig.temperature}); cut tenfold when the validation accuracy stalls",
    )
    learn.add_argument(
        "--box-relative-steps",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="step the offsets and origins by lr x the box's width, as on [0, 1] "
        "(the paper: off; no change on a binary box)",
    )


def _add_after_training_options(learn: Any) -> None:
    learn.add_argument(
        "--init",
        choices=list(LearnConfig.init_choices),
        default=None,
        help="random: the paper's random hyperplanes; separating: hyperplanes that cut off "
        "the box optima and keep every observed solution; auto (default): separating "
        "where a variable takes more than two values, else random (docs/learn.md)",
    )
    learn.add_argument(
        "--polish",
        action=argparse.BooleanOptionalAction,
        default=LEARN_DEFAULTS["polish"],
        help="refit the trained constraints to what the observations prove and drop spare "
        "rows, kept if the validation accuracy does not fall (default: on; the paper: off)",
    )
    learn.add_argument(
        "--equalities",
        action=argparse.BooleanOptionalAction,
        default=LEARN_DEFAULTS["equalities"],
        help="find the equalities every observed solution satisfies first and keep them fixed "
        "(default: on; see docs/learn.md)",
    )
    learn.add_argument(
        "--time-limit",
        type=float,
        default=LEARN_DEFAULTS["time_limit"],
        help=f"seconds per solve (default {LEARN_DEFAULTS['time_limit']:g}); an instance past it "
        "counts as wrong: untrained rows can make hard programs",
    )


def _add_run_options(learn: Any) -> None:
    learn.add_argument("--seed", type=int, default=0, help="initialisation and shuffling seed")
    learn.add_argument(
        "--checkpoint",
        default=None,
        metavar="DIR",
        help="save every epoch in DIR; the same command again goes on from the last "
        "finished epoch (a run of an hour stopped by a crash or a time limit)",
    )
    learn.add_argument(
        "--solver",
        type=solver_name,
        default=None,
        help="backend (default: bruteforce for small boxes, else the preferred MIP backend)",
    )
    learn.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto")
    learn.add_argument("--workers", type=positive_int, default=None)
    learn.add_argument(
        "--json", default=None, help="write the record (accuracies, settings, curves) here"
    )
    learn.add_argument(
        "--out",
        default=None,
        help="save the learned A, b (and A_eq, b_eq), the box and the model here (torch.save)",
    )
