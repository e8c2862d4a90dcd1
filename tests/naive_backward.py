"""A deliberately naive CombOptNet backward, written line by line from the paper's formulas with
Python loops and autograd on each scalar mismatch function. Tests only: it is the second
implementation that the vectorised one in ``ilplayer.gradients`` must agree with."""

from __future__ import annotations

import math

import torch

from ilplayer import Status


def _sign(x: float) -> float:
    return float((x > 0) - (x < 0))


def naive_decomposition(d: list[float], basis: str) -> list[tuple[float, list[float]]]:
    """[(lambda_k, Delta_k)] for one gradient vector, from Eq. basis and Proposition P:basis."""
    n = len(d)
    if basis == "canonical":
        return [(abs(d[k]), [_sign(d[k]) if j == k else 0.0 for j in range(n)]) for k in range(n)]
    order = sorted(range(n), key=lambda j: -abs(d[j]))  # k_1, ..., k_n (stable)
    pairs = []
    for k in range(n):
        delta = [0.0] * n
        for j in order[: k + 1]:
            delta[j] = _sign(d[j])
        following = abs(d[order[k + 1]]) if k + 1 < n else 0.0
        pairs.append((abs(d[order[k]]) - following, delta))
    return pairs


def naive_softmin(values: list[torch.Tensor], tau: float | None) -> torch.Tensor:
    if tau is None:
        return torch.stack(values).min()
    return -tau * torch.log(sum(torch.exp(-v / tau) for v in values))


def naive_backward(
    dy, A, b, y, status, lb, ub, *, tau, basis, project_to_box, feasibility_tol=1e-6
):
    """Returns (dc, dA, db) with A (B, m, n) and b (B, m) (the caller expands shared ones)."""
    B, n = dy.shape
    m = A.shape[1]
    dc, dA, db = torch.zeros_like(dy), torch.zeros_like(A), torch.zeros_like(b)
    for i in range(B):
        st = Status(int(status[i]))
        if st in (Status.ERROR, Status.TIME_LIMIT_NO_SOLUTION):
            continue
        yi = [float(v) for v in y[i]]
        lo, hi = [float(v) for v in lb], [float(v) for v in ub]
        d = [float(v) for v in dy[i]]
        if project_to_box:  # supplementary B.1
            d = [yi[j] - max(min(yi[j] - d[j], hi[j]), lo[j]) for j in range(n)]
        c_var = torch.zeros(n, dtype=dy.dtype, requires_grad=True)  # dP/dc does not depend on c
        A_var = A[i].detach().clone().requires_grad_(True)
        b_var = b[i].detach().clone().requires_grad_(True)
        total = torch.zeros((), dtype=dy.dtype)
        for lam, delta in naive_decomposition(d, basis):
            y_prime = [yi[j] - delta[j] for j in range(n)]
            if any(y_prime[j] < lo[j] or y_prime[j] > hi[j] for j in range(n)):
                continue  # y'_k outside the box: P = 0
            yp = torch.tensor(y_prime, dtype=dy.dtype)
            yv = torch.tensor(yi, dtype=dy.dtype)
            rows = [A_var[j] @ yp - b_var[j] for j in range(m)]
            feasible = st.has_solution and all(float(r.detach()) <= feasibility_tol for r in rows)
            norms = [torch.sqrt(sum(A_var[j, q] ** 2 for q in range(n))) for j in range(m)]
            if feasible:
                if y_prime == yi:
                    p_constraints = torch.zeros((), dtype=dy.dtype)
                else:
                    distances = [torch.abs(A_var[j] @ yv - b_var[j]) / norms[j] for j in range(m)]
                    p_constraints = naive_softmin(distances, tau)
                p_cost = c_var @ (yp - yv)
            else:
                p_constraints = sum(
                    (rows[j] / norms[j] for j in range(m) if float(rows[j].detach()) > 0),
                    torch.zeros((), dtype=dy.dtype),
                )
                p_cost = torch.zeros((), dtype=dy.dtype)
            total = total + lam * (p_constraints + p_cost)
        if total.requires_grad:
            gc, gA, gb = torch.autograd.grad(total, [c_var, A_var, b_var], allow_unused=True)
            dc[i] = gc if gc is not None else 0.0
            dA[i] = gA if gA is not None else 0.0
            db[i] = gb if gb is not None else 0.0
    assert not any(math.isnan(v) for v in dA.flatten().tolist())
    return dc, dA, db
