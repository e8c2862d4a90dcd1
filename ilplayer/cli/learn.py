"""``ilplayer learn FILE``: read and check the user's (cost, solution) pairs, learn their
constraints with [`learn_constraints`][ilplayer.learning.learn.learn_constraints], print what was found and
write the record (``--json``) and the model (``--out``). ``run_learn`` returns the exit status:
0 done, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import ilplayer.learning.learn as learning
from ilplayer.learning.settings import BackendConfig
from ilplayer.parallel.workers import default_workers

__all__ = ["run_learn"]

Config = learning.LearnConfig | learning.ILPLossConfig | learning.AutoConfig


def run_learn(args: argparse.Namespace) -> int:
    unwritable = _make_output_folders(args)
    if unwritable:
        print(f"ilplayer learn: {unwritable}", file=sys.stderr)
        return 2
    try:
        c, y, lb, ub, c_test, y_test = _observations(args)
        config = _config(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"ilplayer learn: {exc}", file=sys.stderr)
        return 2
    _warn_about_the_observations(args, c, y, c_test, y_test, lb, ub)
    _announce(args, config, c, c_test)
    restart_workers = args.restart_workers or min(args.restarts, default_workers())
    try:
        result = learning.learn_constraints(
            c,
            y,
            lb,
            ub,
            args.num_constraints,
            c_test=c_test,
            y_test=y_test,
            test_fraction=args.test_fraction,
            config=config,
            seed=args.seed,
            method=args.method,
            validation_fraction=args.validation_fraction,
            restarts=args.restarts,
            test_every=args.test_every,
            polish=args.polish,
            equalities=args.equalities,
            time_limit=args.time_limit,
            restart_workers=restart_workers,
            checkpoint=args.checkpoint,
            backend=BackendConfig(args.solver, None, args.executor, args.workers),
        )
    except ValueError as exc:  # a checkpoint folder of another run, a setting refused
        print(f"ilplayer learn: {exc}", file=sys.stderr)
        return 2
    _print_result(result)
    _save(args, result)
    return 0


def _observations(args: argparse.Namespace) -> tuple[Any, ...]:
    """``(c, y, lb, ub, c_test, y_test)`` from the files (the test pair None without ``--test``)."""
    c, y, lb, ub = learning.load_solutions(args.train, args.lb, args.ub)
    if not args.test:
        if not 0 < args.test_fraction < 1:
            raise ValueError(
                f"--test-fraction must lie strictly between 0 and 1, got {args.test_fraction}"
            )
        print(
            f"no --test file: holding out {learning.holdout_size(len(c), args.test_fraction)} of {len(c)} "
            f"observations (--test-fraction {args.test_fraction})"
        )
        return c, y, lb, ub, None, None  # learn_constraints holds pairs out
    c_test, y_test, lb_test, ub_test = learning.load_solutions(args.test, lb, ub)
    if c_test.shape[1] != c.shape[1]:
        raise ValueError(
            f"{args.test}: {c_test.shape[1]} variables, but {args.train} has {c.shape[1]}"
        )
    return c, y, lb, ub, c_test, y_test


def _warn_about_the_observations(
    args: argparse.Namespace, c: Any, y: Any, c_test: Any, y_test: Any, lb: Any, ub: Any
) -> None:
    """`check_solutions`' warnings on every observation, in the files' order, each naming its
    file and row."""
    train_rows = len(c)  # the rows after them are the test file's
    if c_test is not None:
        c, y = np.vstack([c, c_test]), np.vstack([y, y_test])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learning.check_solutions(
            c,
            y,
            lb,
            ub,
            lambda i: (
                f"{args.train} row {i}" if i < train_rows else f"{args.test} row {i - train_rows}"
            ),
        )
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)


def _announce(args: argparse.Namespace, config: Config, c: Any, c_test: Any) -> None:
    """One line: how many rows are learned with which method, from how many observations."""
    held_out = (
        len(c_test) if c_test is not None else learning.holdout_size(len(c), args.test_fraction)
    )
    rows = (
        f"{args.num_constraints * config.k} constraints with {args.method}"
        if not isinstance(config, learning.AutoConfig)
        else f"{args.num_constraints * config.ilploss.k} constraints with ilploss and "
        f"{args.num_constraints * config.combopt.k} with combopt (the better kept)"
    )
    print(
        f"learning {rows} on {c.shape[1]} variables from "
        f"{len(c) - (0 if c_test is not None else held_out)} observations ({held_out} held out)"
    )


def _config(args: argparse.Namespace) -> Config:
    """The method's config from the options: ``--epochs --lr --batch-size --k`` for any method,
    the others for their own (refused for another ``--method``)."""
    given = {
        key: value
        for key, value in (
            ("epochs", args.epochs),
            ("lr", args.lr),
            ("batch_size", args.batch_size),
            ("k", args.k),
        )
        if value is not None
    }
    own = {
        "combopt": {
            "tau": args.tau,
            "box_relative_steps": args.box_relative_steps,
            "init": args.init,
        },
        "ilploss": {"temperature": args.temperature},
    }
    for method, options in own.items():
        foreign = [
            f"--{name.replace('_', '-')}" for name, value in options.items() if value is not None
        ]
        if args.method not in (method, "auto") and foreign:
            raise ValueError(
                f"{', '.join(foreign)} belong(s) to --method {method}, not {args.method}"
            )
    configs: dict[str, Callable[..., Any]] = {
        "combopt": learning.LearnConfig,
        "ilploss": lambda **kw: learning.ILPLossConfig(**{**learning.LEARN_ILPLOSS, **kw}),
    }
    built = {
        method: configs[method](
            **given, **{name: value for name, value in own[method].items() if value is not None}
        )
        for method in (learning.LEARN_METHODS if args.method == "auto" else (args.method,))
    }
    return learning.AutoConfig(**built) if args.method == "auto" else built[args.method]


def _which_model(epoch: int) -> str:
    return "the start, untrained" if epoch == 0 else f"model of epoch {epoch}"


def _print_result(result: learning.LearnResult) -> None:
    """The accuracies, which method ``auto`` kept, the equalities found and what polish did."""
    alone = result.equalities() is not None and result.constraints()[0].shape[0] == 0
    which = "the equalities alone" if alone else _which_model(result.settings["selected_epoch"])
    print(
        f"exact-match accuracy: train {100 * result.train_accuracy:.1f} %, held out "
        f"{100 * result.test_accuracy:.1f} % ({which}; "
        f"{result.settings['solver']}, {result.wall_time_s:.0f} s)"
    )
    auto = result.settings.get("auto")
    if auto:
        print(
            f"auto: {auto['judged_on']} accuracy ilploss {100 * auto['ilploss_accuracy']:.1f} % "
            f"({auto['ilploss_seconds']:.0f} s)"
            + (
                f", combopt {100 * auto['combopt_accuracy']:.1f} % ({auto['combopt_seconds']:.0f} s)"
                if "combopt_accuracy" in auto
                else ", combopt not run (nothing left to learn)"
            )
            + f": kept {auto['kept']}"
        )
    found = result.settings["equalities"]
    if found and found["rows"]:
        print(
            f"equalities: {found['rows']} found on the {found['found_on']}"
            + (", enough alone: nothing trained" if alone else ", kept fixed")
        )
    polished = result.settings["polish"]
    if polished:
        print(
            f"polish: {polished['rows_before']} -> {polished['rows_after']} constraints, {polished['judged_on']} "
            f"accuracy {100 * polished['accuracy_before']:.1f} -> {100 * polished['accuracy_after']:.1f} %, "
            + ("kept" if polished["kept"] else "not kept: the trained constraints stay")
        )
        other = polished.get("other")
        if other:
            print(
                f"polish of {_which_model(other['epoch'])}: validation accuracy {100 * other['accuracy_before']:.1f}"
                f" -> {100 * other['accuracy_after']:.1f} %, not taken"
            )


def _make_output_folders(args: argparse.Namespace) -> str | None:
    """The folders of ``--json`` and ``--out``, made before training (a run that trained to the
    end lost its result to a missing folder); what is wrong, or None."""
    for option, path in (("--json", args.json), ("--out", args.out)):
        if path is None:
            continue
        folder = Path(path).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"{option} {path}: cannot make its folder {folder}: {exc.strerror or exc}"
        if Path(path).is_dir():
            return f"{option} {path}: is a folder; give a file name"
    return None


def _save(args: argparse.Namespace, result: learning.LearnResult) -> None:
    """The ``--json`` record and the ``--out`` model file, where asked for."""
    if args.json:
        record = {
            "train": str(args.train),
            "test": str(args.test) if args.test else None,
            **result.record(),
        }
        Path(args.json).write_text(json.dumps(record, indent=1))
        print(f"wrote {args.json}")
    if args.out:
        A, b = result.constraints()
        equalities = result.equalities()
        torch.save(
            {
                "A": A,
                "b": b,
                "lb": result.settings["lb"],
                "ub": result.settings["ub"],
                **({"A_eq": equalities[0], "b_eq": equalities[1]} if equalities else {}),
                "state_dict": result.model.state_dict(),
                "settings": result.settings,
            },
            args.out,
        )
        print(
            f"wrote {args.out} (A, b{', A_eq, b_eq' if equalities else ''}, the box and the model's state_dict)"
        )
