"""The user's arrays as torch tensors: dense, `scipy.sparse` or torch-sparse rows, checked finite
and named in every error."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ilplayer.core.matrices import frozen_csr, is_sparse

__all__ = ["as_rows", "check_finite", "dense_tensor", "input_tensor"]


def _scipy_from_torch(value: torch.Tensor) -> Any:
    """A 2-D torch sparse tensor (COO or CSR, any device) as a host scipy CSR matrix."""
    import scipy.sparse as sparse

    coo = value.detach().to_sparse_coo().coalesce().cpu()
    rows, columns = coo.indices().numpy()
    return sparse.csr_matrix(
        (coo.values().to(torch.float64).numpy(), (rows, columns)), shape=tuple(coo.shape)
    )


def as_rows(value: Any, name: str) -> Any:
    """A constraint matrix as the core keeps it: a 2-D scipy.sparse or torch sparse matrix
    (not requiring grad) as a host CSR matrix, never densified; anything else a tensor."""
    if isinstance(value, torch.Tensor) and value.layout != torch.strided:
        if value.requires_grad or value.dim() != 2:  # a gradient, or per-instance rows: dense
            return input_tensor(value.to_dense(), name)
        value = _scipy_from_torch(value)
    if not is_sparse(value):
        return input_tensor(value, name)
    if len(value.shape) != 2:
        raise ValueError(
            f"{name}: a sparse matrix must have shape (m, n), got {tuple(value.shape)}"
        )
    csr = frozen_csr(value)
    if not np.isfinite(csr.data).all():
        raise ValueError(
            f"{name} must be finite; found {csr.data[~np.isfinite(csr.data)][0]} among its entries"
        )
    return csr


def dense_tensor(matrix: Any, device: torch.device) -> Any:
    """``matrix`` as a dense float64 tensor on ``device`` when it is sparse (for the torch maths
    of CombOptNet and bruteforce); a tensor (or None) is returned as it is."""
    if is_sparse(matrix):
        return torch.from_numpy(matrix.toarray()).to(device)
    return matrix


def input_tensor(value: Any, name: str) -> torch.Tensor:
    """``value`` (a tensor, a numpy array or a scipy.sparse matrix; floating point) as a dense
    tensor, refused with its ``name`` otherwise."""
    if isinstance(value, torch.Tensor) and value.layout != torch.strided:
        value = value.to_dense()  # c or b given sparse, or rows that need a gradient
    if is_sparse(value):
        value = value.toarray()
    if isinstance(value, torch.Tensor):
        tensor = value
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"{name} must be a numeric array, got a numpy array of dtype object")
        tensor = torch.from_numpy(value)
    else:
        raise TypeError(
            f"{name} must be a torch.Tensor, a numpy array or a scipy.sparse matrix, "
            f"got {type(value).__name__}"
        )
    if not tensor.is_floating_point():
        raise TypeError(
            f"{name} must have a floating-point dtype, got {tensor.dtype} "
            f"(convert it with .double() or .astype(float))"
        )
    return tensor


def check_finite(tensor: torch.Tensor, name: str) -> None:
    """Refuse a NaN or infinite entry of ``tensor``, naming ``name`` and the entry's index."""
    if tensor.device.type == "meta" or tensor.numel() == 0:
        return
    finite = torch.isfinite(tensor)
    if not bool(finite.all()):
        bad = (~finite).nonzero()[0].tolist()
        raise ValueError(
            f"{name} must be finite; found {tensor[tuple(bad)].item()} at index {tuple(bad)}"
        )
