"""Losses: between the layer's solutions and target solutions (learning constraints, paper
supplementary A, on solutions scaled by `normalize_solution`), and for learning costs,
which solve their own batches through a layer: `SPOPlus`, `FenchelYoung`,
`PerturbationGradient`, and over a pool of known decisions `NCE`,
`ContrastiveMAP`, `PointwiseLTR`, `PairwiseLTR`, `ListwiseLTR`.

Every cost loss solves through an [Oracle][ilplayer.Oracle] (or the oracle of a layer given
instead), and takes ``solve_ratio`` and ``pool`` ([decision_pool][ilplayer.decision_pool]): the
share of its calls that solve, the rest answered from the pool (or, for the pool losses, the
share that adds the predicted costs' solutions to the pool). Left out, the oracle's own rule
applies in training mode (the layer's mode when a layer was given, else the loss's own).
Without ``A`` and ``b`` a loss solves under the program's rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ilplayer.decision_pool import PoolRule, pool_rule
from ilplayer.gradients.frank_wolfe import FrankWolfe
from ilplayer.gradients.perturbed import NOISES, perturb, standard_noise

if TYPE_CHECKING:
    from ilplayer.layer import ILPLayer
    from ilplayer.oracle import Oracle

__all__ = ["LOSSES", "NCE", "CaVE", "ContrastiveMAP", "FenchelYoung", "ListwiseLTR", "PairwiseLTR",
           "PerturbationGradient", "PointwiseLTR", "RegularizedFenchelYoung", "SPOPlus", "binding_normals",
           "cone_projection", "normalize_solution"]


def normalize_solution(y: torch.Tensor, lb: float | torch.Tensor, ub: float | torch.Tensor) -> torch.Tensor:
    """Map the box to [-0.5, 0.5]^n (supplementary A, the loss's scale). A fixed variable
    (``lb == ub``) maps to -0.5."""
    if isinstance(lb, torch.Tensor) or isinstance(ub, torch.Tensor):
        width = torch.clamp(torch.as_tensor(ub) - torch.as_tensor(lb), min=1)
        return (y - lb) / width - 0.5
    return (y - lb) / (ub - lb) - 0.5


def _l0_loss(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The reference code's "L0" loss: the largest absolute error per instance, batch mean."""
    return (y - target).abs().amax(dim=-1).mean()


LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "mse": torch.nn.functional.mse_loss,
    "l1": torch.nn.functional.l1_loss,
    # Supplementary, "Random Constraints dense with various loss functions" (Huber, beta 0.3).
    "huber": lambda y, target: torch.nn.functional.smooth_l1_loss(y, target, beta=0.3),
    "l0": _l0_loss,
}
"""Losses between normalised solutions for learning constraints, by name (``TrainingConfig.loss``)."""


def _as_float64(value: Any) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        value = torch.as_tensor(value)
    return value.to(torch.float64)


class _CostLoss(torch.nn.Module):
    """A loss on predicted costs that solves through ``oracle`` (its backend, executor, sense),
    with its own ``solve_ratio`` / ``pool`` rule or else the oracle's (in training mode)."""

    def __init__(self, oracle: Oracle | ILPLayer, solve_ratio: float = 1.0, pool: Any = None,
                 seed: int | None = None) -> None:
        super().__init__()
        if isinstance(oracle, torch.nn.Module):  # a layer: its oracle, and its mode decides the pool's use
            self.layer: torch.nn.Module | None = oracle
            self.oracle = oracle.oracle
        else:
            self.layer, self.oracle = None, oracle
        self.pool_rule = pool_rule(solve_ratio, pool, seed)

    @property
    def sign(self) -> float:
        """-1 for a maximisation program: every loss works on the minimisation form."""
        return -1.0 if self.oracle.sense == "max" else 1.0

    def rule(self) -> PoolRule | None:
        if self.pool_rule is not None:
            return self.pool_rule
        training = self.layer.training if self.layer is not None else self.training
        return self.oracle.pool_rule if training else None

    def solve(self, c: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any, copies: int = 1) -> torch.Tensor:
        """Solutions (float64, on ``c``'s device) for costs ``c`` in the program's sense, a
        drawn share answered from the pool."""
        y, _ = self.oracle.solve_batch(c, A, b, A_eq, b_eq, copies=copies, pool=self.rule())
        return y.to(c.device)


class SPOPlus(_CostLoss):
    """The SPO+ loss (Elmachtoub & Grigas, "Smart 'Predict, then Optimize'", 2022) for
    predicted costs, solved with ``layer``'s backend and executor in its ``sense``.

    For minimisation, with ``w*(c) = argmin c·y``:
    ``SPO+(c_pred, c) = max_y (c - 2 c_pred)·y + 2 c_pred·w*(c) - c·w*(c)``, a convex upper
    bound of the regret whose gradient in ``c_pred`` is ``2 (w*(c) - w*(2 c_pred - c))``.
    Maximisation is the same loss on the negated costs. Returns the batch mean.

    Example:
        >>> layer = ILPLayer(0, 1, solver="highs")                       # doctest: +SKIP
        >>> loss = SPOPlus(layer)(c_pred, c_true, A, b)                   # doctest: +SKIP
    """

    def forward(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any = None, b: Any = None,
                y_true: torch.Tensor | None = None, A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        sign = self.sign
        c_true = _as_float64(c_true).to(c_pred.device)
        if y_true is None:
            y_true, status = self.oracle.solve_batch(c_true, A, b, A_eq, b_eq)
            if not bool((status == 0).all()):
                raise ValueError("SPOPlus: some true-cost instances have no optimal solution "
                                 f"(statuses {sorted(set(status.tolist()))}); pass y_true")
        y_true = _as_float64(y_true).to(c_pred.device)
        pred, true = sign * c_pred.to(torch.float64), sign * c_true  # minimisation form
        y_hat = self.solve(sign * (2 * pred - true), A, b, A_eq, b_eq)  # argmin (2ĉ - c)·y
        loss = ((true - 2 * pred) * y_hat).sum(-1) + 2 * (pred * y_true).sum(-1) - (true * y_true).sum(-1)
        return loss.mean().to(c_pred.dtype)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


class FenchelYoung(_CostLoss):
    """The perturbed Fenchel-Young loss (Berthet et al., NeurIPS 2020) between predicted costs
    and observed solutions, with ``samples`` perturbations of scale ``sigma`` solved as one
    batch through ``layer``'s backend and executor, in its ``sense``.

    For minimisation, with ``noise="additive"``: ``FY(c_pred, y) = c_pred·y - E[min_y'
    (c_pred + sigma Z)·y']`` (>= 0 in expectation), whose gradient in ``c_pred`` is ``y -
    E[argmin (c_pred + sigma Z)·y']``. With ``noise="multiplicative"`` (Dalle et al. 2022,
    PyEPO's PFYMul) the costs are ``c_pred * F``, ``F = exp(sigma Z - sigma^2 / 2)`` (signs
    kept), and the gradient ``y - E[F * argmin (c_pred * F)·y']``. Maximisation is the same
    loss on the negated costs. Returns the batch mean.
    """

    def __init__(self, oracle: Oracle | ILPLayer, sigma: float = 1.0, samples: int = 8,
                 seed: int | None = None, noise: str = "additive", solve_ratio: float = 1.0,
                 pool: Any = None) -> None:
        super().__init__(oracle, solve_ratio, pool, seed)
        self.sigma, self.samples = _positive("sigma", sigma), _positive_int("samples", samples)
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
        self.noise = noise
        self.generator = None if seed is None else torch.Generator().manual_seed(seed)

    def forward(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        sign = self.sign
        pred = sign * c_pred.to(torch.float64)  # minimisation form
        y_true = _as_float64(y_true).to(c_pred.device)
        noise = standard_noise(self.samples, tuple(pred.shape), self.generator).to(c_pred.device)
        perturbed = perturb(pred.detach(), noise, self.sigma, self.noise).reshape(-1, pred.shape[-1])
        y_samples = self.solve(sign * perturbed, A, b, A_eq, b_eq, copies=self.samples)
        y_samples = y_samples.reshape(self.samples, *pred.shape)
        inner = (perturb(pred, noise, self.sigma, self.noise) * y_samples).sum(-1).mean(0)  # E[min]
        loss = (pred * y_true).sum(-1) - inner
        return loss.mean().to(c_pred.dtype)


class PerturbationGradient(_CostLoss):
    """The perturbation gradient loss (Gupta & Huang, "Decision-focused learning with
    directional gradients", 2024; PyEPO's PG): a finite difference of the optimal value along
    the true costs, ``(c_pred·w(c_pred) - (c_pred - sigma c)·w(c_pred - sigma c)) / sigma``
    (``two_sides``: ``((c_pred + sigma c)·w(c_pred + sigma c) - (c_pred - sigma c)·w(c_pred -
    sigma c)) / (2 sigma)``), ``w`` the minimiser; both solves go as one batch. Its gradient in
    ``c_pred`` is the difference of the two decisions over ``sigma``. Maximisation: the same on
    the negated costs. Returns the batch mean.
    """

    def __init__(self, oracle: Oracle | ILPLayer, sigma: float = 0.1, two_sides: bool = False,
                 solve_ratio: float = 1.0, pool: Any = None, seed: int | None = None) -> None:
        super().__init__(oracle, solve_ratio, pool, seed)
        self.sigma = _positive("sigma", sigma)
        if not isinstance(two_sides, bool):
            raise ValueError(f"two_sides must be True or False, got {two_sides!r}")
        self.two_sides = two_sides

    def forward(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        sign, sigma = self.sign, self.sigma
        pred, true = sign * c_pred.to(torch.float64), sign * _as_float64(c_true).to(c_pred.device)
        high = pred + sigma * true if self.two_sides else pred
        low = pred - sigma * true
        both = torch.cat([high.detach(), low.detach()])
        y = self.solve(sign * both, A, b, A_eq, b_eq, copies=2)
        y_high, y_low = y[:len(pred)], y[len(pred):]
        width = 2 * sigma if self.two_sides else sigma
        loss = ((high * y_high).sum(-1) - (low * y_low).sum(-1)) / width
        return loss.mean().to(c_pred.dtype)


class _PoolLoss(_CostLoss):
    """A loss over the whole pool of known decisions (``pool`` required: e.g. the training
    set's optimal solutions); ``solve_ratio`` is the share of calls whose predicted costs are
    solved and added to the pool (PyEPO's default 1)."""

    def __init__(self, oracle: Oracle | ILPLayer, solve_ratio: float = 1.0, pool: Any = None,
                 seed: int | None = None) -> None:
        if pool is None:
            raise ValueError(f"pool: {type(self).__name__} compares against a pool of known decisions; give "
                             "pool= (e.g. the training set's optimal solutions, (k, n))")
        super().__init__(oracle, 1.0, pool if isinstance(pool, PoolRule) else PoolRule(solve_ratio, pool, seed))

    def decisions(self, c_pred: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any) -> torch.Tensor:
        """The pool (k, n) after this call's draw, float64 on ``c_pred``'s device."""
        assert self.pool_rule is not None
        return self.oracle.refresh_pool(self.pool_rule, c_pred, A, b, A_eq, b_eq).to(c_pred.device)


class _ContrastiveLoss(_PoolLoss):
    def margins(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any, b: Any, A_eq: Any,
                b_eq: Any) -> torch.Tensor:
        """``c_pred·y_true - c_pred·w`` (B, k) for every pooled ``w``, minimisation form."""
        pool = self.decisions(c_pred, A, b, A_eq, b_eq)
        pred = self.sign * c_pred.to(torch.float64)
        return (pred * _as_float64(y_true).to(c_pred.device)).sum(-1, keepdim=True) - pred @ pool.T


class NCE(_ContrastiveLoss):
    """Noise-contrastive estimation over the pool (Mulamba et al., IJCAI 2021; PyEPO's NCE): the
    mean over pooled decisions ``w`` of ``c_pred·y_true - c_pred·w`` (minimisation form: the
    observed decision should cost less than every pooled one). Returns the batch mean."""

    def forward(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        return self.margins(c_pred, y_true, A, b, A_eq, b_eq).mean(-1).mean().to(c_pred.dtype)


class ContrastiveMAP(_ContrastiveLoss):
    """Contrastive MAP (Mulamba et al., IJCAI 2021; PyEPO's CMAP): ``c_pred·y_true - min_w
    c_pred·w`` over the pool (minimisation form), NCE's hardest negative alone. Returns the
    batch mean."""

    def forward(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        return self.margins(c_pred, y_true, A, b, A_eq, b_eq).amax(-1).mean().to(c_pred.dtype)


class _RankLoss(_PoolLoss):
    def scores(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any, b: Any, A_eq: Any,
               b_eq: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The pooled decisions' objectives (B, k) under the predicted and the true costs,
        minimisation form."""
        pool = self.decisions(c_pred, A, b, A_eq, b_eq)
        pred = self.sign * c_pred.to(torch.float64)
        true = self.sign * _as_float64(c_true).to(c_pred.device)
        return pred @ pool.T, true @ pool.T


class PointwiseLTR(_RankLoss):
    """Pointwise learning to rank (Mandi et al., ICML 2022; PyEPO's ptLTR): the squared error
    between every pooled decision's predicted and true objective, mean over the pool. Returns
    the batch mean."""

    def forward(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        pred, true = self.scores(c_pred, c_true, A, b, A_eq, b_eq)
        return (pred - true).square().mean(-1).mean().to(c_pred.dtype)


class PairwiseLTR(_RankLoss):
    """Pairwise learning to rank (Mandi et al., ICML 2022; PyEPO's prLTR): a hinge between the
    pooled decision that is best under the true costs and each other one, ``relu(pred_best -
    pred_w)`` summed over the pool and divided by ``k - 1`` (minimisation form). Returns the
    batch mean."""

    def forward(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        pred, true = self.scores(c_pred, c_true, A, b, A_eq, b_eq)
        best = pred.gather(1, true.argmin(1, keepdim=True))
        loss = torch.relu(best - pred).sum(-1) / max(pred.shape[1] - 1, 1)
        return loss.mean().to(c_pred.dtype)


class ListwiseLTR(_RankLoss):
    """Listwise learning to rank (Mandi et al., ICML 2022; PyEPO's lsLTR): the cross-entropy
    between the softmax of the pooled decisions' negated true objectives (clamped at 1e-8, as
    PyEPO) and the log-softmax of the negated predicted ones. Returns the batch mean."""

    def forward(self, c_pred: torch.Tensor, c_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        pred, true = self.scores(c_pred, c_true, A, b, A_eq, b_eq)
        target = torch.softmax(-true, dim=1).clamp(min=1e-8)
        return -(torch.log_softmax(-pred, dim=1) * target).sum(-1).mean().to(c_pred.dtype)


class RegularizedFenchelYoung(_CostLoss):
    """The Fenchel-Young loss of the L2 regulariser ``lambd/2 |y|^2`` (Dalle et al. 2022;
    PyEPO's RFY): ``Omega(y) - Omega(mu) + c_pred·(y - mu)`` (minimisation form), ``mu`` the
    regularised optimum ``argmin_{mu in conv(Y)} c_pred·mu + Omega(mu)`` found by away-step
    Frank-Wolfe with the layer's solver as its oracle (`ilplayer.gradients.frank_wolfe`,
    to a gap of ``tol`` or ``max_iter`` steps). Its gradient is ``y - mu``. Returns the batch
    mean. With ``solve_ratio`` < 1 the oracle's drawn share of steps answer from the pool."""

    def __init__(self, oracle: Oracle | ILPLayer, lambd: float = 1.0, max_iter: int = 10_000, tol: float = 1e-6,
                 solve_ratio: float = 1.0, pool: Any = None, seed: int | None = None) -> None:
        super().__init__(oracle, solve_ratio, pool, seed)
        self.lambd = _positive("lambd", lambd)
        self.projection = FrankWolfe(lambd=self.lambd, max_iter=max_iter, tol=tol)  # checks both

    def forward(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        problem = self.oracle.min_problem(c_pred, A, b, A_eq, b_eq)
        pred = self.sign * c_pred.to(torch.float64)
        mu, _, _, ok = self.projection.project(self.oracle.solves(self.rule()), problem, pred.detach())
        if not bool(ok.all()):
            raise ValueError(f"RegularizedFenchelYoung: the solver found no solution for instances "
                             f"{torch.nonzero(~ok).flatten().tolist()}")
        y = _as_float64(y_true).to(c_pred.device)
        omega = lambda v: 0.5 * self.lambd * (v * v).sum(-1)
        loss = omega(y) - omega(mu) + (pred * (y - mu)).sum(-1)
        return loss.mean().to(c_pred.dtype)


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
    from ilplayer.matrices import dense

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
        raise ImportError("CaVE(max_iter=...) projects with Clarabel's interior-point method: "
                          "pip install clarabel (or leave max_iter=None for the exact projection)") from exc
    import scipy.sparse as sparse

    m = normals.shape[0]
    settings = clarabel.DefaultSettings()
    settings.max_iter, settings.verbose, settings.max_threads = int(max_iter), False, 1
    settings.presolve_enable, settings.equilibrate_enable = False, False
    P = sparse.triu(sparse.csc_matrix(2.0 * normals @ normals.T)).tocsc()
    solution = clarabel.DefaultSolver(P, -2.0 * normals @ v, (-sparse.eye(m, format="csc")).tocsc(), np.zeros(m),
                                      [clarabel.NonnegativeConeT(m)], settings).solve()
    return np.asarray(solution.x) @ normals


class CaVE(_CostLoss):
    """Cone-aligned vector estimation (Tang & Khalil, CPAIOR 2024; PyEPO's CaVE): ``1 -
    cos(-c_pred, p)``, ``p`` the projection of ``-c_pred`` (minimisation form) onto the cone
    of the normals of the constraints binding at ``y_true`` (its optimality cone). ilplayer
    finds the binding rows itself from ``A, b, A_eq`` and the box (PyEPO reads them off a
    Gurobi model). ``max_iter=None``: the exact projection (scipy); ``max_iter=3``: PyEPO's
    default, CaVE+ (Clarabel stopped after 3 interior-point steps; needs ``clarabel``). No
    solver runs. Returns the batch mean."""

    def __init__(self, oracle: Oracle | ILPLayer, max_iter: int | None = None, tol: float = 1e-6) -> None:
        super().__init__(oracle)
        if self.oracle.cost_map is not None:
            raise ValueError("CaVE: the layer has a cost_map, and CaVE reads the constraints binding at y_true in "
                             "the program's own variables; use a layer without cost_map, with the costs "
                             "c @ cost_map.T and the decisions in the program's variables")
        self.max_iter = None if max_iter is None else _positive_int("max_iter", max_iter)
        self.tol = float(tol)

    def forward(self, c_pred: torch.Tensor, y_true: torch.Tensor, A: Any = None, b: Any = None,
                A_eq: Any = None, b_eq: Any = None) -> torch.Tensor:
        problem = self.oracle.min_problem(c_pred, A, b, A_eq, b_eq)
        signed = -self.sign * c_pred.to(torch.float64)
        targets = signed.detach().cpu().numpy()
        normals = binding_normals(_as_float64(y_true), problem, self.tol)
        projected = np.stack([cone_projection(v, n, self.max_iter) for v, n in zip(targets, normals)])
        target = torch.from_numpy(projected).to(signed.device)
        loss = 1 - torch.nn.functional.cosine_similarity(signed, target, dim=1)
        return loss.mean().to(c_pred.dtype)
