"""ILP-Loss' parts ([`ilplayer.learning.ilploss`][ilplayer.learning.ilploss] describes the method): the negatives
sampled around each observed solution (`sample_negatives`), the loss' three terms
(`ilp_loss_terms`) and the coefficient-of-variation balancer that weighs them (`CoVBalancer`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["CoVBalancer", "ilp_loss_terms", "sample_negatives"]


# --- negatives --------------------------------------------------------------------------------


def _step_inward(
    y: torch.Tensor, chosen: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, g: torch.Generator
) -> torch.Tensor:
    """``y`` moved one unit on each ``chosen`` coordinate: inward at a bound, else either way."""
    sign = 2.0 * (torch.rand(chosen.shape, generator=g) < 0.5).to(y.dtype) - 1.0
    sign = torch.where(y <= lo, 1.0, torch.where(y >= hi, -1.0, sign))
    return y + sign * chosen


def sample_negatives(
    y: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    lb: torch.Tensor,
    ub: torch.Tensor,
    hops: tuple[int, ...],
    samples_per_hop: int,
    g: torch.Generator,
    batch: bool = False,
) -> torch.Tensor:
    """Candidate negatives around each observed ``y`` (B, n): (B, S, n) integer points.

    One unit step up and down each axis (2n), ``samples_per_hop`` points one unit step away on
    each of ``h`` random axes for each ``h`` in ``hops`` (drawn with replacement, as the authors
    do: fewer axes where one repeats), and ``y``'s projection onto each row of
    ``A y <= b`` (``A`` (K, n) shared or (B, K, n) per instance) rounded at random, moved one
    step off ``y`` where it rounds back to it; with ``batch``, the batch's other observations
    too (negatives where each instance has its own constraints). Points outside the box or
    worse than ``y`` are left in: the loss masks them."""
    B, n = y.shape
    eye = torch.eye(n, dtype=y.dtype)
    parts = [y[:, None, :] + torch.cat([eye, -eye])]
    sizes = [h for h in hops if h <= n]
    if sizes:  # h axes drawn with replacement, as the authors do: a repeated axis steps once
        h = torch.tensor(sizes).repeat_interleave(samples_per_hop)
        axes = torch.randint(n, (B, len(h), max(sizes)), generator=g)
        axes = torch.where(
            torch.arange(max(sizes)) < h[:, None], axes, axes[..., :1]
        )  # pad with the first
        chosen = torch.zeros((B, len(h), n), dtype=y.dtype).scatter_(-1, axes, 1.0)
        parts.append(_step_inward(y[:, None, :].expand_as(chosen), chosen, lb, ub, g))
    A, b = _unit_rows(A, b)
    distance = b - (y @ A.T if A.dim() == 2 else (A @ y[..., None]).squeeze(-1))  # (B, K)
    raw = y[:, None, :] + distance[..., None] * A  # on each hyperplane
    floor = torch.floor(raw)
    rounded = floor + (torch.rand(raw.shape, generator=g) < raw - floor).to(y.dtype)
    same = (rounded == y[:, None, :]).all(-1, keepdim=True)
    widest = F.one_hot((raw - rounded).abs().argmax(-1), n).to(y.dtype)
    direction = torch.where(raw >= rounded, 1.0, -1.0).to(y.dtype)
    parts.append(rounded + same * widest * direction)
    if batch and B > 1:
        others = (torch.arange(B)[:, None] + torch.arange(1, B)[None, :]) % B  # every other row
        parts.append(y[others])
    return torch.cat(parts, dim=1)


def _unit_rows(A: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows scaled to unit normals, so that ``b - a·z`` is a signed distance."""
    norm = torch.linalg.vector_norm(A, dim=-1).clamp_min(torch.finfo(A.dtype).tiny)
    return A / norm[..., None], b / norm


# --- the loss ---------------------------------------------------------------------------------


def ilp_loss_terms(
    A: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    y: torch.Tensor,
    negatives: torch.Tensor,
    lb: torch.Tensor,
    ub: torch.Tensor,
    temperature: float,
    margin_pos: float,
    margin_neg: float,
    learned_cost: bool = False,
    A_eq: torch.Tensor | None = None,
    b_eq: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """ILP-Loss' three terms, each a mean over the batch (module docstring).

    ``A`` (K, n) and ``b`` (K,), shared, or (B, K, n) and (B, K), one set per instance, are the
    learned ``A y <= b`` (scaled to unit rows here); ``c``, ``y`` (B, n) the observations;
    ``negatives`` (B, S, n) candidates from `sample_negatives`. A candidate counts when it
    differs from ``y`` and lies in ``[lb, ub]``, and, with a known cost, costs no more than
    ``y``. With ``learned_cost`` (the cost comes from the model too) the cost row
    ``c·z <= c·y`` joins the learned rows instead: a better negative is separated either by a
    constraint or by a cost that makes it worse, and ``y`` lies on that row (no positive term).
    Known equalities ``A_eq z = b_eq`` (m_eq, n) rule out the candidates off them, as the box does."""
    B, n = y.shape
    A, b = _unit_rows(A, b)  # shared (K, n) or per instance (B, K, n)
    unit_c = c / torch.linalg.vector_norm(c, dim=-1, keepdim=True).clamp_min(
        torch.finfo(c.dtype).tiny
    )
    cost_y = (unit_c * y).sum(-1, keepdim=True)
    with torch.no_grad():  # sums, not any/all: torch's boolean reductions are slow on short rows
        in_play = ((negatives - y[:, None, :]).abs().sum(-1) > 0) & (
            (F.relu(lb - negatives) + F.relu(negatives - ub)).sum(-1) == 0
        )
        if not learned_cost:
            in_play &= (negatives * unit_c[:, None, :]).sum(-1) <= cost_y
        if A_eq is not None and b_eq is not None and len(A_eq):
            in_play &= (negatives @ A_eq.T - b_eq).abs().sum(-1) <= 1e-6 * A_eq.shape[0]
    if learned_cost:
        rows = torch.cat([A.expand(B, *A.shape[-2:]), unit_c[:, None, :]], dim=1)
        tops = torch.cat([b.expand(B, b.shape[-1]), cost_y], dim=1)
    else:
        rows, tops = A, b
    d_pos = b - (y @ A.T if A.dim() == 2 else (A @ y[..., None]).squeeze(-1))  # (B, K)
    d_neg = tops[..., None, :] - negatives @ rows.transpose(-1, -2)  # (B, S, K or K + 1)
    positive = F.relu(margin_pos - d_pos).mean(-1)
    with torch.no_grad():  # softmin written out: torch's softmax is slow on rows this short
        weights = torch.exp((d_neg.amin(-1, keepdim=True) - d_neg) / temperature)
        weights = weights / weights.sum(-1, keepdim=True)
    per_negative = (weights * F.relu(margin_neg + d_neg)).sum(-1)
    mask = in_play.to(per_negative.dtype)
    negative = (mask * per_negative).sum(-1) / (mask.sum(-1) + torch.finfo(per_negative.dtype).eps)
    # learned rows, the box's 2n rows (they cancel in the sum) and each instance's cost row
    variety = (((A.sum(-2) + unit_c) / (A.shape[-2] + 2 * n + 1)) ** 2).mean(-1)
    return {
        "pos": positive.mean(),
        "neg": negative.mean(),
        "var": variety.mean(),
        "in_play": mask.sum(-1).mean(),
    }


class CoVBalancer:
    """Weights each loss term by the coefficient of variation of its ratio to its running mean
    (Groenendijk et al., "Multi-Loss Weighting with Coefficient of Variations", WACV 2021): a
    term that still moves relative to its own scale gets more weight. Means over every step so
    far (Welford); the weights carry no gradient."""

    def __init__(self, terms: int, eps: float = 1e-6) -> None:
        self.eps = eps
        self.step = 0
        self.mean_loss = torch.zeros(terms, dtype=torch.float64)
        self.mean_ratio = torch.zeros(terms, dtype=torch.float64)
        self.spread = torch.zeros(terms, dtype=torch.float64)

    def __call__(self, losses: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            value = losses.detach().to(torch.float64)
            self.step += 1
            share = 1.0 / self.step
            self.mean_loss = (1 - share) * self.mean_loss + share * value
            ratio = (value + self.eps) / (self.mean_loss + self.eps)
            mean_ratio = (1 - share) * self.mean_ratio + share * ratio
            self.spread = self.spread + (ratio - self.mean_ratio) * (ratio - mean_ratio)
            self.mean_ratio = mean_ratio
            variation = torch.sqrt(self.spread / self.step + self.eps) / self.mean_ratio
            weights = (variation / variation.sum()).to(losses.dtype)
        return (weights * losses).sum()
