"""Scores of predicted solutions: exact match (constraint learning), regret (cost learning) and
the post-hoc regret of decisions made under predicted constraints (two-stage).

Every function takes torch tensors or NumPy arrays of shape (B, n) and returns a Python float
(or, for [`objective`][ilplayer.metrics.objective], one value per instance;
[`post_hoc_regret`][ilplayer.metrics.two_stage.post_hoc_regret] returns its scores per instance).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ilplayer.metrics.two_stage import PostHocRegret, post_hoc_regret

__all__ = ["SENSES", "PostHocRegret", "exact_match", "objective", "post_hoc_regret", "regret"]

SENSES = ("min", "max")
"""The optimisation senses the metrics take."""
_NEGATIVE_TOL = 1e-6  # relative: a regret below -tol (1 + sum |c·y_opt|) is no rounding
_REGRET_GUARD = 1e-7  # PyEPO's guard against an all-zero optimal objective


def _as_float64(value: Any, name: str) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor or a numpy array, got {type(value).__name__}"
        )
    if value.ndim != 2:
        raise ValueError(f"{name} must have shape (B, n), got {tuple(value.shape)}")
    return value.to(torch.float64)


def exact_match(y: torch.Tensor, y_true: torch.Tensor) -> float:
    """The fraction of instances whose solution equals ``y_true`` in every coordinate."""
    return (y == y_true).all(dim=-1).to(torch.float64).mean().item()


def objective(c: Any, y: Any) -> torch.Tensor:
    """``c_i·y_i`` per instance, float64, on ``c``'s device."""
    c64, y64 = _as_float64(c, "c"), _as_float64(y, "y")
    if c64.shape != y64.shape:
        raise ValueError(
            f"c and y must have the same shape, got {tuple(c64.shape)} and {tuple(y64.shape)}"
        )
    return (c64 * y64.to(c64.device)).sum(-1)


def regret(
    c_true: Any, y_pred: Any, y_opt: Any, sense: Any = "min", normalized: bool = True
) -> float:
    """Regret of decisions ``y_pred`` under the true costs, against the optimal ``y_opt``.

    The regret of one instance is ``c·y_pred - c·y_opt`` when minimising (``c·y_opt - c·y_pred``
    when maximising), never negative for a feasible ``y_pred``. With ``normalized`` the sum over
    the batch is divided by the sum of ``|c·y_opt|`` -- PyEPO's normalised regret, with its
    guard of 1e-7 in the denominator -- else the mean regret per instance is returned.

    ``sense``: ``"min"``, ``"max"``, or the `Program`, `Oracle` or `ILPLayer` whose sense it is.
    A regret below zero means that ``y_opt`` is not optimal in that sense (a maximisation
    program scored as a minimisation one, most often): refused with a ``ValueError``.
    """
    sense = getattr(sense, "sense", sense)
    if sense not in SENSES:
        raise ValueError(
            f"sense must be one of {SENSES} (or a Program, Oracle or layer), got {sense!r}"
        )
    predicted, optimal = objective(c_true, y_pred), objective(c_true, y_opt)
    per_instance = predicted - optimal if sense == "min" else optimal - predicted
    total = per_instance.sum()
    if total < -_NEGATIVE_TOL * (1.0 + optimal.abs().sum()):
        other = "max" if sense == "min" else "min"
        raise ValueError(
            f"regret: the decisions y_pred beat y_opt by {-total.item():.6g} in total under "
            f"sense={sense!r}, so y_opt is not optimal in that sense; for a program that "
            f"{'maximises' if other == 'max' else 'minimises'} pass sense={other!r} (or the "
            "program, oracle or layer)"
        )
    if not normalized:
        return per_instance.mean().item()
    return (total / (optimal.abs().sum() + _REGRET_GUARD)).item()
