"""The losses on predicted costs that solve their own batches through an oracle: `SPOPlus`,
`FenchelYoung`, `PerturbationGradient`, `RegularizedFenchelYoung`; and `CostLoss`, their base
(the solves, the sense, the pool rule)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ilplayer.core.decision_pool import PoolRule, pool_rule
from ilplayer.core.tensors import check_finite, input_tensor
from ilplayer.core.transforms import transformed, untraced
from ilplayer.gradients.frank_wolfe import FrankWolfe
from ilplayer.gradients.perturbation import Perturbation

if TYPE_CHECKING:
    from ilplayer.layer import ILPLayer
    from ilplayer.oracle import Oracle

__all__ = [
    "CostLoss",
    "FenchelYoung",
    "PerturbationGradient",
    "RegularizedFenchelYoung",
    "SPOPlus",
    "positive",
    "positive_int",
]


class CostLoss(torch.nn.Module):
    """A loss on predicted costs that solves through ``oracle`` (its backend, executor, sense),
    with its own ``solve_ratio`` / ``pool`` rule or else the oracle's (in training mode).

    A loss is called ``loss(c_pred, c_true or y_true, A=None, b=None, A_eq=None, b_eq=None)``:
    ``c_pred`` the predicted costs (batch, n) in the program's sense (the gradient reaches
    them); ``c_true`` the true costs or ``y_true`` the observed optimal decisions, of
    ``c_pred``'s shape (decisions may be integers; SPO+ takes ``c_true`` and, optionally,
    ``y_true``, solved from ``c_true`` when None); ``A``, ``b`` (``(m, n)`` or ``(batch, m, n)``,
    ``(m,)`` or ``(batch, m)``) and ``A_eq``, ``b_eq`` the rows for this call, None for the
    program's. It returns the mean over the batch."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Each loss's forward solves: torch.compile is told not to trace it (see ILPLayer.forward).
        super().__init_subclass__(**kwargs)
        if "forward" in vars(cls):
            cls.forward = untraced(cls.forward)

    def __init__(
        self,
        oracle: Oracle | ILPLayer,
        solve_ratio: float = 1.0,
        pool: Any = None,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if isinstance(
            oracle, torch.nn.Module
        ):  # a layer: its oracle, and its mode decides the pool's use
            self.layer: torch.nn.Module | None = oracle
            self.oracle = oracle.oracle
        else:
            self.layer, self.oracle = None, oracle
        self.pool_rule = pool_rule(solve_ratio, pool, seed)

    @property
    def sign(self) -> float:
        """-1 for a maximisation program: every loss works on the minimisation form."""
        return self.oracle.program.sign

    def rule(self) -> PoolRule | None:
        if self.pool_rule is not None:
            return self.pool_rule
        training = self.layer.training if self.layer is not None else self.training
        return self.oracle.pool_rule if training else None

    def checked(self, c_pred: Any, **targets: Any) -> list[torch.Tensor]:
        """``c_pred`` checked (a floating tensor (batch, n), finite) and each target (``c_true``,
        ``y_true``: a tensor or array of ``c_pred``'s shape, finite) as float64 on ``c_pred``'s
        device; the checks `ilplayer.solve` makes, each error naming the loss and the argument."""
        what = type(self).__name__
        try:
            if not isinstance(c_pred, torch.Tensor):
                raise TypeError(
                    f"c_pred must be a torch.Tensor (the model's predicted costs), got "
                    f"{type(c_pred).__name__}"
                )
            input_tensor(c_pred, "c_pred")  # floating point
            if c_pred.dim() != 2:
                raise ValueError(f"c_pred must have shape (batch, n), got {tuple(c_pred.shape)}")
            check_finite(c_pred.detach(), "c_pred")
            checked = []
            for name, value in targets.items():
                if isinstance(
                    value, (np.ndarray, list, tuple)
                ):  # 0/1 decisions may come as integers
                    try:
                        value = np.asarray(value, dtype=np.float64)
                    except (TypeError, ValueError):
                        raise TypeError(
                            f"{name} must be numeric, got a {type(value).__name__} that is not"
                        ) from None
                elif isinstance(value, torch.Tensor) and not (
                    value.is_floating_point() or value.is_sparse
                ):
                    value = value.double()
                tensor = input_tensor(value, name)
                if tuple(tensor.shape) != tuple(c_pred.shape):
                    raise ValueError(
                        f"{name} must have c_pred's shape {tuple(c_pred.shape)} (one row per "
                        f"instance), got {tuple(tensor.shape)}"
                    )
                check_finite(tensor, name)
                if name == "y_true":
                    self._check_decisions(tensor)
                checked.append(tensor.to(device=c_pred.device, dtype=torch.float64))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{what}: {exc}") from None
        return checked

    def _check_decisions(self, y: torch.Tensor) -> None:
        """``y_true`` is made of the program's decisions: inside its box and integral where its
        variables are (within 1e-6). Not checkable through a cost map, on the meta device, or
        inside a torch.func transform (its tensors hold no values to read)."""
        program = self.oracle.program
        if program.cost_map is not None or y.device.type == "meta" or y.is_sparse:
            return
        host = y.detach().to("cpu", torch.float64)
        if transformed(host):  # under torch.func even a copy of a plain tensor is wrapped
            return
        values = host.numpy()
        lb, ub, integer = self._box_rows(values.shape[-1])
        tol = 1e-6
        outside = (values < lb - tol) | (values > ub + tol)
        fractional = integer & (np.abs(values - np.rint(values)) > tol)
        for bad, what in (
            (outside, "inside the program's box [lb, ub]"),
            (fractional, "integral where the program's variables are integer"),
        ):
            if bad.any():
                i, j = (int(k) for k in np.argwhere(bad)[0])
                raise ValueError(
                    f"y_true must be the program's decisions, {what}: row {i}, variable {j} is "
                    f"{values[i, j]:g} ({int(bad.sum())} such entries)"
                )

    def _box_rows(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The program's ``lb``, ``ub`` and integer mask as rows of ``n``, once per program."""
        program, kept = self.oracle.program, self.__dict__.get("_box")
        if kept is None or kept[0] is not program or kept[1] != n:
            as_row = lambda bound: np.broadcast_to(
                np.asarray(bound.cpu() if isinstance(bound, torch.Tensor) else bound, float), (n,)
            )
            integer = program.integrality
            integer = np.ones(n, bool) if integer is None else as_row(integer) != 0
            rows = (as_row(program.lb), as_row(program.ub), integer)
            kept = self.__dict__["_box"] = (program, n, rows)
        return kept[2]

    def solve(
        self, c: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any, copies: int = 1
    ) -> torch.Tensor:
        """Solutions (float64, on ``c``'s device) for costs ``c`` in the program's sense, a
        drawn share answered from the pool."""
        y, _ = self.oracle.solve_batch(c, A, b, A_eq, b_eq, copies=copies, pool=self.rule())
        return y.to(c.device)


class SPOPlus(CostLoss):
    """The SPO+ loss (Elmachtoub & Grigas, "Smart 'Predict, then Optimize'", 2022) for
    predicted costs, solved with ``oracle``'s backend and executor in its program's ``sense``.

    For minimisation, with ``w*(c) = argmin c·y``:
    ``SPO+(c_pred, c) = max_y (c - 2 c_pred)·y + 2 c_pred·w*(c) - c·w*(c)``, a convex upper
    bound of the regret whose gradient in ``c_pred`` is ``2 (w*(c) - w*(2 c_pred - c))``.
    Maximisation is the same loss on the negated costs. Returns the batch mean.

    Example:
        >>> oracle = Oracle(Program(A=A, b=b, lb=0, ub=1), solver="highs")  # doctest: +SKIP
        >>> loss = SPOPlus(oracle)(c_pred, c_true)                          # doctest: +SKIP
    """

    def forward(
        self,
        c_pred: torch.Tensor,
        c_true: torch.Tensor,
        A: Any = None,
        b: Any = None,
        y_true: torch.Tensor | None = None,
        A_eq: Any = None,
        b_eq: Any = None,
    ) -> torch.Tensor:
        """The loss, the mean over the batch (the arguments: [`CostLoss`][ilplayer.losses.CostLoss])."""
        sign = self.sign
        if y_true is None:
            (c_true,) = self.checked(c_pred, c_true=c_true)
            y_true, status = self.oracle.solve_batch(c_true, A, b, A_eq, b_eq)
            if not bool((status == 0).all()):
                raise ValueError(
                    "SPOPlus: some true-cost instances have no optimal solution "
                    f"(statuses {sorted(set(status.tolist()))}); pass y_true"
                )
            y_true = y_true.to(device=c_pred.device, dtype=torch.float64)
        else:
            c_true, y_true = self.checked(c_pred, c_true=c_true, y_true=y_true)
        pred, true = sign * c_pred.to(torch.float64), sign * c_true  # minimisation form
        y_hat = self.solve(sign * (2 * pred - true), A, b, A_eq, b_eq)  # argmin (2ĉ - c)·y
        loss = (
            ((true - 2 * pred) * y_hat).sum(-1)
            + 2 * (pred * y_true).sum(-1)
            - (true * y_true).sum(-1)
        )
        return loss.mean().to(c_pred.dtype)


def positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


class FenchelYoung(CostLoss):
    """The perturbed Fenchel-Young loss (Berthet et al., NeurIPS 2020) between predicted costs
    and observed solutions, with ``samples`` perturbations of scale ``sigma`` solved as one
    batch through ``oracle``'s backend and executor, in its program's ``sense``.

    For minimisation, with ``noise="additive"``: ``FY(c_pred, y) = c_pred·y - E[min_y'
    (c_pred + sigma Z)·y']`` (>= 0 in expectation), whose gradient in ``c_pred`` is ``y -
    E[argmin (c_pred + sigma Z)·y']``. With ``noise="multiplicative"`` (Dalle et al. 2022,
    PyEPO's PFYMul) the costs are ``c_pred * F``, ``F = exp(sigma Z - sigma^2 / 2)`` (signs
    kept), and the gradient ``y - E[F * argmin (c_pred * F)·y']``. Maximisation is the same
    loss on the negated costs. Returns the batch mean.

    The noise is a [`Perturbation`][ilplayer.gradients.Perturbation]: give one as
    ``perturbation`` (a `Perturbed` or `IMLE` method object is one too, and then shares its
    stream), or its ``sigma`` (default 1), ``samples`` (8) and ``noise`` ("additive") here;
    ``seed`` seeds the noise of the latter and the pool's draws.

    Example:
        >>> loss = FenchelYoung(oracle, perturbation=Perturbation(sigma=0.5, samples=4, seed=0))  # doctest: +SKIP
    """

    def __init__(
        self,
        oracle: Oracle | ILPLayer,
        sigma: float | None = None,
        samples: int | None = None,
        seed: int | None = None,
        noise: str | None = None,
        solve_ratio: float = 1.0,
        pool: Any = None,
        *,
        perturbation: Perturbation | None = None,
    ) -> None:
        super().__init__(oracle, solve_ratio, pool, seed)
        given: dict[str, Any] = {"sigma": sigma, "samples": samples, "noise": noise}
        if perturbation is None:
            perturbation = Perturbation(
                **{key: value for key, value in given.items() if value is not None}, seed=seed
            )
        elif not isinstance(perturbation, Perturbation):
            raise TypeError(
                f"perturbation must be an ilplayer.gradients.Perturbation (or a Perturbed or IMLE "
                f"method), got {type(perturbation).__name__}"
            )
        else:
            for key, value in given.items():
                if value is not None:
                    raise ValueError(
                        f"{key}: set it on the perturbation (Perturbation({key}=...)), not beside it"
                    )
        self.perturbation = perturbation
        """The noise the loss draws (its stream shared with a method object given as ``perturbation``)."""

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
        sign, perturbation = self.sign, self.perturbation
        pred = sign * c_pred.to(torch.float64)  # minimisation form
        noise = perturbation.draw(tuple(pred.shape), c_pred.device)
        perturbed = perturbation.perturb(pred.detach(), noise).reshape(-1, pred.shape[-1])
        y_samples = self.solve(sign * perturbed, A, b, A_eq, b_eq, copies=perturbation.samples)
        y_samples = y_samples.reshape(perturbation.samples, *pred.shape)
        inner = (perturbation.perturb(pred, noise) * y_samples).sum(-1).mean(0)  # E[min]
        loss = (pred * y_true).sum(-1) - inner
        return loss.mean().to(c_pred.dtype)


class PerturbationGradient(CostLoss):
    """The perturbation gradient loss (Gupta & Huang, "Decision-focused learning with
    directional gradients", 2024; PyEPO's PG): a finite difference of the optimal value along
    the true costs, ``(c_pred·w(c_pred) - (c_pred - sigma c)·w(c_pred - sigma c)) / sigma``
    (``two_sides``: ``((c_pred + sigma c)·w(c_pred + sigma c) - (c_pred - sigma c)·w(c_pred -
    sigma c)) / (2 sigma)``), ``w`` the minimiser; both solves go as one batch. Its gradient in
    ``c_pred`` is the difference of the two decisions over ``sigma``. Maximisation: the same on
    the negated costs. Returns the batch mean.
    """

    def __init__(
        self,
        oracle: Oracle | ILPLayer,
        sigma: float = 0.1,
        two_sides: bool = False,
        solve_ratio: float = 1.0,
        pool: Any = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(oracle, solve_ratio, pool, seed)
        self.sigma = positive("sigma", sigma)
        if not isinstance(two_sides, bool):
            raise ValueError(f"two_sides must be True or False, got {two_sides!r}")
        self.two_sides = two_sides

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
        (c_true,) = self.checked(c_pred, c_true=c_true)
        sign, sigma = self.sign, self.sigma
        pred, true = sign * c_pred.to(torch.float64), sign * c_true
        high = pred + sigma * true if self.two_sides else pred
        low = pred - sigma * true
        both = torch.cat([high.detach(), low.detach()])
        y = self.solve(sign * both, A, b, A_eq, b_eq, copies=2)
        y_high, y_low = y[: len(pred)], y[len(pred) :]
        width = 2 * sigma if self.two_sides else sigma
        loss = ((high * y_high).sum(-1) - (low * y_low).sum(-1)) / width
        return loss.mean().to(c_pred.dtype)


class RegularizedFenchelYoung(CostLoss):
    """The Fenchel-Young loss of the L2 regulariser ``lambd/2 |y|^2`` (Dalle et al. 2022;
    PyEPO's RFY): ``Omega(y) - Omega(mu) + c_pred·(y - mu)`` (minimisation form), ``mu`` the
    regularised optimum ``argmin_{mu in conv(Y)} c_pred·mu + Omega(mu)`` found by away-step
    Frank-Wolfe with the oracle's solver as its linear minimiser (`ilplayer.gradients.frank_wolfe`,
    to a gap of ``tol`` or ``max_iter`` steps). Its gradient is ``y - mu``. Returns the batch
    mean. With ``solve_ratio`` < 1 the oracle's drawn share of steps answer from the pool."""

    def __init__(
        self,
        oracle: Oracle | ILPLayer,
        lambd: float = 1.0,
        max_iter: int = 10_000,
        tol: float = 1e-6,
        solve_ratio: float = 1.0,
        pool: Any = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(oracle, solve_ratio, pool, seed)
        self.lambd = positive("lambd", lambd)
        self.projection = FrankWolfe(lambd=self.lambd, max_iter=max_iter, tol=tol)  # checks both

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
        (y,) = self.checked(c_pred, y_true=y_true)
        problem = self.oracle.min_problem(c_pred, A, b, A_eq, b_eq)
        pred = self.sign * c_pred.to(torch.float64)
        mu, _, _, ok = self.projection.project(
            self.oracle.solves(self.rule()), problem, pred.detach()
        )
        if not bool(ok.all()):
            raise ValueError(
                f"RegularizedFenchelYoung: the solver found no solution for instances "
                f"{torch.nonzero(~ok).flatten().tolist()}"
            )
        omega = lambda v: 0.5 * self.lambd * (v * v).sum(-1)
        loss = omega(y) - omega(mu) + (pred * (y - mu)).sum(-1)
        return loss.mean().to(c_pred.dtype)
