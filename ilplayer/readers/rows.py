"""What every reader shares: rows given as ``lower <= A y <= upper`` split into ``A y <= b``
and ``A_eq y = b_eq``, integer bounds rounded inward, and the checks a linear program needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["program_fields", "split_rows"]


def split_rows(A: Any, lower: np.ndarray, upper: np.ndarray) -> dict[str, Any]:
    """``lower <= A y <= upper`` (CSR ``A``; ``-inf``/``inf`` where a side is open) as the
    program's ``A, b`` (``<=`` rows, a ``>=`` side negated) and ``A_eq, b_eq`` (equal sides),
    kept sparse; None where there are no such rows."""
    import scipy.sparse as sparse

    A = sparse.csr_array(A, dtype=np.float64)
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    equal = np.isfinite(lower) & (lower == upper)
    has_upper = ~equal & np.isfinite(upper)
    has_lower = ~equal & np.isfinite(lower)
    blocks = [A[np.flatnonzero(has_upper)], -A[np.flatnonzero(has_lower)]]
    rhs = np.concatenate([upper[has_upper], -lower[has_lower]])
    fields: dict[str, Any] = {"A": None, "b": None, "A_eq": None, "b_eq": None}
    if rhs.size:
        fields.update(A=sparse.csr_array(sparse.vstack(blocks)), b=rhs)
    if equal.any():
        fields.update(A_eq=A[np.flatnonzero(equal)], b_eq=upper[equal])
    return fields


def program_fields(
    *,
    A: Any,
    lower: Any,
    upper: Any,
    lb: Any,
    ub: Any,
    integer: Any,
    c: Any,
    sense: str,
    names: Sequence[str] | None,
    binary: Any = None,
) -> dict[str, Any]:
    """The keyword arguments of ``Program`` for a model read as rows with two sides (``A``
    None: the rows come later), a box, an integer mask (``binary``: those also in [0, 1]) and
    its own objective. Integer bounds are rounded inward, as solvers do."""
    integer = np.asarray(integer, dtype=bool)
    lb, ub = np.array(lb, dtype=np.float64), np.array(ub, dtype=np.float64)
    if binary is not None:
        binary = np.asarray(binary, dtype=bool)
        lb[binary], ub[binary] = np.maximum(lb[binary], 0.0), np.minimum(ub[binary], 1.0)
        integer = integer | binary
    tight = 1e-9  # a bound within this of an integer is that integer
    lb[integer] = np.ceil(lb[integer] - tight) + 0.0  # + 0.0: no -0.0
    ub[integer] = np.floor(ub[integer] + tight)
    fields: dict[str, Any] = (
        {"A": None, "b": None, "A_eq": None, "b_eq": None}
        if A is None
        else split_rows(A, lower, upper)
    )
    fields.update(
        lb=lb,
        ub=ub,
        integrality=integer.astype(np.int64),
        sense=sense,
        c=np.asarray(c, dtype=np.float64),
        variable_names=None if names is None else tuple(str(name) for name in names),
    )
    return fields
