"""What every gradient method shares: the interface the layer dispatches to, and what a method
is given to run with (the oracle's solves, the thread setting, the cost map).

A method is an object that holds its own options (``CombOptNet(tau=0.5)``,
``Perturbed(sigma=1.0, samples=8)``); `GradientMethod.apply` runs the forward solve(s)
through the layer and attaches the method's backward. The layer names them by string as a
shortcut (``method="blackbox"``).
"""

from __future__ import annotations

import contextlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from ilplayer.core.bounds import exact_dtype
from ilplayer.core.transforms import transformed
from ilplayer.core.validation import validate_problem
from ilplayer.errors import NoSignalWarning, warn_at_user_line

if TYPE_CHECKING:
    from ilplayer.core.batch import ProblemTensors
    from ilplayer.core.bounds import Bounds

__all__ = [
    "GradientMethod",
    "MethodRun",
    "is_number",
    "seeded_generator",
    "solve_exactly",
    "torch_threads",
]


@dataclass(frozen=True)
class MethodRun:
    """What a gradient method is given for one forward pass (by the layer that runs it).

    Attributes:
        solve: ``problem -> (y float64, status, objective)``: the oracle's solves (its backend,
            executor and, in training, its pool rule).
        threads: torch intra-op threads for a CPU backward (None: torch's setting).
        cost_map: the program's map (n, d) from cost entries to its variables, or None; a
            method's problems are built with it (`MethodRun.validate`) and
            then works in the cost entries' space: its ``c``, noise and decisions are (B, d).
        warned: the warnings already given (the all-zero gradient warns once per owner).
    """

    solve: Callable[[ProblemTensors], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    threads: int | None
    cost_map: torch.Tensor | None = None
    warned: set[str] = field(default_factory=set)
    records: list[Any] = field(default_factory=list)  # the last forward's record, for its context

    def validate(
        self,
        c: Any,
        A: Any,
        b: Any,
        lb: Bounds,
        ub: Bounds,
        A_eq: Any = None,
        b_eq: Any = None,
        integrality: Any = None,
        mapped: bool = True,
    ) -> ProblemTensors:
        """The forward's inputs checked into the problem ``solve`` takes, in the cost entries'
        space when the program has a ``cost_map`` (``mapped``): the one place a method's
        inputs are validated."""
        cost_map = self.cost_map if mapped else None
        return validate_problem(c, A, b, lb, ub, A_eq, b_eq, integrality, cost_map=cost_map)


class GradientMethod(ABC):
    """A gradient method of [`ILPLayer`][ilplayer.ILPLayer]: its forward solves and its backward."""

    name: ClassVar[str] = ""
    constraint_gradients: ClassVar[bool] = False
    """Whether it gives gradients for ``A`` and ``b`` (else for ``c`` only)."""
    no_signal_hint: ClassVar[str] = ""
    """What to try when a whole batch gets a zero gradient (the layer's NoSignalWarning)."""

    def apply(
        self,
        run: MethodRun,
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: Bounds,
        ub: Bounds,
        A_eq: torch.Tensor | None,
        b_eq: torch.Tensor | None,
        integrality: Any = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, status)`` of the minimisation, with this method's backward attached to ``y``."""
        needs = tuple(isinstance(x, torch.Tensor) and x.requires_grad for x in (c, A, b))
        return _MethodFunction.apply(c, A, b, lb, ub, run, self, needs, A_eq, b_eq, integrality)

    @abstractmethod
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
        """The forward solve(s) through ``run``: ``(y, status)``; what the backward needs goes on
        ``ctx``: attributes, ``save_for_backward``, and ``needs_input_grad`` to read (it stands
        in for torch's autograd context, handed over in ``setup_context`` so that torch.func's
        transforms work; the status is marked non-differentiable there)."""

    @abstractmethod
    def backward(self, ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """The gradients for ``c`` (and, for a method with ``constraint_gradients``, ``A`` and
        ``b``), in that order; those it leaves out are None."""

    def options(self) -> dict[str, Any]:
        """The method's settings by name (for the layer's repr)."""
        return {}


class _Record:
    """Stands in for torch's ``ctx`` while a method's forward runs: torch.func's transforms need
    a forward without ``ctx``, so what the method puts on it is kept here and handed to the real
    one in ``setup_context``."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.to_save: tuple[torch.Tensor, ...] = ()
        self.mapped = False  # made by a vmapped call (of the flattened batch)

    def save_for_backward(self, *tensors: torch.Tensor) -> None:
        self.to_save = tensors

    def mark_non_differentiable(self, *tensors: torch.Tensor) -> None:
        """Nothing to do: the status, the one output without a gradient, is marked by the function."""


class _MethodFunction(torch.autograd.Function):
    """The autograd function of every method: its forward and backward are the method's own;
    the arguments and the gradients' places are handled here once. It is written for
    torch.func too: ``grad``/``vjp`` run the method's torch backward, and ``vmap`` solves the
    mapped instances as one batch."""

    INPUTS = 11  # c, A, b, lb, ub, run, method, needs, A_eq, b_eq, integrality

    @staticmethod
    def forward(
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: Bounds,
        ub: Bounds,
        run: MethodRun,
        method: GradientMethod,
        needs: tuple[bool, ...],
        A_eq: torch.Tensor | None,
        b_eq: torch.Tensor | None,
        integrality: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        record = _Record(needs)
        y, status = method.forward(record, run, c, A, b, lb, ub, A_eq, b_eq, integrality)
        run.records[:] = [
            record
        ]  # for setup_context, called next (under torch.func, more than once)
        return y, status

    @staticmethod
    def setup_context(
        ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]
    ) -> None:
        run, method = inputs[5], inputs[6]
        record = run.records[-1]
        if record.mapped and transformed(output[0]):
            # A gradient transform over a vmapped call: what the forward kept is the flattened
            # batch's, not this level's per-call tensors.
            raise RuntimeError(
                "torch.func: a gradient through a vmapped ILPLayer (vmap(grad(f)), per-example "
                "gradients) is not supported; the layer's gradients are per instance already: "
                "call it on the batch (B, n) and each row of c.grad is its instance's gradient. "
                "grad, vjp and grad(vmap(f)) work, and vmap of the forward"
            )
        for name, value in vars(record).items():
            if name not in ("needs_input_grad", "to_save", "mapped"):
                setattr(ctx, name, value)
        ctx.method, ctx.run = method, run
        ctx.save_for_backward(*record.to_save)
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor, _dstatus: torch.Tensor | None) -> tuple[Any, ...]:
        with torch_threads(ctx.run.threads, dy.device):
            grads = tuple(ctx.method.backward(ctx, dy))
        _check_signal(ctx.run, ctx.method, dy, grads)
        return (*grads, *(None,) * (_MethodFunction.INPUTS - len(grads)))

    @staticmethod
    def vmap(
        info: Any,
        in_dims: tuple[int | None, ...],
        c: torch.Tensor,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: Bounds,
        ub: Bounds,
        run: MethodRun,
        method: GradientMethod,
        needs: tuple[bool, ...],
        A_eq: torch.Tensor | None,
        b_eq: torch.Tensor | None,
        integrality: Any,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]:
        return vmapped(
            info.batch_size, in_dims, c, A, b, lb, ub, run, method, needs, A_eq, b_eq, integrality
        )


def vmapped(
    size: int,
    in_dims: tuple[int | None, ...],
    c: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    lb: Bounds,
    ub: Bounds,
    run: MethodRun,
    method: GradientMethod,
    needs: tuple[bool, ...],
    A_eq: torch.Tensor | None,
    b_eq: torch.Tensor | None,
    integrality: Any,
) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]:
    """torch.func.vmap of a layer call: the ``size`` mapped calls, each of B instances (B = 1 for
    a call with one cost vector), become one batch of size·B instances, solved at once."""
    if any(dim is not None for dim in in_dims[3:5]):
        raise ValueError(
            "lb, ub: torch.func.vmap maps over c, A, b, A_eq and b_eq, not over the box"
        )
    c_dim = in_dims[0]
    costs = c.unsqueeze(0).expand(size, *c.shape) if c_dim is None else c.movedim(c_dim, 0)
    one = costs.dim() == 2  # each mapped call solves one instance
    batch = 1 if one else costs.shape[1]

    def flat(x: torch.Tensor | None, dim: int | None, shared: int) -> torch.Tensor | None:
        """A mapped input as (size·B, ...), or as it is where one copy serves every instance;
        ``shared``: its number of dims for one call's instances together (A: 2, b: 1)."""
        if x is None or (dim is None and x.dim() == shared):
            return x
        x = x.unsqueeze(0).expand(size, *x.shape) if dim is None else x.movedim(dim, 0)
        if x.dim() - 1 == shared:  # one row set per call
            if one:
                return x
            x = x.unsqueeze(1).expand(size, batch, *x.shape[1:])
        return x.reshape(size * batch, *x.shape[2:])

    c_flat = costs if one else costs.reshape(size * batch, costs.shape[-1])
    A_flat, b_flat = flat(A, in_dims[1], 2), flat(b, in_dims[2], 1)
    A_eq_flat, b_eq_flat = flat(A_eq, in_dims[8], 2), flat(b_eq, in_dims[9], 1)
    y, status = _MethodFunction.apply(
        c_flat, A_flat, b_flat, lb, ub, run, method, needs, A_eq_flat, b_eq_flat, integrality
    )
    run.records[-1].mapped = True
    if not one:
        y, status = y.reshape(size, batch, *y.shape[1:]), status.reshape(size, batch)
    return (y, status), (0, 0)


def _check_signal(
    run: MethodRun, method: GradientMethod, dy: torch.Tensor, grads: tuple[Any, ...]
) -> None:
    """Warn once when a backward pass gives the whole batch an all-zero gradient although the
    incoming gradient was not zero: the loss is learning nothing."""
    if "no-signal" in run.warned or dy.device.type == "meta" or transformed(dy):
        return
    given = [g for g in grads if g is not None]
    if not given or not bool(dy.any()) or any(bool(g.any()) for g in given):
        return
    run.warned.add("no-signal")
    warn_at_user_line(
        f"ILPLayer(method={method.name!r}): the backward pass gave the whole batch an all-zero "
        f"gradient although the loss's gradient was not zero. {method.no_signal_hint}.",
        NoSignalWarning,
    )


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


def solve_exactly(
    ctx: Any,
    run: MethodRun,
    c: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    lb: Bounds,
    ub: Bounds,
    A_eq: torch.Tensor | None,
    b_eq: torch.Tensor | None,
    integrality: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward of a cost-only method: the exact solve, with ``c``, ``y`` (float64) and the
    statuses saved on ``ctx`` (and the problem kept) for its backward."""
    problem = run.validate(c, A, b, lb, ub, A_eq, b_eq, integrality)
    ctx.problem = problem
    y64, status, _ = run.solve(problem)
    y = y64.to(exact_dtype(c.dtype, problem.lb, problem.ub))
    ctx.save_for_backward(c.detach(), y64, status)
    return y, status


def seeded_generator(
    generators: dict[str, torch.Generator], seed: int | None, device: torch.device
) -> torch.Generator | None:
    """A sampling method's noise stream on ``device``: seeded once per device (kept in
    ``generators``) when ``seed`` is given; None (torch's global stream) otherwise or on meta."""
    if seed is None or device.type == "meta":
        return None
    key = str(device)
    if key not in generators:
        generators[key] = torch.Generator(device=device).manual_seed(seed)
    return generators[key]
