"""The equalities every observed solution satisfies: the equations of their affine hull.

Rules of the form "each cell holds exactly one digit" or "each class meets once a week" are
equalities, and every observed solution lies on them. The observations' affine hull is found
exactly by linear algebra (the null space of the centred solutions), so these rows need no
training: [`data_equalities`][ilplayer.learning.equalities.data_equalities] returns them in reduced
row-echelon form (sparse where the rules are, with small rational coefficients snapped to
exact values) and [`learn_constraints`][ilplayer.learning.learn.learn_constraints] keeps them fixed
while it learns inequalities.

With too few observations the hull also holds coincidences (a variable that happened to be 0
in every one): ``learn_constraints`` drops the rows that a validation pair violates.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["data_equalities", "satisfied"]

_DENOMINATORS = 12  # coefficients are snapped to p/q for q <= this when that changes nothing


def data_equalities(y: Any, tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """``(A_eq, b_eq)`` with ``A_eq y_i = b_eq`` for every row ``y_i`` of ``y`` (N, n): a basis of
    the equations of their affine hull, ``n - rank`` rows, in reduced row-echelon form (each
    row has a pivot column with coefficient 1 that no other row uses). Empty (0, n) when the
    observations span the whole space. ``tol``: singular values below ``tol`` times the
    largest count as zero."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2 or len(y) < 1:
        raise ValueError(f"y must be a non-empty (N, n) array, got shape {y.shape}")
    n = y.shape[1]
    mean = y.mean(0)
    centred = y - mean
    # the Gram matrix keeps memory at n x n for any N; its eigenvalues are the squared singular values
    gram = centred.T @ centred
    values, vectors = np.linalg.eigh(gram)
    scale = max(float(values[-1]), 1.0)
    null = vectors[:, values <= (tol**2) * scale * n]
    if null.shape[1] == 0:
        return np.zeros((0, n)), np.zeros(0)
    A = _row_echelon(null.T)
    A = _snap(A)
    b = A @ mean
    b_snapped = _snap(b)
    if np.abs(y @ A.T - b_snapped).max() <= 1e-9 * max(1.0, np.abs(b).max()):
        b = b_snapped
    return A, b


def satisfied(A_eq: np.ndarray, b_eq: np.ndarray, y: Any, tol: float = 1e-6) -> np.ndarray:
    """Which rows of ``A_eq x = b_eq`` every row of ``y`` satisfies (within ``tol``)."""
    y = np.asarray(y, dtype=np.float64)
    return (np.abs(y @ A_eq.T - b_eq) <= tol).all(0)


def _row_echelon(A: np.ndarray) -> np.ndarray:
    """Reduced row-echelon form of the full-rank rows ``A`` (partial pivoting)."""
    A = A.copy()
    rows, cols = A.shape
    r = 0
    for c in range(cols):
        if r == rows:
            break
        pivot = r + int(np.abs(A[r:, c]).argmax())
        if abs(A[pivot, c]) < 1e-9:
            continue
        A[[r, pivot]] = A[[pivot, r]]
        A[r] /= A[r, c]
        others = np.arange(rows) != r
        A[others] -= np.outer(A[others, c], A[r])
        r += 1
    A[np.abs(A) < 1e-12] = 0.0
    return A[:r]


def _snap(values: np.ndarray) -> np.ndarray:
    """Each entry replaced by the nearest fraction with a denominator up to 12 where it lies
    within 1e-9 of it (elimination leaves 0.9999999999 where the rules have 1)."""
    flat = values.reshape(-1).copy()
    for i, v in enumerate(flat):
        if v == 0.0:
            continue
        near = float(Fraction(v).limit_denominator(_DENOMINATORS))
        if abs(near - v) <= 1e-9:
            flat[i] = near
    return flat.reshape(values.shape)
