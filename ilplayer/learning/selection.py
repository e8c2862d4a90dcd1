"""Which trained model a constraint-learning run returns: the restart best on the validation
pairs, its best epoch, the start read off the data when that scores better, each polished
(`ilplayer.learning.polish.polish_constraints`) and kept only where the polish does not hurt.
[`learn_constraints`][ilplayer.learning.learn.learn_constraints] calls
[`train_and_select`][ilplayer.learning.selection.train_and_select].
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ilplayer.layer import ILPLayer
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.restarts import History, train_from_start, train_in_processes
from ilplayer.learning.settings import SolutionData
from ilplayer.metrics import exact_match

__all__ = ["polish_model", "polish_with_start", "selected_record", "train_and_select"]


def selected_record(history: list[dict[str, float]]) -> dict[str, float]:
    """The record of the trained epoch whose model training returned: best validation accuracy
    (the earliest), else the last."""
    trained = [r for r in history if r["epoch"] > 0]
    scored = [
        r for r in trained if "validation_accuracy" in r
    ]  # ILP-Loss validates every few epochs
    if not scored:
        return trained[-1] if trained else {"epoch": 0}
    return max(scored, key=lambda r: (r["validation_accuracy"], -r["epoch"]))


def _progress_bar(train: dict[str, Any], restarts: int, done: int) -> Any:
    """A tqdm bar over every restart's epochs, starting at the ``done`` ones a checkpoint holds."""
    from tqdm import tqdm

    total = train["config"].epochs * restarts
    bar = tqdm(total=total, initial=done, unit="epoch", dynamic_ncols=True)
    if done:
        bar.write(
            f"resumed from {train['checkpoint']}: {done} of {total} epochs "
            f"({train['method']}) done before"
        )
    return bar


def _reporter(
    bar: Any, on_epoch: Callable[[dict[str, float]], None] | None
) -> Callable[[dict[str, float]], None]:
    """What each epoch's record goes to: the bar (its loss and accuracies) and ``on_epoch``."""

    def report(record: dict[str, float]) -> None:
        if bar is not None:
            bar.update(1)
            shown = {"loss": f"{record['loss']:.4f}"}
            for key, label in (("accuracy", "accuracy"), ("validation_accuracy", "validation")):
                if key in record:
                    shown[label] = f"{100 * record[key]:.1f}%"
            bar.set_postfix(shown)
        if on_epoch is not None:
            on_epoch(record)

    return report


def train_and_select(
    train: dict[str, Any],
    seeds: list[int],
    restart_workers: int,
    layer: ILPLayer,
    polish: bool,
    progress: bool,
    on_epoch: Callable[[dict[str, float]], None] | None,
    resumed: list[int] | None = None,
) -> tuple[
    list[tuple[float, StaticConstraints, History]],
    int,
    StaticConstraints,
    int,
    dict[str, Any] | None,
]:
    """Train from each seed, keep the restart best on the validation pairs, polish it.
    ``resumed``: the epochs each restart's checkpoint holds (the bar starts there).
    Returns the runs (validation accuracy, model, history), the kept restart, its final model,
    the epoch that model comes from (0: the start) and the polish summary."""
    config, validation, data = train["config"], train["validation"], train["data"]
    restarts = len(seeds)
    bar = _progress_bar(train, restarts, sum(resumed or ())) if progress else None
    report = _reporter(bar, on_epoch)

    runs = []  # (validation accuracy of the selected epoch, model, history) per restart
    try:
        if restart_workers > 1 and restarts > 1:
            trained = train_in_processes(train, seeds, min(restart_workers, restarts), report)
        else:
            trained = [train_from_start(run_seed, train, report) for run_seed in seeds]
        for model, history, _ in trained:
            runs.append((selected_record(history).get("validation_accuracy", 0.0), model, history))
    finally:
        if bar is not None:
            bar.close()
    kept = max(range(restarts), key=lambda r: (runs[r][0], -r))  # ties: the earliest restart
    _, model, history = runs[kept]
    selected_epoch = int(selected_record(history)["epoch"])
    with torch.no_grad():
        polished = None
        # A start read off the data can beat every epoch trained from it (docs/records/learn.md, "Which
        # epoch"): it competes with the trained model on the validation pairs.
        initial = (
            trained[kept][2] if validation is not None and config.init == "separating" else None
        )
        if polish:
            model, polished = polish_with_start(
                model, selected_epoch, initial, data, validation, layer, config.origin, progress
            )
            selected_epoch = polished["epoch"]
        elif initial is not None and history[0]["validation_accuracy"] > runs[kept][0]:
            model, selected_epoch = initial, 0
    return runs, kept, model, selected_epoch, polished


def polish_with_start(
    model: StaticConstraints,
    epoch: int,
    start: StaticConstraints | None,
    data: SolutionData,
    validation: tuple[torch.Tensor, torch.Tensor] | None,
    layer: ILPLayer,
    origin: str,
    progress: bool,
) -> tuple[StaticConstraints, dict[str, Any]]:
    """`polish_model` on the trained model (of ``epoch``) and, given a ``start`` read off the
    data, on it too, keeping whichever does better on the validation pairs (ties: the trained one).

    Either can win: on dense Random Constraints the steps blur the start's offsets (it beat every
    trained epoch before polish on each dataset measured), yet the trained rows polished better on
    two datasets of five (docs/records/learn.md, "Which epoch"). The summary says which ``epoch`` was kept
    (0: the start) and, under ``other``, how the candidate not taken did."""
    model, polished = polish_model(model, data, validation, layer, origin, progress=progress)
    polished["epoch"] = epoch
    if start is None:
        return model, polished
    start, from_start = polish_model(start, data, validation, layer, origin, progress=progress)
    from_start["epoch"] = 0
    score = lambda summary: summary["accuracy_after" if summary["kept"] else "accuracy_before"]
    if score(from_start) > score(polished):
        model, polished, from_start = start, from_start, polished
    polished["other"] = {
        k: from_start[k]
        for k in ("epoch", "accuracy_before", "accuracy_after", "kept", "rows_after", "seconds")
    }
    return model, polished


def polish_model(
    model: StaticConstraints,
    data: SolutionData,
    validation: tuple[torch.Tensor, torch.Tensor] | None,
    layer: ILPLayer,
    origin: str,
    progress: bool = False,
) -> tuple[StaticConstraints, dict[str, Any]]:
    """`polish_constraints` on the training pairs, kept if it does at least
    as well on the validation pairs (else the training pairs). ``progress``: a bar over its
    accuracy checks (each solves the training pairs once)."""
    from ilplayer.learning.polish import polish_constraints

    c, y = data.c_train, data.y_train
    score = lambda A, b, pairs=(c, y): exact_match(
        layer(
            pairs[0],
            torch.as_tensor(A, dtype=c.dtype),
            torch.as_tensor(b, dtype=c.dtype),
            data.A_eq,
            data.b_eq,
        ),
        pairs[1],
    )
    A, b = (t.numpy() for t in model())
    start = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=2 * len(A) + 1, desc="polish", unit="check", dynamic_ncols=True)

    def counted(A_: np.ndarray, b_: np.ndarray) -> float:
        if bar is not None:
            bar.update(1)
        return score(A_, b_)

    try:
        A_new, b_new, summary = polish_constraints(
            A, b, c.numpy(), y.numpy(), data.lb, data.ub, counted
        )
    finally:
        if bar is not None:
            bar.close()
    if validation is not None:
        before, after = score(A, b, validation), score(A_new, b_new, validation)
    else:  # the training pairs, already scored by the polish itself
        before, after = summary["train_accuracy_before"], summary["train_accuracy"]
    summary.update(
        judged_on="validation" if validation is not None else "train",
        accuracy_before=before,
        accuracy_after=after,
        kept=after >= before,
        seconds=time.perf_counter() - start,
    )
    if not summary["kept"]:
        return model, summary
    return StaticConstraints.from_rows(
        torch.as_tensor(A_new), torch.as_tensor(b_new), data.lb, data.ub, origin=origin
    ), summary
