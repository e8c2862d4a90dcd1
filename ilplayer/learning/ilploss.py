"""ILP-Loss: learn constraints ``A y <= b`` from observed solutions with no solver in the loop.

Nandwani, Ranjan, Mausam and Singla, "A Solver-Free Framework for Scalable Learning in Neural
ILP Architectures" (NeurIPS 2022). Learning the constraints is read as learning a classifier of
feasible and infeasible points: every observed solution ``y`` (a positive) must lie inside every
learned half-space, and every integer point ``z`` near ``y`` that is at least as good under ``y``'s
cost (``c·z <= c·y``: had it been feasible, ``y`` would not be optimal) must lie outside at least
one of them. The loss has three terms over the learned rows, with unit normals so that
``d_j(z) = b_j - a_j·z`` is a signed distance:

* positive: ``mean_j relu(margin_pos - d_j(y))``;
* negative: over the sampled negatives that the known constraints (the box and the cost row)
  leave in play, ``sum_j w_j relu(margin_neg + d_j(z))`` with ``w = softmin(d(z) / T)`` held
  constant, so the nearest rows take the blame (``T`` is lowered when validation stalls);
* variety: the squared mean of all unit normals (learned, box and cost rows), which keeps the
  learned rows from collapsing onto one direction;

weighted by the coefficient-of-variation balancer (Groenendijk et al., 2021). Negatives are the
point's neighbours (one unit step along each axis), random 2-, 3- and 4-step neighbours, and the
projections of ``y`` onto each learned hyperplane rounded at random to integers. A solver is
only needed to measure accuracy (the validation pairs that pick the temperature and the epoch,
and the held-out pairs).

Against the authors' code: their box-integer k-step neighbours step ±1 with a random sign and
the box then discards those that leave it; here a coordinate at a bound steps inward (on a
binary box this is their bit flip, which they use there). The schedule is faster
(`ILPLossConfig`: the authors trained for up to a day).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ilplayer.core.bounds import as_bounds
from ilplayer.core.seeding import derive_seed, torch_generator
from ilplayer.layer import ILPLayer
from ilplayer.learning.checkpoint import EpochCheckpoint
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.ilploss_terms import CoVBalancer, ilp_loss_terms, sample_negatives
from ilplayer.learning.loop import box_points, known_equalities
from ilplayer.learning.settings import BackendConfig, ILPLossConfig
from ilplayer.metrics import exact_match
from ilplayer.solvers.registry import preferred_backend

__all__ = ["fit_ilploss", "initial_ilploss_constraints", "train_ilploss"]


# --- training ---------------------------------------------------------------------------------


def initial_ilploss_constraints(
    count: int, n: int, lb: Any, ub: Any, origin: str, seed: int
) -> StaticConstraints:
    """The authors' start: random unit normals, origins in the box's centre sub-cube, each
    hyperplane 0.2 from its origin with the origin inside."""
    model = StaticConstraints(
        count, n, lb, ub, origin=origin, seed=derive_seed(seed, 1), dtype=torch.float64
    )
    with torch.no_grad():
        model.offsets.fill_(0.2)
    return model


def train_ilploss(
    data: Any,
    config: ILPLossConfig | None = None,
    backend: BackendConfig | None = None,
    *,
    seed: int = 0,
    num_constraints: int | None = None,
    model: StaticConstraints | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    validation: tuple[torch.Tensor, torch.Tensor] | None = None,
    test_every: int = 1,
    checkpoint: EpochCheckpoint | None = None,
) -> tuple[StaticConstraints, list[dict[str, float]]]:
    """Learn ``config.k * m`` constraints with ILP-Loss; called like
    `train_static_constraints` (``data`` has ``lb``, ``ub``,
    ``c_train``, ``y_train``, ``c_test``, ``y_test``).

    Training solves nothing; the layer solves the validation pairs (the training pairs without
    them) and the held-out pairs as [`fit_ilploss`][ilplayer.learning.ilploss.fit_ilploss] says. The
    untrained start is not scored: its random rows can make programs that take a solver a
    minute each to prove infeasible."""
    config = config or ILPLossConfig()
    backend = backend or BackendConfig()
    c_train, y_train = data.c_train.to(torch.float64), data.y_train.to(torch.float64)
    N, n = c_train.shape
    m = num_constraints if num_constraints is not None else data.A.shape[0]
    lo = torch.as_tensor(as_bounds(data.lb, n, "lb"), dtype=torch.float64)
    hi = torch.as_tensor(as_bounds(data.ub, n, "ub"), dtype=torch.float64)
    constraints = model or initial_ilploss_constraints(
        config.k * m, n, data.lb, data.ub, config.origin, seed
    )
    solver = backend.solver or preferred_backend(box_points(data.lb, data.ub, n))
    layer = ILPLayer(data.lb, data.ub, **vars(dataclasses.replace(backend, solver=solver)))
    pairs = {
        "validation": validation if validation is not None else (c_train, y_train),
        "test": (data.c_test, data.y_test),
    }

    A_eq, b_eq = known_equalities(data)

    batch_terms = _batch_terms(constraints, (c_train, y_train), (lo, hi), config, (A_eq, b_eq))

    def accuracy(which: str) -> float:
        c, y = pairs[which]
        return exact_match(layer(c, *constraints(), A_eq, b_eq), y)

    try:
        history = fit_ilploss(
            constraints,
            N,
            config,
            batch_terms,
            accuracy,
            seed=seed,
            box_width=float((hi - lo).mean()),
            score_start=False,
            test_every=test_every,
            on_epoch=on_epoch,
            checkpoint=checkpoint,
        )
    finally:
        layer.close()
    return constraints, history


def _batch_terms(
    constraints: StaticConstraints,
    pairs: tuple[torch.Tensor, torch.Tensor],
    box: tuple[torch.Tensor, torch.Tensor],
    config: ILPLossConfig,
    equalities: tuple[Any, Any],
) -> Callable[[torch.Tensor, float, torch.Generator], dict[str, torch.Tensor]]:
    """The loop's ``batch_terms``: negatives sampled around the rows' observed ``y`` and the
    three terms of the loss on them."""
    (c_train, y_train), (lo, hi), (A_eq, b_eq) = pairs, box, equalities

    def batch_terms(
        rows: torch.Tensor, temperature: float, g: torch.Generator
    ) -> dict[str, torch.Tensor]:
        c, y = c_train[rows], y_train[rows]
        A, b = constraints()
        with torch.no_grad():
            candidates = sample_negatives(
                y, A.detach(), b.detach(), lo, hi, config.hops, config.samples_per_hop, g
            )
        return ilp_loss_terms(
            A,
            b,
            c,
            y,
            candidates,
            lo,
            hi,
            temperature,
            config.margin_pos,
            config.margin_neg,
            A_eq=A_eq,
            b_eq=b_eq,
        )

    return batch_terms


def fit_ilploss(
    model: torch.nn.Module,
    num_examples: int,
    config: ILPLossConfig,
    batch_terms: Callable[[torch.Tensor, float, torch.Generator], dict[str, torch.Tensor]],
    accuracy: Callable[[str], float],
    *,
    seed: int,
    box_width: float,
    score_start: bool = True,
    test_every: int = 1,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    clip_norm: float | None = None,
    checkpoint: EpochCheckpoint | None = None,
) -> list[dict[str, float]]:
    """ILP-Loss' loop over ``model``'s parameters: per step, ``batch_terms(rows, temperature,
    generator)`` gives the three terms of a batch of rows, weighted by
    [`CoVBalancer`][ilplayer.learning.ilploss_terms.CoVBalancer]; AdamW with the triangular cyclic rate;
    gradients clipped to ``clip_norm`` when given.

    Every ``config.validate_every`` epochs (and after the last) ``accuracy("validation")``
    lowers the soft-min temperature (``config.temperature`` box widths at first) when it
    stalls, stops training after ``config.stop_patience`` validations without a gain or at
    100 %, and picks the state ``model`` ends in (the best trained epoch, earliest among ties,
    as [`selected_record`][ilplayer.learning.selection.selected_record] reads it; with ``score_start`` the untrained
    start is scored too, as epoch 0, but does not compete). ``accuracy("test")`` is
    measured at every ``test_every``-th validation and at the end. With a ``checkpoint`` every
    epoch is saved with the loop's whole state (the schedule, the balancer, both random streams,
    the temperature, the best model so far) and a run stopped part-way goes on from its last
    epoch, as if it had not stopped. Returns one record per epoch."""
    if isinstance(test_every, bool) or not isinstance(test_every, int) or test_every < 1:
        raise ValueError(f"test_every must be a positive integer, got {test_every!r}")
    optimizer, scheduler = _schedule(model, config, num_examples)
    balancer = CoVBalancer(3)
    shuffle, negatives_g = torch_generator(seed, 2), torch_generator(seed, 3)
    loop = _initial_loop(config, box_width)
    # Beside the loop's dict, the objects whose state a checkpoint keeps: restored in place.
    kept = {"scheduler": scheduler, "balancer": balancer, "negatives": negatives_g}
    history = [] if checkpoint is None else _restored(checkpoint, optimizer, shuffle, loop, kept)

    def save(finished: bool) -> None:
        if checkpoint is not None:
            checkpoint.save(optimizer, shuffle, history, _saved(loop, kept), finished=finished)

    scores = _scorer(model, accuracy, loop, test_every)
    if score_start and not history:
        history.append({"epoch": 0, **scores(False)})
    done = int(history[-1]["epoch"]) if history else 0
    start_epoch = config.epochs + 1 if checkpoint is not None and checkpoint.finished else done + 1
    for epoch in range(start_epoch, config.epochs + 1):
        order = torch.randperm(num_examples, generator=shuffle)
        step = (optimizer, scheduler, balancer, clip_norm)
        totals = _train_epoch(model, order, config.batch_size, batch_terms, loop, negatives_g, step)
        record: dict[str, float] = {"epoch": epoch, **totals, "temperature": loop["temperature"]}
        last = epoch == config.epochs
        if epoch % config.validate_every == 0 or last:
            record.update(scores(last))
            _after_validation(loop, record["validation_accuracy"], model, config)
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        stopping = _stops(record, last, loop, config.stop_patience)
        if stopping and "accuracy" not in record:  # the curve ends with a held-out score
            with torch.no_grad():
                record["accuracy"] = accuracy("test")
        save(finished=stopping)
        if stopping:
            break
    if loop["best_state"] is not None:
        model.load_state_dict(loop["best_state"])
    return history


def _scorer(
    model: torch.nn.Module, accuracy: Callable[[str], float], loop: dict[str, Any], test_every: int
) -> Callable[[bool], dict[str, float]]:
    """A validation's record: the validation accuracy, and the held-out one on every
    ``test_every``-th validation and the ``final`` one (the model in eval mode meanwhile)."""

    def scores(final: bool) -> dict[str, float]:
        loop["validations"] += 1
        was_training = model.training
        model.eval()
        with torch.no_grad():
            record = {"validation_accuracy": accuracy("validation")}
            if final or loop["validations"] % test_every == 0:
                record["accuracy"] = accuracy("test")
        model.train(was_training)
        return record

    return scores


def _stops(record: dict[str, float], last: bool, loop: dict[str, Any], patience: int) -> bool:
    """Whether training stops after this validated epoch: 100 %, or ``patience`` validations
    without a gain (never on the last epoch, which ends the run anyway)."""
    return (
        "validation_accuracy" in record
        and not last
        and (record["validation_accuracy"] >= 1.0 or loop["since_best"] >= patience)
    )


def _schedule(
    model: torch.nn.Module, config: ILPLossConfig, num_examples: int
) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW and the triangular cyclic rate, a cycle every ``config.cycle_epochs`` epochs."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    steps = -(-num_examples // config.batch_size)  # per epoch
    scheduler = torch.optim.lr_scheduler.CyclicLR(
        optimizer,
        base_lr=0.0,
        max_lr=config.lr,
        step_size_up=max(1, round(config.cycle_epochs * steps)),
        cycle_momentum=False,
    )
    return optimizer, scheduler


def _initial_loop(config: ILPLossConfig, box_width: float) -> dict[str, Any]:
    """What the loop keeps between epochs, beside the optimizer and the shuffling stream (a
    checkpoint saves it)."""
    return {
        "temperature": config.temperature * box_width,
        "best_accuracy": -1.0,
        "best_state": None,
        "since_best": 0,
        "since_cooled": 0,  # validations without a gain: in all, and since the last cooling
        "validations": 0,
    }


def _train_epoch(
    model: torch.nn.Module,
    order: torch.Tensor,
    batch_size: int,
    batch_terms: Callable[[torch.Tensor, float, torch.Generator], dict[str, torch.Tensor]],
    loop: dict[str, Any],
    negatives: torch.Generator,
    step: tuple[Any, ...],
) -> dict[str, float]:
    """One epoch of steps over the rows in ``order``; ``step`` is ``(optimizer, scheduler,
    balancer, clip_norm)``. Returns the epoch's mean loss and terms."""
    optimizer, scheduler, balancer, clip_norm = step
    num_examples = len(order)
    totals = {"loss": 0.0, "pos": 0.0, "neg": 0.0, "var": 0.0, "in_play": 0.0}
    # small tensors: a second thread only contends (docs/records/ilploss.md)
    with _torch_threads(1):
        for first in range(0, num_examples, batch_size):
            rows = order[first : first + batch_size]
            terms = batch_terms(rows, loop["temperature"], negatives)
            loss = balancer(torch.stack([terms["pos"], terms["neg"], terms["var"]]))
            optimizer.zero_grad()
            loss.backward()
            if clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
            optimizer.step()
            scheduler.step()
            share = len(rows) / num_examples
            totals["loss"] += loss.item() * share
            for key in ("pos", "neg", "var", "in_play"):
                totals[key] += terms[key].item() * share
    return totals


def _after_validation(
    loop: dict[str, Any], accuracy: float, model: torch.nn.Module, config: ILPLossConfig
) -> None:
    """A validation's consequences: the best model so far, or a stall counted and, after
    ``config.temperature_patience`` of them, the temperature cut."""
    if accuracy > loop["best_accuracy"]:
        loop["best_accuracy"], loop["best_state"] = accuracy, _copy_state(model)
        loop["since_best"] = loop["since_cooled"] = 0
        return
    loop["since_best"] += 1
    loop["since_cooled"] += 1
    if loop["since_cooled"] > config.temperature_patience:
        loop["temperature"] *= config.temperature_factor
        loop["since_cooled"] = 0


def _saved(loop: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint keeps of the loop: its dict and the ``kept`` objects' states."""
    return {
        **loop,
        "scheduler": kept["scheduler"].state_dict(),
        "balancer": dict(vars(kept["balancer"])),
        "negatives": kept["negatives"].get_state(),
    }


def _restored(
    checkpoint: EpochCheckpoint,
    optimizer: torch.optim.Optimizer,
    shuffle: torch.Generator,
    loop: dict[str, Any],
    kept: dict[str, Any],
) -> list[dict[str, float]]:
    """The saved epochs' records, with the optimizer, the shuffling stream, ``loop`` and the
    ``kept`` objects (the rate schedule, the balancer, the negatives' stream) as they were."""
    history = checkpoint.restore(optimizer, shuffle, loop)
    if history:
        kept["scheduler"].load_state_dict(loop.pop("scheduler"))
        vars(kept["balancer"]).update(loop.pop("balancer"))
        kept["negatives"].set_state(loop.pop("negatives"))
    return history


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op threads set to ``count`` inside, restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _copy_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
