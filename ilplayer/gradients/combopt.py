"""CombOptNet's backward pass (Paulus et al., 2021), vectorised torch on the inputs' device.

Notation of the paper, with the convention ``A y <= b``:

* the incoming gradient ``dy`` is optionally projected onto the box (supplementary B.1):
  ``dy <- y - clip(y - dy, lb, ub)``;
* it is decomposed as ``dy = sum_k lambda_k Delta_k`` (Eq. decomposition; Delta basis of Eq.
  basis with the lambdas of Proposition P:basis, or the canonical basis);
* every target ``y'_k = y - Delta_k`` gets the mismatch functions
  ``P_k(A, b)`` = soft-min_j dist(a_j, b_j; y)            if y'_k feasible, y'_k != y
               = sum_j [a_j y'_k > b_j] dist(a_j, b_j; y'_k)  if y'_k infeasible
               = 0                                       if y'_k = y or y'_k outside the box
  and ``P_k(c) = c·(y'_k - y)`` if y'_k is feasible (0 otherwise);
* ``dA, db, dc = sum_k lambda_k dP_k/d(A, b, c)`` (Eq. A-grad), per instance.

Every function here is pure torch: no host copies, no synchronisation, no Python loop over the
batch, so the backward runs on any device (the test suite runs it on ``meta``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch
import torch.nn.functional as F

from ilplayer.core.batch import rows_with_equalities
from ilplayer.core.bounds import exact_dtype
from ilplayer.core.records import Status, has_solution
from ilplayer.core.tensors import dense_tensor
from ilplayer.gradients.base import GradientMethod, MethodRun, is_number

if TYPE_CHECKING:
    from ilplayer.core.bounds import Bounds

__all__ = [
    "BASES",
    "CombOptNet",
    "combopt_backward",
    "decompose",
    "project_onto_box",
    "softmin",
    "softmin_weights",
]

BASES = ("delta", "canonical")
_TINY_NORM = 1e-12  # guards the distance of an all-zero constraint row


def project_onto_box(
    y: torch.Tensor, dy: torch.Tensor, lb: torch.Tensor, ub: torch.Tensor
) -> torch.Tensor:
    """Supplementary B.1: ``y - clip(y - dy, lb, ub)``, so that every target stays in the box."""
    return y - torch.minimum(torch.maximum(y - dy, lb), ub)


def decompose(dy: torch.Tensor, basis: str = "delta") -> tuple[torch.Tensor, torch.Tensor]:
    """Write ``dy`` (B, n) as ``sum_k lambda_k Delta_k`` with integer ``Delta_k``.

    Returns ``(delta, lam)`` of shapes (B, n, n) and (B, n): ``delta[:, k]`` is ``Delta_k``.

    * ``"delta"`` (Eq. basis): ``Delta_k`` is the signed indicator of the k dominant
      coordinates of ``dy``; ``lambda_k = |dy_(k)| - |dy_(k+1)|`` (Proposition P:basis), with
      ``|dy_(1)| >= |dy_(2)| >= ...`` and ``lambda_n = |dy_(n)|``. Ties are broken by index.
    * ``"canonical"``: ``Delta_k = sign(dy_k) e_k`` and ``lambda_k = |dy_k|``.
    """
    sign = torch.sign(dy)
    magnitude = dy.abs()
    if basis == "canonical":
        return torch.diag_embed(sign), magnitude
    if basis != "delta":
        raise ValueError(f"basis must be one of {BASES}, got {basis!r}")
    n = dy.shape[-1]
    sorted_magnitude, order = magnitude.sort(dim=-1, descending=True, stable=True)
    lam = sorted_magnitude - F.pad(sorted_magnitude[..., 1:], (0, 1))
    positions = torch.arange(n, device=dy.device)
    rank = torch.empty_like(order).scatter_(-1, order, positions.expand_as(order))
    included = rank[..., None, :] <= positions[:, None]  # (B, k, i): rank_i <= k
    return included.to(dy.dtype) * sign[..., None, :], lam


def softmin(x: torch.Tensor, tau: float | None, dim: int = -1) -> torch.Tensor:
    """Supplementary A.1: ``-tau log sum_k exp(-x_k / tau)``; the hard minimum when tau is None."""
    if tau is None:
        return x.amin(dim=dim)
    return -tau * torch.logsumexp(-x / tau, dim=dim)


def softmin_weights(x: torch.Tensor, tau: float | None, dim: int = -1) -> torch.Tensor:
    """The gradient of `softmin` with respect to ``x`` (ties of the hard min share it)."""
    if tau is None:
        is_min = (x == x.amin(dim=dim, keepdim=True)).to(x.dtype)
        return is_min / is_min.sum(dim=dim, keepdim=True)
    return torch.softmax(-x / tau, dim=dim)


def _constraint_gradients(
    A: torch.Tensor,
    b: torch.Tensor,
    y: torch.Tensor,
    targets: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    weights: tuple[torch.Tensor, torch.Tensor],
    tau: float | None,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``dA``, ``db`` of the mismatch functions: ``targets`` are ``(y', Delta, a_j·y' - b_j)``,
    ``weights`` the targets' ``lambda`` in all and on the feasible ones."""
    (y_prime, delta, excess_prime), (lam, lam_feasible) = targets, weights
    A_t = A.transpose(-1, -2)
    norms = torch.linalg.vector_norm(A, dim=-1).clamp_min(_TINY_NORM)  # (m,) or (B, m)
    unit = A / norms[..., None]

    # Feasible targets, y'_k != y: soft-min over the distances of y to the constraints. With y
    # feasible the distance is the signed slack (b_j - a_j·y)/|a_j|; its one-sided derivative
    # keeps pushing a constraint that is exactly tight at y.
    moved = (delta != 0).any(dim=-1).to(dtype)
    weight_feasible = (lam_feasible * moved).sum(dim=-1)  # (B,)
    slack = (b - (y[:, None, :] @ A_t).squeeze(1)) / norms  # (B, m)
    alpha = weight_feasible[:, None] * softmin_weights(slack, tau) / norms

    # Infeasible targets: sum of the distances of y'_k to the constraints it violates.
    weight_infeasible = (lam - lam_feasible)[..., None] * (excess_prime > 0).to(dtype)
    weight_infeasible = weight_infeasible / norms[..., None, :]  # (B, K, m)
    distance_prime = excess_prime / norms[..., None, :]
    beta = weight_infeasible.sum(dim=1)  # (B, m)
    gamma = (weight_infeasible * distance_prime).sum(dim=1)

    db = alpha - beta
    dA = (
        weight_infeasible.transpose(-1, -2) @ y_prime
        - alpha[..., None] * y[:, None, :]
        - (alpha * slack + gamma)[..., None] * unit
    )
    if A.dim() == 2:
        dA = dA.sum(dim=0)
    if b.dim() == 1:
        db = db.sum(dim=0)
    return dA, db


def combopt_backward(
    dy: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    y: torch.Tensor,
    status: torch.Tensor,
    lb: torch.Tensor,
    ub: torch.Tensor,
    *,
    tau: float | None = 0.5,
    basis: str = "delta",
    project_to_box: bool = True,
    feasibility_tol: float = 1e-6,
    need_constraint_grads: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Gradients ``(dc, dA, db)`` of the CombOptNet mismatch functions for a batch.

    Args:
        dy: incoming gradient (B, n).
        A: constraints (m, n) shared by the batch, or (B, m, n).
        b: right-hand sides (m,) or (B, m).
        y: the forward solutions (B, n); placeholders where ``status`` has no solution.
        status: [`Status`][ilplayer.Status] codes (B,).
        lb: the box's lower bounds, an (n,) tensor on the same device.
        ub: its upper bounds.
        tau: soft-min temperature; ``None`` is the hard minimum.
        basis: ``"delta"`` (the paper's) or ``"canonical"``.
        project_to_box: project ``y - dy`` onto the box first (supplementary B.1).
        feasibility_tol: ``y'`` is feasible when ``A y' - b <= feasibility_tol``.
        need_constraint_grads: compute ``dA`` and ``db`` (else they are returned as None).

    Returns:
        ``dc`` (B, n) (``dP/dc = y' - y`` does not depend on ``c``), and ``dA``, ``db`` shaped
        like ``A`` and ``b`` (summed over the batch where they are shared). Rows whose status is
        ERROR or TIME_LIMIT_NO_SOLUTION get zero.
        INFEASIBLE rows get the paper's outward push: every target counts as infeasible, so
        the violated constraints move to admit it.
    """
    dtype = dy.dtype
    solved = has_solution(status)
    usable = solved | (status == int(Status.INFEASIBLE))
    if project_to_box:
        dy = project_onto_box(y, dy, lb, ub)
    delta, lam = decompose(dy, basis)  # (B, K, n), (B, K)
    y_prime = y[:, None, :] - delta  # targets y'_k
    in_box = ((y_prime >= lb) & (y_prime <= ub)).all(dim=-1)  # (B, K)
    lam = lam * (in_box & usable[:, None]).to(dtype)  # P_k = 0 outside the box
    A_t = A.transpose(-1, -2)
    excess_prime = y_prime @ A_t - b[..., None, :]  # a_j·y'_k - b_j   (B, K, m)
    feasible_prime = (excess_prime <= feasibility_tol).all(dim=-1) & solved[:, None]
    lam_feasible = lam * feasible_prime.to(dtype)

    # Cost: P_k(c) = c·(y'_k - y) = -c·Delta_k for feasible targets.
    dc = -(lam_feasible[:, None, :] @ delta).squeeze(1)
    if not need_constraint_grads:
        return dc, None, None

    dA, db = _constraint_gradients(
        A, b, y, (y_prime, delta, excess_prime), (lam, lam_feasible), tau, dtype
    )
    return dc, dA, db


@dataclass(frozen=True)
class CombOptNet(GradientMethod):
    """``method="combopt"`` (Paulus et al., 2021): gradients for ``c``, ``A`` and ``b``.

    Args:
        tau: soft-min temperature of supplementary A.1 (the paper uses 0.5); ``None`` for the
            hard minimum.
        basis: ``"delta"`` (the paper's basis of dominant directions) or ``"canonical"``.
        project_to_box: project ``y - dy`` onto the box before decomposing (supplementary B.1).
        feasibility_tol: tolerance of the backward's feasibility test for the targets.
    """

    tau: float | None = 0.5
    basis: str = "delta"
    project_to_box: bool = True
    feasibility_tol: float = 1e-6
    name: ClassVar[str] = "combopt"
    constraint_gradients: ClassVar[bool] = True
    no_signal_hint: ClassVar[str] = (
        "CombOptNet's gradient vanishes when no target y - Delta is feasible and different from "
        "y -- typical of a loss on the objective (such as regret) over tight or equality-like "
        "constraints. For learning costs use method='blackbox', 'identity' or 'perturbed', or "
        "the losses ilplayer.losses.SPOPlus and FenchelYoung"
    )

    def __post_init__(self) -> None:
        if self.tau is not None and not (is_number(self.tau) and self.tau > 0):
            raise ValueError(
                f"tau must be a positive number or None (hard minimum), got {self.tau!r}"
            )
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {BASES}, got {self.basis!r}")
        if not isinstance(self.project_to_box, bool):
            raise TypeError(f"project_to_box must be True or False, got {self.project_to_box!r}")
        if not (is_number(self.feasibility_tol) and self.feasibility_tol >= 0):
            raise ValueError(f"feasibility_tol must be a number >= 0, got {self.feasibility_tol!r}")
        object.__setattr__(self, "tau", None if self.tau is None else float(self.tau))
        object.__setattr__(self, "feasibility_tol", float(self.feasibility_tol))

    def forward(
        self,
        ctx: Any,
        run: MethodRun,
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: Bounds,
        ub: Bounds,
        A_eq: torch.Tensor | None,
        b_eq: torch.Tensor | None,
        integrality: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        problem = run.validate(c, A, b, lb, ub, A_eq, b_eq, integrality, mapped=False)
        if problem.has_continuous and (ctx.needs_input_grad[1] or ctx.needs_input_grad[2]):
            # The paper's targets y - Delta move by whole units and its mismatch functions are
            # distances of integer points; with continuous variables the constraint gradient
            # is not derived: refuse it rather than return something that looks like one.
            raise ValueError(
                "integrality: method='combopt' gives gradients for A and b on pure-integer "
                "programs only, and this one has continuous variables; detach A and b (its "
                "cost gradient works on mixed-integer programs), or learn the costs with a "
                "cost method (method='blackbox', 'identity', 'perturbed', or the losses)"
            )
        y64, status, _ = run.solve(problem)
        # The backward is torch maths on dense rows: a sparse A (solved sparse) is densified here.
        A_rows, A_eq_rows = (dense_tensor(x, c.device) for x in (problem.A, problem.A_eq))
        ctx.equalities = (A_eq_rows, problem.b_eq)
        y = y64.to(exact_dtype(c.dtype, problem.lb, problem.ub))
        # Half precision cannot resolve the feasibility test of the targets: compute in >= float32.
        dtype = torch.promote_types(torch.promote_types(c.dtype, A_rows.dtype), b.dtype)
        dtype = torch.promote_types(dtype, torch.float32)
        ctx.bounds = tuple(
            torch.from_numpy(v).to(c.device, dtype) for v in (problem.lb, problem.ub)
        )
        ctx.save_for_backward(A_rows, problem.b, y, status)
        ctx.dtypes = (c.dtype, dtype)
        return y, status

    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        A, b, y, status = ctx.saved_tensors
        c_dtype, dtype = ctx.dtypes
        lb, ub = ctx.bounds
        need_c, need_A, need_b = ctx.needs_input_grad[:3]
        m = A.shape[-2]
        A_eq, b_eq = ctx.equalities
        A_rows, b_rows = rows_with_equalities(A, b, A_eq, b_eq, y.shape[0], dtype)
        dc, dA, db = combopt_backward(
            dy.to(dtype),
            A_rows.to(dtype),
            b_rows.to(dtype),
            y.to(dtype),
            status,
            lb,
            ub,
            tau=self.tau,
            basis=self.basis,
            project_to_box=self.project_to_box,
            feasibility_tol=self.feasibility_tol,
            need_constraint_grads=need_A or need_b,
        )
        if (
            dA is not None and db is not None and A_rows.shape[-2] != m
        ):  # equalities get no gradient
            dA, db = dA[..., :m, :], db[..., :m]
            if A.dim() == 2 and dA.dim() == 3:
                dA = dA.sum(0)
            if b.dim() == 1 and db.dim() == 2:
                db = db.sum(0)
        return (
            dc.to(c_dtype) if need_c else None,
            dA.to(A.dtype) if need_A and dA is not None else None,
            db.to(b.dtype) if need_b and db is not None else None,
        )

    def options(self) -> dict[str, Any]:
        return {"tau": self.tau, "basis": self.basis, "project_to_box": self.project_to_box}
