"""The post-hoc regret as a training loss for predicted constraint parameters, with a perturbed
(Monte-Carlo) gradient: Gaussian smoothing of Stage 1 and Stage 2 together."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ilplayer.core.bounds import as_bounds
from ilplayer.core.records import has_solution
from ilplayer.core.transforms import untraced
from ilplayer.metrics.two_stage import CHANGES, TwoStage
from ilplayer.oracle import Oracle
from ilplayer.program import Program

__all__ = ["PostHocRegretLoss"]

PREDICTED = ("A", "b", "c")
"""The parameters a prediction may stand for (Stage 1's rows, right-hand sides, costs)."""


class PostHocRegretLoss(torch.nn.Module):
    """The post-hoc regret of the decisions Stage 1 takes under predicted right-hand sides
    ``b_pred``, rows ``A_pred`` and costs ``c_pred`` (any of them), with a perturbed gradient
    for each.

    The loss is the regret smoothed by Gaussian noise on the predictions,
    ``E[R(b_pred + sigma * e)]``, estimated with ``samples`` antithetic pairs ``+-e``; its
    gradient is the smoothing's own, ``E[(R(b + sigma e) - R(b - sigma e)) e / sigma] / 2``
    (Stage 1 and Stage 2 are black boxes to it: any program the backend solves, integer or
    mixed, any parameter of the rows). Each pair costs two Stage-1 and two Stage-2 solves per
    instance. A Stage 1 without a decision stands on the box point nearest zero (Hu et al.'s
    choice); an instance without a true optimum or Stage-2 decision adds nothing.

    Args:
        program: the [Program][ilplayer.Program] (box, integrality, sense, and its rows where
            the call gives none).
        solver: the backend of both stages.
        changes: what Stage 2 may change, as in [post_hoc_regret][ilplayer.metrics.post_hoc_regret].
        sigma: the noise scale, in the predictions' units: a number, or a tensor that broadcasts
            against the predictions' entries (one scale per row of ``b_pred``, say), 0 where an
            entry is known and must not move (its gradient is then 0); or a dict of those by
            prediction (``{"A": 0.5, "c": 1.0}``), for predictions of different units.
        samples: antithetic pairs per instance and call.
        seed: the noise stream's seed.
        **oracle_options: further [Oracle][ilplayer.Oracle] arguments (``executor``, ...).
    """

    def __init__(
        self,
        program: Program,
        solver: Any = "highs",
        changes: str = "any",
        sigma: Any = 1.0,
        samples: int = 1,
        seed: int = 0,
        **oracle_options: Any,
    ) -> None:
        super().__init__()
        if changes not in CHANGES:
            raise ValueError(f"changes must be one of {CHANGES}, got {changes!r}")
        given = sigma if isinstance(sigma, dict) else dict.fromkeys(PREDICTED, sigma)
        if not given or set(given) - set(PREDICTED):
            raise ValueError(f"sigma's keys must be among {PREDICTED}, got {sorted(given)}")
        self.sigma = {
            name: _scale(value, f"sigma[{name!r}]" if isinstance(sigma, dict) else "sigma")
            for name, value in given.items()
        }
        if not (isinstance(samples, int) and samples >= 1):
            raise ValueError(
                f"samples must be a positive integer (antithetic pairs), got {samples!r}"
            )
        self.program, self.changes, self.samples = program, changes, samples
        self.stages = TwoStage(program, solver, **oracle_options)
        self.stage1 = Oracle(program, solver=solver, **oracle_options)
        self.generator = torch.Generator().manual_seed(seed)

    def _stage1(self, c: torch.Tensor, A: Any, b: Any, A_eq: Any, b_eq: Any) -> torch.Tensor:
        """Stage 1's decisions (float64); the box point nearest zero where it found none."""
        y1, status = self.stage1(c, A, b, A_eq, b_eq)
        y1 = y1.to("cpu", torch.float64)
        lost = ~has_solution(status).cpu()
        if lost.any():
            n = y1.shape[1]
            y1[lost] = torch.from_numpy(
                np.clip(
                    0.0, as_bounds(self.program.lb, n, "lb"), as_bounds(self.program.ub, n, "ub")
                )
            )
        return y1

    @untraced  # solves: not traced by torch.compile (ILPLayer.forward says why)
    def forward(
        self,
        b_pred: torch.Tensor | None = None,
        A_pred: torch.Tensor | None = None,
        c_pred: torch.Tensor | None = None,
        *,
        c: Any = None,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
        penalty: Any = 0.0,
        drop_penalty: Any = None,
        optimal: Any = None,
    ) -> torch.Tensor:
        """The mean smoothed post-hoc regret of the batch.

        Args:
            b_pred: (B, m) the predicted right-hand sides of Stage 1's rows (None: the true ``b``).
            A_pred: (B, m, n) the predicted rows (None: the true ``A``).
            c_pred: (B, n) the predicted costs Stage 1 optimises (None: the true ``c``).
            c: the true costs (shared or per instance; omitted: the program's).
            A: the true rows (omitted with ``b``: the program's).
            b: their true right-hand sides.
            A_eq: the true equality rows (omitted with ``b_eq``: the program's).
            b_eq: their right-hand sides.
            penalty: Stage 2's price of a unit added (and dropped, without ``drop_penalty``): a
                scalar, (n,) or (B, n).
            drop_penalty: its price of a unit dropped, where it differs.
            optimal: (B,) the true optima, where known (saves a solve per instance).
        """
        given = {"b": b_pred, "A": A_pred, "c": c_pred}
        predicted = self._checked_predictions(given)
        B, copies = predicted[0].shape[0], 2 * self.samples
        c, A, b, A_eq, b_eq = self._true_parameters(B, c, A, b, A_eq, b_eq)
        if optimal is None:
            optimal = self.stages.optimal_values(c, A, b, A_eq, b_eq)
        noises, rows = self._perturbed(given, {"A": A, "b": b, "c": c})

        # the copies' batch: the + and - draws of every pair, B instances each (shared rows stay)
        def stack(value: Any, ndim: int = 1) -> Any:
            if not isinstance(value, torch.Tensor) or value.dim() <= ndim:
                return value
            return value.repeat(copies, *([1] * (value.dim() - 1)))

        rows = {
            name: value if name in noises else stack(value, 2 if name == "A" else 1)
            for name, value in rows.items()
        }
        y1 = self._stage1(rows["c"], rows["A"], rows["b"], stack(A_eq, 2), stack(b_eq))
        scores = self.stages.score(
            y1,
            stack(c),
            stack(A, 2),
            stack(b),
            stack(A_eq, 2),
            stack(b_eq),
            penalty=stack(_per_instance(penalty, B, 1, scalar=True)),
            drop_penalty=stack(_per_instance(drop_penalty, B, 1, scalar=True)),
            changes=self.changes,
            optimal=stack(torch.as_tensor(optimal, dtype=torch.float64), 0),
        )
        regret = torch.nan_to_num(scores.regret, nan=0.0).reshape(2, self.samples, B)
        loss = regret.mean(dim=(0, 1)).mean()
        slope = (regret[0] - regret[1]) / 2  # (samples, B)
        loss = self._with_estimates(loss, given, noises, slope)
        return loss.to(predicted[0].device)

    def _checked_predictions(self, given: dict[str, Any]) -> list[torch.Tensor]:
        predicted = [value for value in given.values() if value is not None]
        if not predicted:
            raise ValueError(
                "b_pred, A_pred and c_pred are all None: give the predicted parameters the loss is for"
            )
        unscaled = [
            name for name, value in given.items() if value is not None and name not in self.sigma
        ]
        if unscaled:
            raise ValueError(f"sigma has no scale for the predicted {unscaled}: add it to the dict")
        return predicted

    def _true_parameters(
        self, B: int, c: Any, A: Any, b: Any, A_eq: Any, b_eq: Any
    ) -> tuple[Any, ...]:
        """The true parameters (the program's where omitted): vectors per instance, rows
        shared where they are (2-D), dense."""
        program = self.program
        c = program.c if c is None else c
        if A is None and b is None:
            A, b = program.A, program.b
        if A_eq is None and b_eq is None:
            A_eq, b_eq = program.A_eq, program.b_eq
        c, b, b_eq = (_per_instance(value, B, 1) for value in (c, b, b_eq))
        A, A_eq = (_per_instance(value, B, None) for value in (A, A_eq))
        return c, A, b, A_eq, b_eq

    def _perturbed(
        self, given: dict[str, Any], rows: dict[str, Any]
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """The noise drawn for each prediction and ``rows`` with the predictions' + and - draws
        in place of the true values they stand for."""
        noises = {}
        for name, made in given.items():
            if made is None:
                continue
            base, scale = made.detach().to("cpu", torch.float64), self.sigma[name]
            noise = torch.randn(
                (self.samples, *base.shape), generator=self.generator, dtype=torch.float64
            )
            noise = noise * (scale > 0)  # an entry of scale 0 stays where it is
            noises[name] = noise
            rows[name] = torch.cat([base + scale * noise, base - scale * noise]).flatten(0, 1)
        return noises, rows

    def _with_estimates(
        self,
        loss: torch.Tensor,
        given: dict[str, Any],
        noises: dict[str, torch.Tensor],
        slope: torch.Tensor,
    ) -> torch.Tensor:
        """``loss`` whose gradient reaches each prediction as the antithetic estimate from
        ``slope`` (samples, B); its value stays the loss's."""
        B = slope.shape[1]
        for name, drawn in noises.items():
            made = given[name]
            if made is None or not made.requires_grad:
                continue
            inverse = torch.where(self.sigma[name] > 0, 1.0 / self.sigma[name], 0.0)
            grad = (slope.reshape(*slope.shape, *([1] * (drawn.dim() - 2))) * drawn * inverse).mean(
                0
            ) / B
            grad = grad.to(made.device, made.dtype)
            loss = loss + (made * grad).sum() - (made.detach() * grad).sum()
        return loss

    def close(self) -> None:
        """Release both stages' backends and pools."""
        self.stage1.close()
        self.stages.close()


def _scale(value: Any, name: str) -> torch.Tensor:
    """A noise scale as a float64 host tensor: finite, non-negative, one entry positive."""
    scale = (
        torch.as_tensor(value, dtype=torch.float64).detach().cpu()
        if not isinstance(value, bool)
        else None
    )
    if (
        scale is None
        or not torch.isfinite(scale).all()
        or (scale < 0).any()
        or not (scale > 0).any()
    ):
        raise ValueError(
            f"{name} must be a positive number (or a tensor of non-negative scales, one positive), "
            f"got {value!r}"
        )
    return scale


def _per_instance(value: Any, B: int, ndim: int | None, scalar: bool = False) -> Any:
    """``value`` as a float64 host tensor, a shared one of ``ndim`` dims expanded to B instances
    (``ndim`` None: kept as given, shared or not); None stays None, and with ``scalar`` a number
    stays one."""
    if value is None or (scalar and np.ndim(value) == 0):
        return value
    tensor = torch.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value)
    tensor = tensor.detach().to("cpu", torch.float64)
    return tensor.expand(B, *tensor.shape) if ndim is not None and tensor.dim() == ndim else tensor
