"""Variable bounds and integrality as users give them (a number, a vector, a tensor), checked
and made float64 vectors: `as_bounds`, `as_integrality`, `check_box` (before the number of
variables is known), and `exact_dtype`, the floating dtype in which every integer of a box is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import torch

__all__ = [
    "MAX_ABS_BOUND",
    "Bounds",
    "as_bounds",
    "as_integrality",
    "check_bound_values",
    "check_box",
    "exact_dtype",
]

Bounds = Union[int, float, Sequence[Union[int, float]], np.ndarray, torch.Tensor]


MAX_ABS_BOUND = 2**53
"""Bounds must lie strictly inside ``±2**53``: every integer there is exact in float64."""

# The largest integer below which every integer is exact, per floating dtype.
_EXACT_INTEGERS = {
    torch.float16: 2**11,
    torch.bfloat16: 2**8,
    torch.float32: 2**24,
    torch.float64: 2**53,
}


def _float_array(value: Any, name: str, expected: str) -> np.ndarray:
    """``value`` (a tensor, array, sequence or number) as a float64 host array."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64).numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}") from None


def _bound_array(value: Bounds, name: str) -> np.ndarray:
    """A bound as a float64 array (0-d or 1-d), checked for type, NaN and range; shared by
    `as_bounds` and `check_box`. ``-inf`` and ``inf`` are kept (unbounded)."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"{name} must be a number or a vector of numbers, got {value!r}")
    array = _float_array(value, name, "a number or a vector of numbers")
    if array.ndim > 1:
        raise ValueError(
            f"{name} must be a scalar or a vector (one bound per variable), "
            f"got shape {tuple(array.shape)}"
        )
    flat = array.reshape(-1)
    if np.isnan(flat).any():
        raise ValueError(
            f"{name} must not hold NaN; {name}[{int(np.flatnonzero(np.isnan(flat))[0])}] is NaN "
            "(use -inf or inf for an unbounded variable)"
        )
    big = np.isfinite(flat) & (np.abs(flat) >= MAX_ABS_BOUND)
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise ValueError(
            f"{name} must lie strictly between -2**53 and 2**53 (the integers exact "
            f"in float64), or be -inf/inf; {name}[{i}] = {flat[i]:.6g}"
        )
    return array


def check_bound_values(lb: np.ndarray, ub: np.ndarray, integer: np.ndarray) -> None:
    """Integers on the integer variables (where finite), no ``lb = inf`` or ``ub = -inf``, and
    ``lb <= ub``; ``lb``, ``ub`` and ``integer`` are broadcast to one shape."""
    for name, bound in (("lb", lb), ("ub", ub)):
        fractional = integer & np.isfinite(bound) & (bound != np.round(bound))
        if fractional.any():
            i = int(np.flatnonzero(fractional)[0])
            raise ValueError(
                f"{name} must hold integers on the integer variables; {name}[{i}] = {bound[i]} "
                f"and integrality[{i}] = 1 (make it continuous with integrality[{i}] = 0, "
                "or round the bound)"
            )
    if np.isposinf(lb).any() or np.isneginf(ub).any():
        name, i = (
            ("lb", int(np.flatnonzero(np.isposinf(lb))[0]))
            if np.isposinf(lb).any()
            else ("ub", int(np.flatnonzero(np.isneginf(ub))[0]))
        )
        raise ValueError(
            f"{name}[{i}] = {(lb if name == 'lb' else ub)[i]}: a lower bound may be -inf and an "
            "upper bound inf, not the other way round"
        )
    bad = np.flatnonzero(lb > ub)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"lb must not exceed ub; variable {i} has lb={lb[i]:g} > ub={ub[i]:g}")


def as_integrality(value: Any, n: int | None) -> np.ndarray:
    """``integrality`` as a bool array: (n,), or (B, n) when instances differ (scipy.optimize.milp's
    convention: 1 integer, 0 continuous; None is all integer). ``n`` None: any length."""
    if value is None:
        return np.ones(n if n is not None else 0, dtype=bool)
    array = _float_array(value, "integrality", "0/1 per variable (1 integer, 0 continuous)")
    if array.ndim > 2:
        raise ValueError(
            f"integrality must have shape (n,) or (batch, n), got {tuple(array.shape)}"
        )
    flat = array.reshape(-1)
    if not np.isin(flat, (0.0, 1.0)).all():
        i = int(np.flatnonzero(~np.isin(flat, (0.0, 1.0)))[0])
        raise ValueError(
            f"integrality must hold 0 (continuous) or 1 (integer) per variable; found {flat[i]:g}"
        )
    if n is not None:
        if array.ndim == 0:
            array = np.full(n, float(array))
        if array.shape[-1] != n:
            raise ValueError(
                f"integrality must have shape ({n},) or (batch, {n}) (one entry per "
                f"variable), got shape {tuple(array.shape)}"
            )
    mask = array.astype(bool)
    if mask.ndim == 2 and (mask == mask[:1]).all():
        mask = mask[0]
    return mask


def as_bounds(value: Bounds, n: int, name: str) -> np.ndarray:
    """Turn a scalar or per-variable bound into a float64 vector of length ``n`` (±inf kept)."""
    array = _bound_array(value, name)
    if array.ndim == 0:
        array = np.full(n, float(array))
    if array.shape != (n,):
        raise ValueError(
            f"{name} must be a scalar or have shape ({n},) (one bound per variable), "
            f"got shape {tuple(array.shape)}"
        )
    return array.astype(np.float64)


def check_box(lb: Bounds, ub: Bounds, integrality: Any = None) -> None:
    """Check bounds (and integrality) before the number of variables is known (at construction
    of a layer)."""
    low, high = _bound_array(lb, "lb"), _bound_array(ub, "ub")
    if low.ndim == 1 and high.ndim == 1 and low.shape != high.shape:
        raise ValueError(
            f"lb and ub must have the same length, got {low.shape[0]} and {high.shape[0]}"
        )
    integer: np.ndarray = (
        as_integrality(integrality, None) if integrality is not None else np.ones((), bool)
    )
    if integer.ndim == 2:
        integer = np.asarray(integer.any(axis=0))
    try:
        lo, hi, whole = (x.reshape(-1) for x in np.broadcast_arrays(low, high, integer))
    except ValueError:
        raise ValueError(
            f"integrality has {integer.shape[-1]} entries but lb/ub have {max(low.size, high.size)}"
        ) from None
    check_bound_values(lo, hi, whole)


def exact_dtype(dtype: torch.dtype, lb: np.ndarray, ub: np.ndarray) -> torch.dtype:
    """``dtype`` if it represents every integer of the box exactly, else the smallest wider
    floating dtype that does (float32, then float64). Infinite bounds do not count: there the
    values are whatever the backend returned, in ``dtype``."""
    finite = lambda v: np.abs(v[np.isfinite(v)])
    reach = int(max(finite(lb).max(initial=0), finite(ub).max(initial=0)))
    if reach <= _EXACT_INTEGERS.get(dtype, 0):
        return dtype
    return torch.float32 if reach <= _EXACT_INTEGERS[torch.float32] else torch.float64
