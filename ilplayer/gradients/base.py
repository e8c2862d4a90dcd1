"""What every gradient method shares: the interface the layer dispatches to, and what a method
is given to run with (the oracle's solves, the thread setting, the cost map).

A method is an object that holds its own options (``CombOptNet(tau=0.5)``,
``Perturbed(sigma=1.0, samples=8)``); `GradientMethod.apply` runs the forward solve(s)
through the layer and attaches the method's backward. The layer names them by string as a
shortcut (``gradient="blackbox"``).
"""

from __future__ import annotations

import contextlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.bounds import exact_dtype
from ilplayer.errors import NoSignalWarning, warn_at_user_line
from ilplayer.problem import validate_problem
from ilplayer.types import Status

if TYPE_CHECKING:
    from ilplayer.bounds import Bounds
    from ilplayer.problem import ProblemTensors

__all__ = ["GradientMethod", "MethodRun", "has_solution", "is_number", "seeded_generator", "solve_exactly",
           "torch_threads"]


@dataclass(frozen=True)
class MethodRun:
    """What a gradient method is given for one forward pass (by the layer that runs it).

    Attributes:
        solve: ``problem -> (y float64, status, objective)``: the oracle's solves (its backend,
            executor and, in training, its pool rule).
        threads: torch intra-op threads for a CPU backward (None: torch's setting).
        cost_map: the program's map (n, d) from cost entries to its variables, or None; a
            method builds its problems with it (``validate_problem(..., cost_map=...)``) and
            then works in the cost entries' space: its ``c``, noise and decisions are (B, d).
        warned: the warnings already given (the all-zero gradient warns once per owner).
    """

    solve: Callable[[ProblemTensors], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    threads: int | None
    cost_map: torch.Tensor | None = None
    warned: set[str] = field(default_factory=set)


class GradientMethod(ABC):
    """A gradient method of [`ILPLayer`][ilplayer.ILPLayer]: its forward solves and its backward."""

    name: ClassVar[str] = ""
    constraint_gradients: ClassVar[bool] = False
    """Whether it gives gradients for ``A`` and ``b`` (else for ``c`` only)."""
    no_signal_hint: ClassVar[str] = ""
    """What to try when a whole batch gets a zero gradient (the layer's NoSignalWarning)."""

    def apply(self, run: MethodRun, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds,
              ub: Bounds, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None,
              integrality: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, status)`` of the minimisation, with this method's backward attached to ``y``."""
        return _MethodFunction.apply(c, A, b, lb, ub, run, self, A_eq, b_eq, integrality)

    @abstractmethod
    def forward(self, ctx: Any, run: MethodRun, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds,
                ub: Bounds, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None,
                integrality: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward solve(s) through ``run``: ``(y, status)``; what the backward needs goes on
        ``ctx`` (torch's autograd context: ``save_for_backward``, ``needs_input_grad``, ...)."""

    @abstractmethod
    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """The gradients for ``c`` (and, for a method with ``constraint_gradients``, ``A`` and
        ``b``), in that order; those it leaves out are None."""

    def options(self) -> dict[str, Any]:
        """The method's settings by name (for the layer's repr)."""
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A method saved while its step was named ``lam`` (before PyEPO's ``lambd``) loads.
        self.__dict__.update({"lambd" if key == "lam" else key: value for key, value in state.items()})


class _MethodFunction(torch.autograd.Function):
    """The autograd function of every method: its forward and backward are the method's own;
    the arguments and the gradients' places are handled here once."""

    INPUTS = 10  # c, A, b, lb, ub, run, method, A_eq, b_eq, integrality

    @staticmethod
    def forward(ctx: Any, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds, ub: Bounds,
                run: MethodRun, method: GradientMethod, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None,
                integrality: Any) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.method, ctx.run = method, run
        return method.forward(ctx, run, c, A, b, lb, ub, A_eq, b_eq, integrality)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor, _dstatus: torch.Tensor | None) -> tuple[Any, ...]:
        with torch_threads(ctx.run.threads, dy.device):
            grads = tuple(ctx.method.backward(ctx, dy))
        _check_signal(ctx.run, ctx.method, dy, grads)
        return (*grads, *(None,) * (_MethodFunction.INPUTS - len(grads)))


def _check_signal(run: MethodRun, method: GradientMethod, dy: torch.Tensor, grads: tuple[Any, ...]) -> None:
    """Warn once when a backward pass gives the whole batch an all-zero gradient although the
    incoming gradient was not zero: the loss is learning nothing."""
    if "no-signal" in run.warned or dy.device.type == "meta":
        return
    given = [g for g in grads if g is not None]
    if not given or not bool(dy.any()) or any(bool(g.any()) for g in given):
        return
    run.warned.add("no-signal")
    warn_at_user_line(f"ILPLayer(gradient={method.name!r}): the backward pass gave the whole batch an all-zero "
                      f"gradient although the loss's gradient was not zero. {method.no_signal_hint}.",
                      NoSignalWarning)


def has_solution(status: torch.Tensor) -> torch.Tensor:
    """Rows whose ``y`` is a feasible point (optimal, the incumbent at a time limit, or a
    pooled decision)."""
    return (status == int(Status.OPTIMAL)) | (status == int(Status.TIME_LIMIT)) | (status == int(Status.POOLED))


@contextlib.contextmanager
def torch_threads(count: int | None, device: torch.device) -> Iterator[None]:
    """torch's intra-op threads set to ``count`` for a CPU backward, then restored.

    The backward's tensors are small (B x n x m): one thread is fastest, and torch's default
    (every core) competes with the solver workers and any neighbour process for the same
    cores, many times slower beside one busy process (``ilplayer bench backward``,
    docs/records/defaults.md, "Threads and processes").
    """
    previous = torch.get_num_threads()
    if count is None or device.type != "cpu" or count == previous:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def is_number(value: Any) -> bool:
    """A finite real number, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def solve_exactly(ctx: Any, run: MethodRun, c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds,
                  ub: Bounds, A_eq: torch.Tensor | None, b_eq: torch.Tensor | None, integrality: Any = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward of a cost-only method: the exact solve, with ``c``, ``y`` (float64) and the
    statuses saved on ``ctx`` (and the problem kept) for its backward."""
    problem = validate_problem(c, A, b, lb, ub, A_eq, b_eq, integrality, cost_map=run.cost_map)
    ctx.problem = problem
    y64, status, _ = run.solve(problem)
    y = y64.to(exact_dtype(c.dtype, problem.lb, problem.ub))
    ctx.save_for_backward(c.detach(), y64, status)
    ctx.mark_non_differentiable(status)
    return y, status


def seeded_generator(generators: dict[str, torch.Generator], seed: int | None,
                     device: torch.device) -> torch.Generator | None:
    """A sampling method's noise stream on ``device``: seeded once per device (kept in
    ``generators``) when ``seed`` is given; None (torch's global stream) otherwise or on meta."""
    if seed is None or device.type == "meta":
        return None
    key = str(device)
    if key not in generators:
        generators[key] = torch.Generator(device=device).manual_seed(seed)
    return generators[key]
