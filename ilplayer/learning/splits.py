"""The observed pairs split for training, validation and test, and the equalities they all satisfy."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ilplayer.learning.observations import (
    split_holdout,
)
from ilplayer.learning.settings import SolutionData

__all__ = ["pair_splits", "with_equalities"]


def pair_splits(
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
