"""Constraint matrices as the core and the backends hold them: dense NumPy arrays, or
``scipy.sparse`` CSR matrices kept sparse from the user's input to the solver (memory that
grows with the non-zeros, not with ``m * n``).

Every helper takes either kind; scipy is imported only when a sparse matrix is there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "as_csr",
    "dense",
    "frozen_csr",
    "is_sparse",
    "nonzero_rows",
    "row_entries",
    "stack_rows",
]


def is_sparse(matrix: Any) -> bool:
    """A ``scipy.sparse`` matrix or array (without importing scipy)."""
    return hasattr(matrix, "tocsr") and hasattr(matrix, "nnz")


def as_csr(matrix: Any) -> Any:
    """A float64 CSR copy with sorted, summed indices and no stored zeros."""
    csr = matrix.tocsr().astype(np.float64, copy=True)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr


def frozen_csr(matrix: Any) -> Any:
    """``as_csr(matrix)`` made read-only, or ``matrix`` itself when it was made here: a
    program's rows are frozen once and then shared by every batch, never copied again."""
    if (
        getattr(matrix, "_ilplayer_frozen", False) and not matrix.data.flags.writeable
    ):  # (a pickle's copy is)
        return matrix
    out = as_csr(matrix)
    for part in (out.data, out.indices, out.indptr):
        part.flags.writeable = False
    out._ilplayer_frozen = True
    return out


def dense(matrix: Any) -> np.ndarray:
    """The matrix as a dense array (for the backends that need one: CP-SAT, bruteforce)."""
    return np.asarray(matrix.toarray()) if is_sparse(matrix) else np.asarray(matrix)


def nonzero_rows(matrix: Any) -> np.ndarray:
    """Which rows have a non-zero entry."""
    if is_sparse(matrix):
        return np.asarray(np.diff(matrix.tocsr().indptr) > 0)
    return np.asarray(np.asarray(matrix).any(axis=1))


def row_entries(matrix: Any) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(columns, values)`` of each row's non-zeros, in column order."""
    if is_sparse(matrix):
        csr = matrix.tocsr()
        for j in range(csr.shape[0]):
            part = slice(csr.indptr[j], csr.indptr[j + 1])
            yield csr.indices[part], csr.data[part]
        return
    for row in np.asarray(matrix):
        columns = np.flatnonzero(row)
        yield columns, row[columns]


def stack_rows(*blocks: Any) -> Any:
    """The blocks' rows one under the other: sparse (CSR) when any block is sparse."""
    if any(is_sparse(block) for block in blocks):
        import scipy.sparse as sparse

        return sparse.vstack([sparse.csr_matrix(block) for block in blocks], format="csr")
    return np.vstack(blocks)
