"""The losses over a pool of known decisions (PyEPO's pool methods): `NCE`, `ContrastiveMAP`,
`PointwiseLTR`, `PairwiseLTR`, `ListwiseLTR`. They solve only to grow the pool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ilplayer.core.decision_pool import PoolRule
from ilplayer.losses.cost import CostLoss

if TYPE_CHECKING:
    from ilplayer.layer import ILPLayer
    from ilplayer.oracle import Oracle

__all__ = ["NCE", "ContrastiveMAP", "ListwiseLTR", "PairwiseLTR", "PointwiseLTR", "PoolLoss"]


class PoolLoss(CostLoss):
    """A loss over the whole pool of known decisions (``pool`` required: e.g. the training
    set's optimal solutions); ``solve_ratio`` is the share of calls whose predicted costs are
    solved and added to the pool (PyEPO's default 1)."""

    def __init__(
        self,
        oracle: Oracle | ILPLayer,
        solve_ratio: float = 1.0,
        pool: Any = None,
        seed: int | None = None,
    ) -> None:
        if pool is None:
            raise ValueError(
                f"pool: {type(self).__name__} compares against a pool of known decisions; give "
                "pool= (e.g. the training set's optimal solutions, (k, n))"
            )
        super().__init__(
            oracle, 1.0, pool if isinstance(pool, PoolRule) else PoolRule(solve_ratio, pool, seed)
        )

    def decisions(self, c_pred: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any) -> torch.Tensor:
        """The pool (k, n) after this call's draw, float64 on ``c_pred``'s device."""
        assert self.pool_rule is not None
        return self.oracle.refresh_pool(self.pool_rule, c_pred, A, b, A_eq, b_eq).to(c_pred.device)


class _ContrastiveLoss(PoolLoss):
    def margins(
        self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any
    ) -> torch.Tensor:
        """``c_pred·y_true - c_pred·w`` (B, k) for every pooled ``w``, minimisation form."""
        (y_true,) = self.checked(c_pred, y_true=y_true)
        pool = self.decisions(c_pred, A, b, A_eq, b_eq)
        pred = self.sign * c_pred.to(torch.float64)
        return (pred * y_true).sum(-1, keepdim=True) - pred @ pool.T


class NCE(_ContrastiveLoss):
    """Noise-contrastive estimation over the pool (Mulamba et al., IJCAI 2021; PyEPO's NCE): the
    mean over pooled decisions ``w`` of ``c_pred·y_true - c_pred·w`` (minimisation form: the
    observed decision should cost less than every pooled one). Returns the batch mean."""

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
        return self.margins(c_pred, y_true, A, b, A_eq, b_eq).mean(-1).mean().to(c_pred.dtype)


class ContrastiveMAP(_ContrastiveLoss):
    """Contrastive MAP (Mulamba et al., IJCAI 2021; PyEPO's CMAP): ``c_pred·y_true - min_w
    c_pred·w`` over the pool (minimisation form), NCE's hardest negative alone. Returns the
    batch mean."""

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
        return self.margins(c_pred, y_true, A, b, A_eq, b_eq).amax(-1).mean().to(c_pred.dtype)


class _RankLoss(PoolLoss):
    def scores(
        self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The pooled decisions' objectives (B, k) under the predicted and the true costs,
        minimisation form."""
        (c_true,) = self.checked(c_pred, c_true=c_true)
        pool = self.decisions(c_pred, A, b, A_eq, b_eq)
        pred = self.sign * c_pred.to(torch.float64)
        true = self.sign * c_true
        return pred @ pool.T, true @ pool.T


class PointwiseLTR(_RankLoss):
    """Pointwise learning to rank (Mandi et al., ICML 2022; PyEPO's ptLTR): the squared error
    between every pooled decision's predicted and true objective, mean over the pool. Returns
    the batch mean."""

    def forward(
        self,
        c_pred: torch.Tensor,
        c_true: torch.Tensor,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
    ) -> torch.Tensor:
        """The loss, the mean over the batch (the arguments: [`CostLoss`][ilplayer.losses.CostLoss])."""
        pred, true = self.scores(c_pred, c_true, A, b, A_eq, b_eq)
        return (pred - true).square().mean(-1).mean().to(c_pred.dtype)


class PairwiseLTR(_RankLoss):
    """Pairwise learning to rank (Mandi et al., ICML 2022; PyEPO's prLTR): a hinge between the
    pooled decision that is best under the true costs and each other one, ``relu(pred_best -
    pred_w)`` summed over the pool and divided by ``k - 1`` (minimisation form). Returns the
    batch mean."""

    def forward(
        self,
        c_pred: torch.Tensor,
        c_true: torch.Tensor,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
    ) -> torch.Tensor:
        """The loss, the mean over the batch (the arguments: [`CostLoss`][ilplayer.losses.CostLoss])."""
        pred, true = self.scores(c_pred, c_true, A, b, A_eq, b_eq)
        best = pred.gather(1, true.argmin(1, keepdim=True))
        loss = torch.relu(best - pred).sum(-1) / max(pred.shape[1] - 1, 1)
        return loss.mean().to(c_pred.dtype)


class ListwiseLTR(_RankLoss):
    """Listwise learning to rank (Mandi et al., ICML 2022; PyEPO's lsLTR): the cross-entropy
    between the softmax of the pooled decisions' negated true objectives (clamped at 1e-8, as
    PyEPO) and the log-softmax of the negated predicted ones. Returns the batch mean."""

    def forward(
        self,
        c_pred: torch.Tensor,
        c_true: torch.Tensor,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
    ) -> torch.Tensor:
        """The loss, the mean over the batch (the arguments: [`CostLoss`][ilplayer.losses.CostLoss])."""
        pred, true = self.scores(c_pred, c_true, A, b, A_eq, b_eq)
        target = torch.softmax(-true, dim=1).clamp(min=1e-8)
        return -(torch.log_softmax(-pred, dim=1) * target).sum(-1).mean().to(c_pred.dtype)
