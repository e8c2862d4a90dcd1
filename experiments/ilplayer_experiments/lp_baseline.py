"""The paper's CVXPY baseline: the same architectures with the ILP replaced by its LP
relaxation, differentiated by cvxpylayers (Agrawal et al., 2019); ``ilplayer-experiments[baselines]``.

The LP ``min c·x s.t. A x <= b, lb <= x <= ub`` is solved per instance by SCS through diffcp.
Its solution is fractional: Random Constraints and set cover round it to the nearest integer
point (as the reference code does), knapsack rounds it greedily to a selection that respects
the learned weights (supplementary, "Knapsack from Sentence Description"). An LP the solver
cannot handle (an empty learned region, a numerical failure) gives the box centre and is
counted in ``failed_fraction``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.loop import fit_epochs
from ilplayer.learning.settings import HiddenConstraintsData
from ilplayer.losses import normalize_solution
from ilplayer.metrics import exact_match

__all__ = ["LPRelaxation", "greedy_knapsack_round", "train_lp_knapsack", "train_lp_static"]


class LPRelaxation(torch.nn.Module):
    """``x(c, A, b) = argmin c·x s.t. A x <= b, lb <= x <= ub`` with cvxpylayers gradients.

    ``c`` is (B, n); ``A``, ``b`` are (m, n), (m,) shared by the batch or (B, m, n), (B, m).
    Returns ``(x, failed)``: the LP solutions (B, n) and a boolean mask of instances whose LP
    failed (their ``x`` is the box centre, with no gradient).
    """

    def __init__(self, num_variables: int, num_constraints: int, lb: float, ub: float) -> None:
        super().__init__()
        try:
            import cvxpy as cp
            from cvxpylayers.torch import CvxpyLayer
        except ImportError as exc:
            raise ImportError(
                "the LP baseline needs cvxpylayers: pip install 'ilplayer-experiments[baselines]'"
            ) from exc
        c = cp.Parameter(num_variables)
        A = cp.Parameter((num_constraints, num_variables))
        b = cp.Parameter(num_constraints)
        x = cp.Variable(num_variables)
        problem = cp.Problem(cp.Minimize(c @ x), [A @ x <= b, x >= lb, x <= ub])
        self.lb, self.ub = float(lb), float(ub)
        self.layer = CvxpyLayer(problem, parameters=[A, b, c], variables=[x])

    def forward(
        self, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        batch = len(c)
        if A.dim() == 2:
            A, b = A.expand(batch, *A.shape), b.expand(batch, *b.shape)
        try:
            (x,) = self.layer(A, b, c)
            failed = ~torch.isfinite(x).all(dim=-1)
        except Exception:
            x, failed = self._one_by_one(c, A, b)
        if failed.any():
            x = torch.where(
                failed[:, None], torch.full_like(x, (self.lb + self.ub) / 2).detach(), x
            )
        return x, failed

    def _one_by_one(
        self, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows, failed = [], []
        for i in range(len(c)):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    (x,) = self.layer(A[i : i + 1], b[i : i + 1], c[i : i + 1])
                ok = bool(torch.isfinite(x).all())
            except Exception:
                x, ok = torch.zeros_like(c[i : i + 1]), False
            rows.append(x)
            failed.append(not ok)
        return torch.cat(rows), torch.tensor(failed)


def greedy_knapsack_round(
    x: torch.Tensor, weights: torch.Tensor, capacity: torch.Tensor
) -> torch.Tensor:
    """Take items by decreasing LP value until the next one would exceed ``capacity``.

    ``x`` and ``weights`` are (B, n), ``capacity`` is (B,). Vectorised: after sorting, the
    taken items are the longest prefix whose cumulative weight fits.
    """
    order = x.argsort(dim=-1, descending=True, stable=True)
    cumulative = weights.gather(-1, order).cumsum(dim=-1)
    fits = (cumulative <= capacity[:, None] + 1e-9).to(torch.int64).cumprod(dim=-1)
    return torch.zeros_like(x).scatter(-1, order, fits.to(x.dtype))


def train_lp_static(
    data: HiddenConstraintsData,
    *,
    epochs: int = 100,
    lr: float = 5e-4,
    batch_size: int = 8,
    origin: str = "learnable",
    seed: int = 0,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[StaticConstraints, list[dict[str, float]]]:
    """Learn the constraints through the LP relaxation (MSE between normalised solutions, the
    same initialisation and batches as `train_static_constraints`); the accuracy is that
    of the rounded LP solution."""
    m, n = data.A.shape
    init_seed = derive_seed(seed, 1)
    model = StaticConstraints(
        m, n, data.lb, data.ub, origin=origin, seed=init_seed, dtype=torch.float64
    )
    lp = LPRelaxation(n, m, data.lb, data.ub)
    y_true = normalize_solution(data.y_train, data.lb, data.ub)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        x, failed = lp(data.c_train[rows], *model())
        loss = torch.nn.functional.mse_loss(normalize_solution(x, data.lb, data.ub), y_true[rows])
        return loss, {"failed": int(failed.sum())}

    def evaluate() -> dict[str, float]:
        x_test, _ = _solve_in_chunks(lp, data.c_test, *model())
        return {"accuracy": exact_match(torch.round(x_test), data.y_test)}

    history = fit_epochs(
        len(data.c_train),
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        batch_loss=batch_loss,
        evaluate=evaluate,
        on_epoch=on_epoch,
    )
    return model, history


def _solve_in_chunks(
    lp: LPRelaxation, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, chunk: int = 250
) -> tuple[torch.Tensor, torch.Tensor]:
    parts = [
        lp(
            c[i : i + chunk],
            A if A.dim() == 2 else A[i : i + chunk],
            b if b.dim() == 1 else b[i : i + chunk],
        )
        for i in range(0, len(c), chunk)
    ]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def train_lp_knapsack(
    train: Any,
    test: Any,
    embed_train: torch.Tensor,
    embed_test: torch.Tensor,
    *,
    epochs: int = 100,
    lr: float = 5e-4,
    batch_size: int = 8,
    seed: int = 0,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    """The knapsack network of `KnapsackNet` trained
    through the LP relaxation; evaluated after greedy rounding with the learned weights."""
    from ilplayer_experiments.knapsack import KnapsackNet, capacity

    torch.manual_seed(derive_seed(seed, 1))
    model = KnapsackNet(embed_train.shape[-1], capacity=capacity(train.y.shape[1])).double()
    embed_train, embed_test = embed_train.double(), embed_test.double()
    lp = LPRelaxation(embed_train.shape[1], 1, 0, 1)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        x, failed = lp(*model(embed_train[rows]))
        return torch.nn.functional.mse_loss(x - 0.5, train.y[rows].to(x.dtype) - 0.5), {
            "failed": int(failed.sum())
        }

    def evaluate() -> dict[str, float]:
        c, A, b = model(embed_test)
        x_test, _ = _solve_in_chunks(lp, c, A, b)
        y_test = greedy_knapsack_round(x_test, A[:, 0, :], b[:, 0])
        return {"accuracy": exact_match(y_test, test.y.to(y_test.dtype))}

    history = fit_epochs(
        len(train.y),
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        batch_loss=batch_loss,
        evaluate=evaluate,
        on_epoch=on_epoch,
    )
    return model, history
