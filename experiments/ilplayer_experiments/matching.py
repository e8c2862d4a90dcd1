"""Keypoint matching stand-in (paper, "Deep Keypoint Matching"), generated offline.

SPair-71k and a pretrained VGG cannot be had offline, so the visual part is replaced by a
generator with the same structure: each object class has ``KEYPOINT_TYPES`` semantic keypoints
(a latent prototype each); an image of the class shows ``p`` of them, each as a descriptor that
mixes the prototype (plus noise) with per-keypoint nuisance features through a fixed random
rotation. The target image shows the same ``p`` keypoints in a random order. A network must
learn to project descriptors onto the informative subspace; the matching is the permutation.

Both methods share the backbone, which maps each descriptor to an embedding; the unary cost of
matching source ``i`` to target ``j`` is minus the cosine similarity of the embeddings,
``c`` in R^{p^2}, normalised to unit length.

* CombOptNet: ``c`` and a learned static constraint set (``m = 2p`` constraints on
  ``n = p^2`` binary variables, initialised as in the binary Random Constraints) go through
  [`ILPLayer`][ilplayer.ILPLayer]; the MSE between normalised solutions is minimised.
* BB-GM (unary only): the dedicated assignment solver ``scipy.optimize.linear_sum_assignment``
  with blackbox-differentiation gradients (Vlastelica et al., 2020) and the Hamming loss, as in
  Rolinek et al. (2020).

The metric is the per-keypoint matching accuracy (`matching_accuracy`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from ilplayer import Status
from ilplayer.core.seeding import derive_seed, torch_generator
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.defaults import takes_time_limit
from ilplayer_experiments.cache import cached

__all__ = [
    "BlackboxAssignment",
    "MatchingBackbone",
    "MatchingData",
    "assign",
    "make_dataset",
    "matching_accuracy",
    "permutation_fraction",
    "train_matching",
    "world",
]

NUM_CLASSES = 8
KEYPOINT_TYPES = 12
SIGNAL_DIM = 8
NUISANCE_DIM = 56
# Noise on each shown keypoint's prototype sets the attainable accuracy: matching on the true
# signal subspace reaches 89/85/80/78 % for p = 4/5/6/7 (near the paper's figures). The
# nuisance features drown a raw dot product of the descriptors (50/41/38/34 %).
SIGNAL_NOISE = 0.9
NUISANCE_SCALE = 3.0


@dataclass(frozen=True)
class MatchingData:
    """Descriptor pairs and their ground-truth permutations.

    ``source`` and ``target`` are (N, p, D) descriptors; ``y`` is (N, p*p) with
    ``y[i*p + j] = 1`` when source keypoint ``i`` matches target keypoint ``j``.
    """

    source: torch.Tensor
    target: torch.Tensor
    y: torch.Tensor

    def to_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def __len__(self) -> int:
        return len(self.y)

    @property
    def p(self) -> int:
        return self.source.shape[1]

    def subset(self, rows: torch.Tensor) -> MatchingData:
        return MatchingData(self.source[rows], self.target[rows], self.y[rows])


def world(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The class prototypes (classes, types, SIGNAL_DIM) and the descriptor rotation of ``seed``;
    ``descriptor @ rotation`` puts the signal in the first ``SIGNAL_DIM`` coordinates."""
    g = torch_generator(seed, 10)
    prototypes = torch.randn(
        NUM_CLASSES, KEYPOINT_TYPES, SIGNAL_DIM, generator=g, dtype=torch.float64
    )
    prototypes /= torch.linalg.vector_norm(prototypes, dim=-1, keepdim=True)
    rotation, _ = torch.linalg.qr(
        torch.randn(
            SIGNAL_DIM + NUISANCE_DIM, SIGNAL_DIM + NUISANCE_DIM, generator=g, dtype=torch.float64
        )
    )
    return prototypes, rotation


def make_dataset(
    p: int, num_pairs: int, *, split: str = "train", seed: int = 0, cache: bool = False
) -> MatchingData:
    """``num_pairs`` image pairs with ``p`` keypoints each.

    The world (class prototypes and the mixing rotation) depends on ``seed`` only, so the
    ``"train"``, ``"val"`` and ``"test"`` splits of one seed share it and differ in their pairs.
    """
    if not 2 <= p <= KEYPOINT_TYPES:
        raise ValueError(f"p must be between 2 and {KEYPOINT_TYPES}, got {p}")
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
    if num_pairs < 1:
        raise ValueError(f"num_pairs must be >= 1, got {num_pairs}")
    if cache:
        params = dict(p=p, num_pairs=num_pairs, split=split, seed=seed)
        return MatchingData(
            **cached(
                "matching",
                params,
                lambda: make_dataset(p, num_pairs, split=split, seed=seed).to_dict(),
            )
        )
    prototypes, rotation = world(seed)
    stream = {"train": 11, "val": 12, "test": 13}[split]
    g = torch_generator(seed, stream)
    classes = torch.randint(NUM_CLASSES, (num_pairs,), generator=g)
    shown = torch.rand(num_pairs, KEYPOINT_TYPES, generator=g).argsort(dim=-1)[
        :, :p
    ]  # which keypoints
    permutation = torch.rand(num_pairs, p, generator=g).argsort(dim=-1)  # target order

    def image(order: torch.Tensor) -> torch.Tensor:
        latent = prototypes[classes[:, None], order]  # (N, p, S)
        signal = latent + SIGNAL_NOISE / SIGNAL_DIM**0.5 * torch.randn(
            latent.shape, generator=g, dtype=torch.float64
        )
        nuisance = (
            NUISANCE_SCALE
            / NUISANCE_DIM**0.5
            * torch.randn(num_pairs, p, NUISANCE_DIM, generator=g, dtype=torch.float64)
        )
        return torch.cat([signal, nuisance], dim=-1) @ rotation.T

    source = image(shown)
    target = image(shown.gather(1, permutation))
    # source i is target j where permutation[j] == i
    y = torch.zeros(num_pairs, p, p, dtype=torch.float64)
    y.scatter_(2, permutation.argsort(dim=-1)[..., None], 1.0)
    return MatchingData(source.float(), target.float(), y.reshape(num_pairs, p * p))


class MatchingBackbone(torch.nn.Module):
    """Descriptor -> embedding (two-layer MLP); unary costs ``-cos(e_i, e'_j)`` of unit length."""

    def __init__(
        self, descriptor_dim: int = SIGNAL_DIM + NUISANCE_DIM, hidden: int = 64, embedding: int = 32
    ) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(descriptor_dim, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, embedding),
        )

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        e = torch.nn.functional.normalize(self.net(source), dim=-1)
        f = torch.nn.functional.normalize(self.net(target), dim=-1)
        c = -(e @ f.transpose(-1, -2)).flatten(1)
        return c / torch.linalg.vector_norm(c, dim=-1, keepdim=True).clamp_min(1e-12)


def assign(c: torch.Tensor) -> torch.Tensor:
    """Minimum-cost assignments of costs (B, p*p) by ``linear_sum_assignment``, as 0/1 (B, p*p)."""
    from scipy.optimize import linear_sum_assignment

    batch, n = c.shape
    p = round(n**0.5)
    costs = c.detach().cpu().double().numpy().reshape(batch, p, p)
    y = np.zeros((batch, p, p))
    for k, cost in enumerate(costs):
        rows, cols = linear_sum_assignment(cost)
        y[k, rows, cols] = 1.0
    return torch.from_numpy(y.reshape(batch, n)).to(c)


class BlackboxAssignment(torch.autograd.Function):
    """``assign`` with the blackbox-differentiation gradient: ``dc = -(y(c) - y(c + lambda dy)) / lambda``."""

    @staticmethod
    def forward(ctx: Any, c: torch.Tensor, lam: float) -> torch.Tensor:
        y = assign(c)
        ctx.lam = lam
        ctx.save_for_backward(c, y)
        return y

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, None]:
        c, y = ctx.saved_tensors
        y_perturbed = assign(c + ctx.lam * dy)
        return -(y - y_perturbed) / ctx.lam, None


def hamming_loss(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """BB-GM's loss: mismatched entries per instance, batch mean (linear in ``y``)."""
    return (y * (1 - target) + (1 - y) * target).sum(dim=-1).mean()


def matching_accuracy(y: torch.Tensor, target: torch.Tensor) -> float:
    """Fraction of source keypoints whose predicted row is exactly their true match.

    For a permutation this is BB-GM's matching accuracy (the fraction of true matches found).
    CombOptNet's learned constraints need not produce a permutation, so a row with an extra or
    a missing match counts as wrong: predicting many matches cannot inflate the figure.
    """
    p = round(target.shape[-1] ** 0.5)
    rows_equal = (y.round() == target).reshape(*target.shape[:-1], p, p).all(dim=-1)
    return rows_equal.double().mean().item()


def permutation_fraction(y: torch.Tensor) -> float:
    """The share of predictions (N, p*p) that are permutation matrices (CombOptNet's learned
    constraints may allow others)."""
    p = round(y.shape[-1] ** 0.5)
    square = y.round().reshape(-1, p, p)
    return ((square.sum(-1) == 1).all(-1) & (square.sum(-2) == 1).all(-1)).double().mean().item()


METHODS = ("combopt", "bbgm")


_TIMED_OUT = torch.tensor([int(Status.TIME_LIMIT), int(Status.TIME_LIMIT_NO_SOLUTION)])


def _timed_out(layer: Any) -> float:
    """The share of ``layer``'s last solve's instances the time limit stopped."""
    assert layer is not None and layer.last_status is not None
    return torch.isin(layer.last_status, _TIMED_OUT).double().mean().item()


def _test_at_limit(
    c: torch.Tensor,
    constraints: StaticConstraints,
    test: MatchingData,
    solver: str,
    tau: float | None,
    limit: float,
) -> dict[str, float]:
    """The test pairs' accuracy, permutations and share stopped with the costs ``c`` and the
    learned ``constraints``, each instance given ``limit`` seconds."""
    from ilplayer.layer import ILPLayer

    layer = ILPLayer(0, 1, solver=solver, tau=tau, solver_options={"time_limit": limit})
    try:
        with torch.no_grad():
            y = layer(c, *constraints())
        return {
            "time_limit": limit,
            "accuracy": matching_accuracy(y, test.y),
            "permutation_fraction": permutation_fraction(y),
            "timed_out": _timed_out(layer),
        }
    finally:
        layer.close()


def train_matching(
    train: MatchingData,
    val: MatchingData,
    test: MatchingData,
    *,
    method: str = "combopt",
    epochs: int = 10,
    iterations: int = 400,
    batch_size: int = 8,
    lr: float = 1e-4,
    backbone_lr: float = 1e-3,
    tau: float | None = 0.5,
    blackbox_lambda: float = 20.0,
    time_limit: float | None = None,
    test_time_limit: float | None = None,
    lr_decay: float = 1.0,
    seed: int = 0,
    solver: str | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """The supplementary's schedule: ``epochs`` of ``iterations`` random batches, validation
    after each; the best validation epoch is evaluated on ``test``. ``lr`` is the paper's rate
    for the constraints; the backbone, trained from scratch here (the paper fine-tuned a
    pretrained VGG at 2.5e-6), learns at ``backbone_lr``. ``time_limit`` (seconds per instance,
    where the backend takes one) answers a learned program the solver does not close in time
    with its incumbent: the history and summary say how often (``timed_out``).
    ``test_time_limit`` solves the test pairs once more at that limit, with the best epoch's
    model (the summary's ``longer_limit``): what the incumbents cost. ``lr_decay`` multiplies
    every rate by that factor after each epoch (1: constant rates, the paper's); each epoch's
    record holds the constraints' rate it trained at (``lr``).

    Returns ``(summary, history)``; the summary holds the test accuracy of the best epoch.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    p = train.p
    n, m = p * p, 2 * p
    torch.manual_seed(derive_seed(seed, 1))
    backbone = MatchingBackbone(descriptor_dim=train.source.shape[-1]).double()
    groups = [{"params": list(backbone.parameters()), "lr": backbone_lr}]
    layer = constraints = None
    limited = False
    if method == "combopt":
        from ilplayer.layer import ILPLayer
        from ilplayer.solvers.registry import preferred_backend

        init_seed = derive_seed(seed, 2)
        constraints = StaticConstraints(m, n, 0, 1, seed=init_seed, dtype=torch.float64)
        groups.append({"params": list(constraints.parameters()), "lr": lr})
        solver = solver or preferred_backend(2**n)
        limited = time_limit is not None and takes_time_limit(solver)
        options = {"time_limit": time_limit} if limited else {}
        layer = ILPLayer(0, 1, solver=solver, tau=tau, solver_options=options)
    if not 0.0 < lr_decay <= 1.0:
        raise ValueError(f"lr_decay must be in (0, 1], got {lr_decay!r}")
    optimizer = torch.optim.Adam(groups)
    decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=lr_decay)
    g = torch_generator(seed, 3)

    def through_layer(c: torch.Tensor) -> torch.Tensor:
        assert layer is not None and constraints is not None  # method == "combopt"
        return layer(c, *constraints())

    def predict(data: MatchingData) -> torch.Tensor:
        c = backbone(data.source.double(), data.target.double())
        if method == "bbgm":
            return assign(c)
        return through_layer(c)

    learned = torch.nn.ModuleList([backbone] if constraints is None else [backbone, constraints])
    with torch.no_grad():  # the untrained backbone with the assignment solver, for reference
        untrained = assign(backbone(test.source.double(), test.target.double()))
    history: list[dict[str, float]] = []
    best_accuracy, best_epoch, best_state = -1.0, 0, {}
    try:
        for epoch in range(epochs):
            total, stopped, rate = 0.0, 0.0, optimizer.param_groups[-1]["lr"]
            for _ in range(iterations):
                batch = train.subset(torch.randint(len(train), (batch_size,), generator=g))
                c = backbone(batch.source.double(), batch.target.double())
                if method == "bbgm":
                    y = BlackboxAssignment.apply(c, blackbox_lambda)
                    loss = hamming_loss(y, batch.y)
                else:
                    y = through_layer(c)
                    loss = torch.nn.functional.mse_loss(y - 0.5, batch.y - 0.5)
                    stopped += _timed_out(layer)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item()
            with torch.no_grad():
                val_accuracy = matching_accuracy(predict(val), val.y)
            decay.step()
            record = {"epoch": epoch + 1, "loss": total / iterations, "accuracy": val_accuracy}
            if method == "combopt":  # the constraints' rate, the instances the limit stopped
                record.update(
                    lr=rate, timed_out=stopped / iterations, val_timed_out=_timed_out(layer)
                )
            history.append(record)
            if val_accuracy > best_accuracy:
                best_accuracy, best_epoch = val_accuracy, epoch + 1
                best_state = copy.deepcopy(learned.state_dict())
            if on_epoch is not None:
                on_epoch(record)
        learned.load_state_dict(best_state)
        with torch.no_grad():
            y_test = predict(test)
        summary: dict[str, Any] = {
            "accuracy": matching_accuracy(y_test, test.y),
            "exact_match": (y_test.round() == test.y).all(dim=-1).double().mean().item(),
            "permutation_fraction": permutation_fraction(y_test),
            "best_epoch": best_epoch,
            "untrained_assignment_accuracy": matching_accuracy(untrained, test.y),
            **({"timed_out": _timed_out(layer)} if method == "combopt" else {}),
        }
        if method == "combopt" and test_time_limit is not None and limited:
            assert constraints is not None and solver is not None
            c = backbone(test.source.double(), test.target.double()).detach()
            summary["longer_limit"] = _test_at_limit(
                c, constraints, test, solver, tau, test_time_limit
            )
    finally:
        if layer is not None:
            layer.close()
    return summary, history
