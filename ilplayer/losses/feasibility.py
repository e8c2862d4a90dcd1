"""Odece's feasibility-aware losses for predicted constraint parameters (Mandi, Defresne,
Berden & Guns, NeurIPS 2025): one that penalises predictions under which the decision is
infeasible in truth, one that penalises predictions that cut off the true optimum, and a weight
between them."""

from __future__ import annotations

from typing import Any

import torch

from ilplayer.core.records import has_solution
from ilplayer.core.transforms import untraced
from ilplayer.oracle import Oracle
from ilplayer.program import Program

__all__ = ["FeasibilityLoss", "feasibility_terms"]


class FeasibilityLoss(torch.nn.Module):
    """``alpha * IPL + (1 - alpha) * OPL`` for predicted rows ``A_pred`` and right-hand sides
    ``b_pred`` of ``A y <= b`` (Odece's infeasibility- and optimality-preserving losses).

    With the slack of a decision under the prediction, ``s(y) = A_pred y - b_pred`` (per row):

    - OPL keeps the true optimum ``y*`` feasible under the prediction, by a margin: the mean over
      the rows of ``softplus_beta(s(y*) + margin)``, averaged over the batch;
    - IPL makes the prediction cut off the decision Stage 1 takes under it, ``y_hat``, where that
      decision violates a true row: for each such row ``softplus_beta(margin - s(y_hat))``,
      averaged over those rows and over the instances whose ``y_hat`` is infeasible (0 when
      none is).

    The solver gives ``y_hat`` (and ``y*`` where not given); both terms are torch functions of
    the predictions, so their gradients are exact, on any device, for any program the backend
    solves (integer, mixed or continuous). ``alpha`` trades feasibility (1) against decision
    quality (0); Odece's authors report one value matching the baselines on both.

    Args:
        program: the [Program][ilplayer.Program] (box, integrality, sense, equality rows).
        solver: the backend of Stage 1 (and of the true optima where not given).
        alpha: the weight of IPL, in [0, 1].
        margin: the slack asked of both terms, in the rows' units (Odece's 2.0 is for its
            normalised rows: scale it to yours).
        beta: the softplus' sharpness (Odece's 5).
        **oracle_options: further [Oracle][ilplayer.Oracle] arguments (``executor``, ...).
    """

    def __init__(
        self,
        program: Program,
        solver: Any = "highs",
        alpha: float = 0.5,
        margin: float = 2.0,
        beta: float = 5.0,
        **oracle_options: Any,
    ) -> None:
        super().__init__()
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, (int, float))
            or not 0.0 <= alpha <= 1.0
        ):
            raise ValueError(f"alpha must be a number in [0, 1] (the weight of IPL), got {alpha!r}")
        for name, value, low in (("margin", margin, 0.0), ("beta", beta, 1e-12)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= low:
                raise ValueError(f"{name} must be a number >= {low:g}, got {value!r}")
        self.program, self.alpha, self.margin, self.beta = (
            program,
            float(alpha),
            float(margin),
            float(beta),
        )
        self.oracle = Oracle(program, solver=solver, **oracle_options)

    @untraced  # solves: not traced by torch.compile (ILPLayer.forward says why)
    def forward(
        self,
        A_pred: torch.Tensor | None = None,
        b_pred: torch.Tensor | None = None,
        c_pred: torch.Tensor | None = None,
        *,
        y_true: Any = None,
        c: Any = None,
        A: Any = None,
        b: Any = None,
    ) -> torch.Tensor:
        """The blended loss of the batch (a scalar on the predictions' device).

        Args:
            A_pred: (B, m, n) the predicted rows (None: the true ``A``).
            b_pred: (B, m) their predicted right-hand sides (None: the true ``b``).
            c_pred: (B, n) the costs Stage 1 optimises (None: the true ``c``).
            y_true: (B, n) the true optima, where known (else solved under the true parameters).
            c: the true costs (shared or per instance; omitted: the program's).
            A: the true rows (omitted with ``b``: the program's).
            b: their true right-hand sides.
        """
        ipl, opl = self.terms(A_pred, b_pred, c_pred, y_true=y_true, c=c, A=A, b=b)
        return self.alpha * ipl + (1.0 - self.alpha) * opl

    def terms(
        self,
        A_pred: torch.Tensor | None = None,
        b_pred: torch.Tensor | None = None,
        c_pred: torch.Tensor | None = None,
        *,
        y_true: Any = None,
        c: Any = None,
        A: Any = None,
        b: Any = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(IPL, OPL)``, each a scalar, with the arguments of ``forward``."""
        if A_pred is None and b_pred is None:
            raise ValueError(
                "A_pred and b_pred are both None: give the predicted rows or right-hand sides"
            )
        made = A_pred if A_pred is not None else b_pred
        assert made is not None
        device, dtype = made.device, made.dtype
        B = made.shape[0]
        c, A_true, b_true = self._true_parameters(c, c_pred, A, b, made)
        A_hat = A_true if A_pred is None else A_pred
        b_hat = b_true if b_pred is None else b_pred
        if A_hat.dim() != 3 or b_hat.shape != A_hat.shape[:2]:
            raise ValueError(
                f"A_pred and b_pred: expected (B, m, n) rows and (B, m) right-hand sides, got "
                f"{tuple(A_hat.shape)} and {tuple(b_hat.shape)}"
            )

        def batched(costs: Any) -> Any:
            costs = torch.as_tensor(costs).detach()
            return costs.expand(B, costs.shape[-1]) if costs.dim() == 1 else costs

        if y_true is None:
            y_true, status = self.oracle(batched(c), A_true.detach(), b_true.detach())
            if not bool(has_solution(status).all()):
                raise ValueError(
                    "y_true: an instance has no true optimum (give y_true, or drop the instance)"
                )
        y_hat, status = self.oracle(
            batched(c_pred if c_pred is not None else c), A_hat.detach(), b_hat.detach()
        )
        solved = has_solution(status).to(device)
        return feasibility_terms(
            A_hat,
            b_hat,
            torch.as_tensor(y_true).to(device, dtype),
            y_hat.to(device, dtype),
            A_true,
            b_true,
            self.margin,
            self.beta,
            solved,
        )

    def _true_parameters(
        self, c: Any, c_pred: Any, A: Any, b: Any, made: torch.Tensor
    ) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """The true costs (the program's where omitted) and rows, batched as ``made``."""
        program = self.program
        c = program.c if c is None else c
        if c is None and c_pred is None:
            raise ValueError(
                "c: the true costs are needed (the program has no objective of its own)"
            )
        if A is None and b is None:
            A, b = program.A, program.b
        if A is None or b is None:
            raise ValueError("A and b: the true rows are needed (the program has none)")
        B, device, dtype = made.shape[0], made.device, made.dtype
        A_true = torch.as_tensor(A).to(device, dtype)
        b_true = torch.as_tensor(b).to(device, dtype)
        return c, A_true.expand(B, *A_true.shape[-2:]), b_true.expand(B, b_true.shape[-1])

    def close(self) -> None:
        """Release Stage 1's backend and pool."""
        self.oracle.close()


def feasibility_terms(
    A_pred: torch.Tensor,
    b_pred: torch.Tensor,
    y_true: torch.Tensor,
    y_hat: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    margin: float,
    beta: float,
    solved: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(IPL, OPL)`` of [FeasibilityLoss][ilplayer.losses.FeasibilityLoss] from the decisions:
    predicted (B, m, n) rows and (B, m) right-hand sides, the true optima and Stage-1 decisions
    (B, n), the true rows and right-hand sides (batched), and which Stage-1 decisions exist
    (``solved``, (B,) bool; None: all). Pure torch, without branches on values: any device."""
    softplus = torch.nn.Softplus(beta=beta)
    opl = softplus(torch.einsum("bmn,bn->bm", A_pred, y_true) - b_pred + margin).mean()
    violated = torch.einsum("bmn,bn->bm", A, y_hat) - b > 1e-9 * (1 + b.abs())
    if solved is not None:
        violated = violated & solved[:, None]
    counts = violated.sum(-1)
    negative = (counts > 0).to(A_pred.dtype)
    slack_hat = torch.einsum("bmn,bn->bm", A_pred, y_hat) - b_pred
    rows = (softplus(margin - slack_hat) * violated).sum(-1) / counts.clamp(min=1)
    return (rows * negative).sum() / negative.sum().clamp(min=1), opl
