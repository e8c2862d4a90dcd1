"""CaVE (cone-aligned vector estimation): predicted costs aligned with the optimality cone of
the true decision, found from the constraints binding there; no solver runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ilplayer.losses.cost import CostLoss, positive_int

if TYPE_CHECKING:
    from ilplayer.layer import ILPLayer
    from ilplayer.oracle import Oracle

__all__ = ["CaVE", "binding_normals", "cone_projection"]


def binding_normals(y: torch.Tensor, problem: Any, tol: float = 1e-6) -> list[np.ndarray]:
    """Per instance: the outward normals (rows, n) of the constraints binding at ``y`` (B, n),
    in the minimisation form ``A y <= b``: the rows of ``A`` met with equality, both signs of
    every equality row, ``e_j`` where ``y_j`` sits at ``ub_j`` and ``-e_j`` where at ``lb_j``."""
    points = y.detach().cpu().double().numpy()
    n = points.shape[1]
    lb, ub = np.broadcast_to(problem.lb, n), np.broadcast_to(problem.ub, n)
    eye = np.eye(n)
    normals = []
    for i, point in enumerate(points):
        A, b = _instance_rows(problem.A, i, 2), _instance_rows(problem.b, i, 1)
        rows = [A[np.abs(A @ point - b) <= tol * (1 + np.abs(b))]]
        if problem.A_eq is not None and problem.num_equalities:
            A_eq = _instance_rows(problem.A_eq, i, 2)
            rows += [A_eq, -A_eq]
        rows += [eye[np.isclose(point, ub, atol=tol)], -eye[np.isclose(point, lb, atol=tol)]]
        normals.append(np.vstack(rows))
    return normals


def _instance_rows(t: Any, i: int, shared_dims: int) -> np.ndarray:
    """Instance ``i``'s rows (``shared_dims`` 2) or right-hand side (1) of a constraint tensor
    shared by the batch or given per instance, dense or sparse, as a float64 array."""
    from ilplayer.core.matrices import dense

    if not isinstance(t, torch.Tensor):
        return np.asarray(dense(t), dtype=np.float64)
    array = (t.to_dense() if t.is_sparse else t).detach().cpu().double().numpy()
    return array if array.ndim == shared_dims else array[i]


def cone_projection(v: np.ndarray, normals: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """The projection of ``v`` onto the cone ``{lam @ normals : lam >= 0}``: exact (non-negative
    least squares, scipy) when ``max_iter`` is None, else Clarabel's interior-point QP stopped
    after ``max_iter`` steps (CaVE+: the under-converged projection stays inside the cone)."""
    normals = normals[np.abs(normals).sum(axis=1) > 1e-12]
    if not len(normals):
        return v.copy()
    if max_iter is None:
        from scipy.optimize import nnls

        lam, _ = nnls(normals.T, v, maxiter=50 * normals.shape[0])
        return lam @ normals
    try:
        import clarabel
    except ImportError as exc:
        raise ImportError(
            "CaVE(max_iter=...) projects with Clarabel's interior-point method: "
            "pip install clarabel (or leave max_iter=None for the exact projection)"
        ) from exc
    import scipy.sparse as sparse

    m = normals.shape[0]
    settings = clarabel.DefaultSettings()
    settings.max_iter, settings.verbose, settings.max_threads = int(max_iter), False, 1
    settings.presolve_enable, settings.equilibrate_enable = False, False
    P = sparse.triu(sparse.csc_matrix(2.0 * normals @ normals.T)).tocsc()
    solution = clarabel.DefaultSolver(
        P,
        -2.0 * normals @ v,
        (-sparse.eye(m, format="csc")).tocsc(),
        np.zeros(m),
        [clarabel.NonnegativeConeT(m)],
        settings,
    ).solve()
    return np.asarray(solution.x) @ normals


class CaVE(CostLoss):
    """Cone-aligned vector estimation (Tang & Khalil, CPAIOR 2024; PyEPO's CaVE): ``1 -
    cos(-c_pred, p)``, ``p`` the projection of ``-c_pred`` (minimisation form) onto the cone
    of the normals of the constraints binding at ``y_true`` (its optimality cone). ilplayer
    finds the binding rows itself from ``A, b, A_eq`` and the box (PyEPO reads them off a
    Gurobi model). ``max_iter=None``: the exact projection (scipy); ``max_iter=3``: PyEPO's
    default, CaVE+ (Clarabel stopped after 3 interior-point steps; needs ``clarabel``). No
    solver runs. Returns the batch mean."""

    def __init__(
        self, oracle: Oracle | ILPLayer, max_iter: int | None = None, tol: float = 1e-6
    ) -> None:
        super().__init__(oracle)
        if self.oracle.cost_map is not None:
            raise ValueError(
                "CaVE: the layer has a cost_map, and CaVE reads the constraints binding at y_true in "
                "the program's own variables; use a layer without cost_map, with the costs "
                "c @ cost_map.T and the decisions in the program's variables"
            )
        self.max_iter = None if max_iter is None else positive_int("max_iter", max_iter)
        self.tol = float(tol)

    def forward(
        self,
        c_pred: torch.Tensor,
        y_true: torch.Tensor,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
    ) -> torch.Tensor:
        """The loss, the mean over the batch (the arguments: [`CostLoss`][ilplayer.losses.CostLoss])."""
        (y_true,) = self.checked(c_pred, y_true=y_true)
        problem = self.oracle.min_problem(c_pred, A, b, A_eq, b_eq)
        signed = -self.sign * c_pred.to(torch.float64)
        targets = signed.detach().cpu().numpy()
        normals = binding_normals(y_true, problem, self.tol)
        projected = np.stack(
            [cone_projection(v, n, self.max_iter) for v, n in zip(targets, normals)]
        )
        target = torch.from_numpy(projected).to(signed.device)
        loss = 1 - torch.nn.functional.cosine_similarity(signed, target, dim=1)
        return loss.mean().to(c_pred.dtype)
