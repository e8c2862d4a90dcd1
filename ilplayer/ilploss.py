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
binary box this is their bit flip, which they use there), and a sample's coordinates are
distinct. Validation is every ``validate_every`` epochs instead of every 20 (the budget here is
minutes, theirs was a day).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from ilplayer.constraints import ORIGINS, StaticConstraints
from ilplayer.layer import ILPLayer
from ilplayer.metrics import exact_match
from ilplayer.plugins import preferred_backend
from ilplayer.problem import as_bounds
from ilplayer.seeding import derive_seed, torch_generator
from ilplayer.training import BackendConfig, box_points

__all__ = ["CoVBalancer", "ILPLossConfig", "ilp_loss_terms", "initial_ilploss_constraints", "sample_negatives",
           "train_ilploss"]


@dataclass(frozen=True)
class ILPLossConfig:
    """ILP-Loss' settings; the defaults are the authors' Random Constraints settings (their
    ``conf/random_constraints/*/ilploss``) where this library's time budget allows.

    Args:
        epochs: at most this many passes over the training pairs.
        lr: the peak of AdamW's triangular cyclic learning rate (from 0 up to ``lr`` in
            ``cycle_steps`` steps and back).
        cycle_steps: steps of the schedule's rising half (authors: 1 500).
        batch_size: pairs per step (authors: 10).
        margin_pos: the distance by which an observed solution should lie inside (0.01).
        margin_neg: the distance by which a negative should lie outside (0.01).
        temperature: the soft-min temperature to start from, in units of the box's mean width
            (0.1: 0.1 on {0, 1}, 1.0 on [-5, 5]). The authors start at 1.0 on every box; on
            binary Random Constraints m = 4 that stalled until the first cut to 0.1, and 0.1 on
            the dense box never left 4 % (docs/records/ilploss.md).
        temperature_factor: the temperature is multiplied by this when the validation accuracy
            has not improved for ``temperature_patience`` validations (0.1, 4).
        temperature_patience: see ``temperature_factor``.
        validate_every: epochs between validations (the authors: 20 epochs of 150 steps; the
            validation picks the temperature, the stop and the model returned).
        stop_patience: stop after this many validations without improvement (authors: 20).
        hops: the sizes of the random multi-step neighbours (2, 3, 4).
        samples_per_hop: random neighbours drawn per size (16).
        k: learn ``k * m`` constraints for ``m`` hidden ones (the authors: 2).
        origin: the constraint parametrisation (:data:`~ilplayer.constraints.ORIGINS`).
        init: only ``"random"``: the authors' random hyperplanes, each 0.2 from its origin.
    """

    epochs: int = 200
    lr: float = 1e-3
    cycle_steps: int = 1500
    batch_size: int = 10
    margin_pos: float = 0.01
    margin_neg: float = 0.01
    temperature: float = 0.1
    temperature_factor: float = 0.1
    temperature_patience: int = 4
    validate_every: int = 5
    stop_patience: int = 20
    hops: tuple[int, ...] = (2, 3, 4)
    samples_per_hop: int = 16
    k: int = 2
    origin: str = "learnable"
    init: str = "random"
    init_choices: ClassVar[tuple[str, ...]] = ("random",)

    def __post_init__(self) -> None:
        for name in ("epochs", "cycle_steps", "batch_size", "temperature_patience", "validate_every",
                     "stop_patience", "samples_per_hop", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("lr", "margin_pos", "margin_neg", "temperature"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not (isinstance(self.temperature_factor, (int, float)) and 0 < self.temperature_factor < 1):
            raise ValueError(f"temperature_factor must lie strictly between 0 and 1, got {self.temperature_factor!r}")
        hops = tuple(self.hops)
        if not hops or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hops):
            raise ValueError(f"hops must be positive integers, got {self.hops!r}")
        object.__setattr__(self, "hops", hops)
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {list(ORIGINS)}, got {self.origin!r}")
        if self.init not in self.init_choices:
            raise ValueError(f"init must be one of {list(self.init_choices)} for ILP-Loss, got {self.init!r}")

    def replace(self, **overrides: Any) -> ILPLossConfig:
        """A copy with ``overrides``; an unknown name is refused with the known ones."""
        known = {field.name for field in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown ILP-Loss setting(s) {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **overrides)

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "hops": list(self.hops)}


# --- negatives --------------------------------------------------------------------------------

def _step_inward(y: torch.Tensor, chosen: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor,
                 g: torch.Generator) -> torch.Tensor:
    """``y`` moved one unit on each ``chosen`` coordinate: inward at a bound, else either way."""
    sign = torch.where(torch.rand(chosen.shape, generator=g, dtype=y.dtype) < 0.5, -1.0, 1.0).to(y.dtype)
    sign = torch.where(y <= lo, 1.0, torch.where(y >= hi, -1.0, sign))
    return y + sign * chosen


def sample_negatives(y: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: torch.Tensor, ub: torch.Tensor,
                     hops: tuple[int, ...], samples_per_hop: int, g: torch.Generator) -> torch.Tensor:
    """Candidate negatives around each observed ``y`` (B, n): (B, S, n) integer points.

    One unit step up and down each axis (2n), ``samples_per_hop`` points ``h`` unit steps away
    on ``h`` distinct axes for each ``h`` in ``hops``, and ``y``'s projection onto each row of
    ``A y <= b`` (unit rows) rounded at random, moved one step off ``y`` where it rounds back to it.
    Points outside the box or worse than ``y`` are left in: the loss masks them."""
    B, n = y.shape
    eye = torch.eye(n, dtype=y.dtype)
    parts = [y[:, None, :] + eye, y[:, None, :] - eye]
    for h in hops:
        if h > n:
            continue
        axes = torch.rand((B, samples_per_hop, n), generator=g).topk(h, dim=-1).indices
        chosen = torch.zeros((B, samples_per_hop, n), dtype=y.dtype).scatter_(-1, axes, 1.0)
        parts.append(_step_inward(y[:, None, :].expand_as(chosen), chosen, lb, ub, g))
    distance = b - y @ A.T  # (B, K)
    raw = y[:, None, :] + distance[..., None] * A  # on each hyperplane
    floor = torch.floor(raw)
    rounded = floor + (torch.rand(raw.shape, generator=g, dtype=y.dtype) < raw - floor).to(y.dtype)
    same = (rounded == y[:, None, :]).all(-1, keepdim=True)
    gap = (raw - rounded).abs()
    widest = F.one_hot(gap.argmax(-1), n).to(y.dtype)
    direction = torch.where(raw >= rounded, 1.0, -1.0).to(y.dtype)
    parts.append(rounded + same * widest * direction)
    return torch.cat(parts, dim=1)


# --- the loss ---------------------------------------------------------------------------------

def ilp_loss_terms(A: torch.Tensor, b: torch.Tensor, c: torch.Tensor, y: torch.Tensor, negatives: torch.Tensor,
                   lb: torch.Tensor, ub: torch.Tensor, temperature: float, margin_pos: float,
                   margin_neg: float) -> dict[str, torch.Tensor]:
    """ILP-Loss' three terms, each a mean over the batch (module docstring).

    ``A`` (K, n) unit rows and ``b`` (K,) are the learned ``A y <= b``; ``c``, ``y`` (B, n) the
    observations; ``negatives`` (B, S, n) candidates from :func:`sample_negatives`. A candidate
    counts when it differs from ``y``, lies in ``[lb, ub]`` and costs no more than ``y``."""
    d_pos = b - y @ A.T  # (B, K)
    d_neg = b - negatives @ A.T  # (B, S, K)
    cost_y = (c * y).sum(-1, keepdim=True)
    in_play = ((negatives != y[:, None, :]).any(-1) & ((negatives >= lb) & (negatives <= ub)).all(-1)
               & ((negatives * c[:, None, :]).sum(-1) <= cost_y))
    positive = F.relu(margin_pos - d_pos).mean(-1)
    with torch.no_grad():
        weights = F.softmin(d_neg / temperature, dim=-1)
    per_negative = (weights * F.relu(margin_neg + d_neg)).sum(-1)
    mask = in_play.to(per_negative.dtype)
    negative = (mask * per_negative).sum(-1) / (mask.sum(-1) + torch.finfo(per_negative.dtype).eps)
    # learned rows, the box's 2n rows (they cancel in the sum) and each instance's cost row
    n = A.shape[1]
    unit_c = c / torch.linalg.vector_norm(c, dim=-1, keepdim=True).clamp_min(torch.finfo(c.dtype).tiny)
    variety = (((A.sum(0) + unit_c) / (A.shape[0] + 2 * n + 1)) ** 2).mean(-1)
    return {"pos": positive.mean(), "neg": negative.mean(), "var": variety.mean(),
            "in_play": mask.sum(-1).mean()}


class CoVBalancer:
    """Weights each loss term by the coefficient of variation of its ratio to its running mean
    (Groenendijk et al., "Multi-Loss Weighting with Coefficient of Variations", WACV 2021): a
    term that still moves relative to its own scale gets more weight. Means over every step so
    far (Welford); the weights carry no gradient."""

    def __init__(self, terms: int, eps: float = 1e-6) -> None:
        self.eps = eps
        self.step = 0
        self.mean_loss = torch.zeros(terms, dtype=torch.float64)
        self.mean_ratio = torch.zeros(terms, dtype=torch.float64)
        self.spread = torch.zeros(terms, dtype=torch.float64)

    def __call__(self, losses: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            value = losses.detach().to(torch.float64)
            self.step += 1
            share = 1.0 / self.step
            self.mean_loss = (1 - share) * self.mean_loss + share * value
            ratio = (value + self.eps) / (self.mean_loss + self.eps)
            mean_ratio = (1 - share) * self.mean_ratio + share * ratio
            self.spread = self.spread + (ratio - self.mean_ratio) * (ratio - mean_ratio)
            self.mean_ratio = mean_ratio
            variation = torch.sqrt(self.spread / self.step + self.eps) / self.mean_ratio
            weights = (variation / variation.sum()).to(losses.dtype)
        return (weights * losses).sum()


# --- training ---------------------------------------------------------------------------------

def initial_ilploss_constraints(count: int, n: int, lb: Any, ub: Any, origin: str, seed: int) -> StaticConstraints:
    """The authors' start: random unit normals, origins in the box's centre sub-cube, each
    hyperplane 0.2 from its origin with the origin inside."""
    model = StaticConstraints(count, n, lb, ub, origin=origin, seed=derive_seed(seed, 1), dtype=torch.float64)
    with torch.no_grad():
        model.offsets.fill_(0.2)
    return model


def train_ilploss(
    data: Any, config: ILPLossConfig | None = None, backend: BackendConfig | None = None, *, seed: int = 0,
    num_constraints: int | None = None, model: StaticConstraints | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    validation: tuple[torch.Tensor, torch.Tensor] | None = None, test_every: int = 1,
) -> tuple[StaticConstraints, list[dict[str, float]]]:
    """Learn ``config.k * m`` constraints with ILP-Loss; called like
    :func:`~ilplayer.training.train_static_constraints` (``data`` has ``lb``, ``ub``,
    ``c_train``, ``y_train``, ``c_test``, ``y_test``).

    Training solves nothing. Every ``config.validate_every`` epochs (and after the last) the
    layer solves the validation pairs, when given: their accuracy lowers the soft-min
    temperature when it stalls, stops training after ``config.stop_patience`` validations
    without a gain or at 100 %, and picks the model returned (the best, earliest among ties).
    The held-out accuracy is measured at every ``test_every``-th validation and the last.
    Without validation pairs the training pairs take their place."""
    config = config or ILPLossConfig()
    backend = backend or BackendConfig()
    if isinstance(test_every, bool) or not isinstance(test_every, int) or test_every < 1:
        raise ValueError(f"test_every must be a positive integer, got {test_every!r}")
    c_train, y_train = data.c_train.to(torch.float64), data.y_train.to(torch.float64)
    N, n = c_train.shape
    m = num_constraints if num_constraints is not None else data.A.shape[0]
    lo = torch.as_tensor(as_bounds(data.lb, n, "lb"), dtype=torch.float64)
    hi = torch.as_tensor(as_bounds(data.ub, n, "ub"), dtype=torch.float64)
    if model is None:
        model = initial_ilploss_constraints(config.k * m, n, data.lb, data.ub, config.origin, seed)
    solver = backend.solver or preferred_backend(box_points(data.lb, data.ub, n))
    layer = ILPLayer(data.lb, data.ub, solver=solver, solver_options=backend.solver_options,
                     executor=backend.executor, workers=backend.workers)
    judge = validation if validation is not None else (c_train, y_train)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    scheduler = torch.optim.lr_scheduler.CyclicLR(optimizer, base_lr=0.0, max_lr=config.lr,
                                                  step_size_up=config.cycle_steps, cycle_momentum=False)
    balancer = CoVBalancer(3)
    shuffle, negatives_g = torch_generator(seed, 2), torch_generator(seed, 3)
    temperature = config.temperature * float((hi - lo).mean())
    best_accuracy, best_state = -1.0, None
    since_best = since_cooled = 0  # validations without a gain: in all, and since the last cooling
    validations = 0
    history: list[dict[str, float]] = []

    def scores(final: bool) -> dict[str, float]:
        nonlocal validations
        validations += 1
        with torch.no_grad():
            A, b = model()
            record = {"validation_accuracy": exact_match(layer(judge[0], A, b), judge[1])}
            if final or validations % test_every == 0:
                record["accuracy"] = exact_match(layer(data.c_test, A, b), data.y_test)
        return record

    try:
        if validation is not None:
            start = scores(final=False)
            history.append({"epoch": 0, **start})
            best_accuracy, best_state = start["validation_accuracy"], _copy_state(model)
        for epoch in range(1, config.epochs + 1):
            order = torch.randperm(N, generator=shuffle)
            totals = {"loss": 0.0, "pos": 0.0, "neg": 0.0, "var": 0.0, "in_play": 0.0}
            for first in range(0, N, config.batch_size):
                rows = order[first:first + config.batch_size]
                c, y = c_train[rows], y_train[rows]
                A, b = model()
                with torch.no_grad():
                    candidates = sample_negatives(y, A.detach(), b.detach(), lo, hi, config.hops,
                                                  config.samples_per_hop, negatives_g)
                terms = ilp_loss_terms(A, b, c, y, candidates, lo, hi, temperature,
                                       config.margin_pos, config.margin_neg)
                loss = balancer(torch.stack([terms["pos"], terms["neg"], terms["var"]]))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step()
                share = len(rows) / N
                totals["loss"] += loss.item() * share
                for key in ("pos", "neg", "var", "in_play"):
                    totals[key] += terms[key].item() * share
            record: dict[str, float] = {"epoch": epoch, **totals, "temperature": temperature}
            last = epoch == config.epochs
            if epoch % config.validate_every == 0 or last:
                record.update(scores(final=last))
                if record["validation_accuracy"] > best_accuracy:
                    best_accuracy, best_state = record["validation_accuracy"], _copy_state(model)
                    since_best = since_cooled = 0
                else:
                    since_best += 1
                    since_cooled += 1
                    if since_cooled > config.temperature_patience:
                        temperature *= config.temperature_factor
                        since_cooled = 0
            history.append(record)
            if on_epoch is not None:
                on_epoch(record)
            if "validation_accuracy" in record and not last and (
                    record["validation_accuracy"] >= 1.0 or since_best >= config.stop_patience):
                if "accuracy" not in record:  # the curve ends with a held-out score
                    with torch.no_grad():
                        record["accuracy"] = exact_match(layer(data.c_test, *model()), data.y_test)
                break
    finally:
        layer.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    return model, history


def _copy_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
