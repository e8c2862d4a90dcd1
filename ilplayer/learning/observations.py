"""Your observations as data: pairs of a cost vector ``c`` and the integer solution ``y``
chosen for it, read from a file and checked before anything is learned from them.

`load_solutions` reads a ``.npz`` or ``.csv`` file and refuses what cannot be right,
naming the file, the array and the first bad entry; `check_solutions` warns about what
is valid but cannot teach constraints; `split_holdout` holds pairs out for testing.
"""

from __future__ import annotations

import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ilplayer.core.bounds import as_bounds, check_box
from ilplayer.core.seeding import derive_seed
from ilplayer.errors import DataWarning
from ilplayer.learning.separation import box_optima

__all__ = [
    "BEATEN_TOL",
    "INTEGRALITY_TOL",
    "check_solutions",
    "holdout_size",
    "load_solutions",
    "split_holdout",
]

INTEGRALITY_TOL = 1e-6


def _read(path: Path) -> dict[str, np.ndarray]:
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    if path.suffix == ".csv":
        table: Any = np.genfromtxt(path, delimiter=",", names=True, dtype=np.float64)
        names = table.dtype.names or ()
        columns = {
            prefix: sorted(
                (n for n in names if n.startswith(prefix) and n[len(prefix) :].isdigit()),
                key=lambda n: int(n[len(prefix) :]),
            )
            for prefix in ("c", "y")
        }
        if not columns["c"] or not columns["y"]:
            raise ValueError(
                f"{path}: a CSV needs a header with columns c0, c1, ... and y0, y1, ...; "
                f"found {list(names)}"
            )
        return {
            prefix: np.column_stack([np.atleast_1d(table[n]) for n in cols])
            for prefix, cols in columns.items()
        }
    raise ValueError(
        f"{path}: expected a .npz (arrays c and y) or a .csv (columns c0.., y0..) file"
    )


def _check_pairs(path: Path, c: np.ndarray, y: np.ndarray) -> None:
    """``c`` and ``y`` (N, n) alike, at least two, finite; each error names the file."""
    for name, array in (("c", c), ("y", y)):
        if array.ndim != 2:
            raise ValueError(f"{path}: {name} must have shape (N, n), got {array.shape}")
    if c.shape != y.shape:
        raise ValueError(f"{path}: c {c.shape} and y {y.shape} must have the same shape (N, n)")
    if len(c) < 2:
        raise ValueError(f"{path}: at least 2 observations are needed, got {len(c)}")
    for name, array in (("c", c), ("y", y)):
        bad = ~np.isfinite(array)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ValueError(
                f"{path}: {name} must be finite; {int(bad.sum())} entries are not, first "
                f"{name}[{row}, {col}] = {float(array[row, col])!r}"
            )


def load_solutions(
    path: str | Path, lb: Any = None, ub: Any = None
) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    """Read ``c`` (N, n) and ``y`` (N, n) from ``path`` and check them against the box.

    ``lb`` and ``ub`` (scalars or one per variable) come from the arguments, else from arrays
    ``lb`` and ``ub`` stored in the npz. Returns ``(c, y, lb, ub)``.

    Raises:
        ValueError: naming the file and what is wrong (missing arrays, shapes, non-finite
            costs, non-integer ``y``, ``y`` outside the box).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        arrays = _read(path)
    except (OSError, EOFError, zipfile.BadZipFile, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    missing = [key for key in ("c", "y") if key not in arrays]
    if missing:
        raise ValueError(f"{path}: missing array(s) {missing}; the file has {sorted(arrays)}")
    c, y = (np.asarray(arrays[key], dtype=np.float64) for key in ("c", "y"))
    if lb is None:
        lb = arrays.get("lb")
    if ub is None:
        ub = arrays.get("ub")
    if lb is None or ub is None:
        raise ValueError(f"{path}: the box is unknown; pass --lb and --ub (or store arrays lb, ub)")
    _check_pairs(path, c, y)
    n = c.shape[1]
    lb, ub = (np.asarray(v).item() if np.ndim(v) == 0 else np.asarray(v) for v in (lb, ub))
    check_box(lb, ub)
    low, high = as_bounds(lb, n, "lb"), as_bounds(ub, n, "ub")
    off = np.abs(y - np.round(y)) > INTEGRALITY_TOL
    if off.any():
        row, col = np.argwhere(off)[0]
        raise ValueError(
            f"{path}: y must be integer; {int(off.sum())} entries are not, first "
            f"y[{row}, {col}] = {float(y[row, col])!r}"
        )
    y = np.round(y)
    outside = (y < low) | (y > high)
    if outside.any():
        row, col = np.argwhere(outside)[0]
        raise ValueError(
            f"{path}: {int(outside.any(axis=1).sum())} solutions lie outside the box "
            f"[lb, ub]; first y[{row}, {col}] = {y[row, col]:g} not in "
            f"[{low[col]:g}, {high[col]:g}]"
        )
    if np.ndim(lb) == 0 and float(lb).is_integer():
        lb = int(lb)
    if np.ndim(ub) == 0 and float(ub).is_integer():
        ub = int(ub)
    return c, y, lb, ub


BEATEN_TOL = 1e-7
"""Relative to ``|c|_1 max|y|`` (the scale of ``c·y``): float rounding never counts as beaten
(the reference generator's datasets: at most 5e-16), a solver stopped at a 1e-4 MIP gap
usually does."""


CHECK_PRODUCTS = 10**9


def check_solutions(
    c: np.ndarray, y: np.ndarray, lb: Any, ub: Any, row_name: Callable[[int], str] = "row {}".format
) -> list[str]:
    """Warnings (also issued as `DataWarning`) about
    observations that cannot teach
    constraints: every ``y`` is the box optimum (no constraint is ever active), or a ``y`` that
    another observed ``y`` beats under its own ``c``.

    The second is a contradiction whatever the constraints: every observed ``y`` satisfies the
    hidden constraints, so a ``y_j`` with ``c_i·y_j < c_i·y_i`` is a feasible point cheaper than
    ``y_i``, and no constraint set makes ``y_i`` optimal. It catches one cost vector observed
    with two solutions that do not tie, suboptimal solutions (a solver stopped at a MIP gap)
    and observations made under different constraint sets. Pass train and test observations
    together (they share the constraints), and ``row_name`` to say which file a row is in.
    """
    n = c.shape[1]
    low, high = as_bounds(lb, n, "lb"), as_bounds(ub, n, "ub")
    box_optimum = box_optima(c, low, high)
    # A zero cost on a free variable is a tie over the box: which value y takes there is the
    # constraints' doing (a sudoku's empty cells), so only a fixed variable counts as decided.
    at_box = ((y == box_optimum) & (c != 0)) | (low == high)
    found = []
    if at_box.all():
        found.append(
            "every y is the box optimum of its c: no constraint is active in these "
            "observations, so there is nothing to learn"
        )
    distinct, first_seen = np.unique(y, axis=0, return_index=True)
    rows = _rows_to_check(len(c), len(distinct))
    gap, beaten_by = _beaten_by_observed(c, y, rows, distinct, first_seen)
    beaten = gap > BEATEN_TOL * np.maximum(
        1.0, np.abs(c[rows]).sum(axis=1) * max(1.0, float(np.abs(y).max()))
    )
    if beaten.any():
        first = int(np.argmax(beaten))
        sampled = "" if len(rows) == len(c) else f" (of {len(rows)} checked)"
        found.append(
            f"{int(beaten.sum())}{sampled} observations have a y that another observed y "
            f"beats under their own c (first: {row_name(int(rows[first]))}, beaten by "
            f"{row_name(int(beaten_by[first]))} by {gap[first]:.3g}; largest {gap.max():.3g}); every "
            "observed y is feasible, so no constraint set makes these y optimal. "
            "Suboptimal solutions (a MIP gap?), or observations made under different "
            "constraints?"
        )
    for message in found:
        warnings.warn(message, DataWarning, stacklevel=2)
    return found


def _rows_to_check(observations: int, distinct: int) -> np.ndarray:
    """Every row, or a fixed sample of them when comparing each cost with every distinct ``y``
    would take more than ``CHECK_PRODUCTS`` dot products (a few seconds)."""
    keep = max(1, CHECK_PRODUCTS // max(1, distinct))
    if observations <= keep:
        return np.arange(observations)
    return np.sort(np.random.default_rng(0).choice(observations, keep, replace=False))


def _beaten_by_observed(
    c: np.ndarray,
    y: np.ndarray,
    rows: np.ndarray,
    distinct: np.ndarray,
    first: np.ndarray,
    chunk: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """Per observation ``i`` in ``rows``: ``c_i·y_i - min_j c_i·y_j`` over every observed
    ``y_j`` (>= 0; ``distinct`` of them, first seen at rows ``first``) and the row of such a
    ``j``. The costs go in chunks."""
    gap, by = np.empty(len(rows)), np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        values = c[part] @ distinct.T
        best = values.argmin(axis=1)
        own = np.einsum("ij,ij->i", c[part], y[part])
        gap[start : start + chunk] = own - values[np.arange(len(part)), best]
        by[start : start + chunk] = first[best]
    return np.maximum(gap, 0.0), by


def holdout_size(pairs: int, fraction: float) -> int:
    """How many of ``pairs`` [`split_holdout`][ilplayer.learning.observations.split_holdout] holds out."""
    return max(1, round(fraction * pairs))


def split_holdout(
    c: np.ndarray, y: np.ndarray, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A seeded random split into (c_train, y_train, c_test, y_test)."""
    if not 0 < fraction < 1:
        raise ValueError(f"a held-out fraction must lie strictly between 0 and 1, got {fraction}")
    order = np.random.default_rng(derive_seed(seed, 4)).permutation(len(c))
    cut = holdout_size(len(c), fraction)
    test, train = order[:cut], order[cut:]
    return c[train], y[train], c[test], y[test]
