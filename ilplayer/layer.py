"""The public entry points: [solve][ilplayer.solve] (no autograd) and
[ILPLayer][ilplayer.ILPLayer] (an oracle and a gradient method as a torch module)."""

from __future__ import annotations

import dataclasses
from typing import Any, overload

import numpy as np
import torch

from ilplayer.core.bounds import Bounds, exact_dtype
from ilplayer.core.transforms import untraced
from ilplayer.core.validation import validate_problem
from ilplayer.errors import NoGradientWarning, warn_at_user_line
from ilplayer.gradients import METHODS, CombOptNet, GradientMethod, MethodRun
from ilplayer.keywords import layer_parts
from ilplayer.oracle import Oracle
from ilplayer.parallel.backend import Backend
from ilplayer.parallel.backend_cache import cached_backend
from ilplayer.parallel.dispatch import solve_problem
from ilplayer.parallel.executors import ExecutorLike
from ilplayer.program import check_sense
from ilplayer.solvers.contract import Solver

__all__ = ["ILPLayer", "solve"]


def solve(
    c: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    lb: Bounds = 0,
    ub: Bounds = 1,
    solver: str | Solver = "bruteforce",
    solver_options: dict[str, Any] | None = None,
    executor: ExecutorLike = None,
    workers: int | None = None,
    mp_context: str | None = None,
    sense: str = "min",
    A_eq: Any = None,
    b_eq: Any = None,
    integrality: Any = None,
    cost_map: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Solve ``min c_i·y s.t. A y <= b, lb <= y <= ub, y_j integer where integrality_j`` for
    every row of ``c``.

    Args:
        c: costs (B, n), a floating torch tensor or numpy array.
        A: constraints (m, n), shared by the batch, or (B, m, n); dense, scipy.sparse or torch
            sparse. ``m = 0`` (or ``A = b = None``) is a box-only problem.
        b: right-hand sides (m,) or (B, m).
        lb: lower bounds, a scalar or one per variable; ``-inf`` for none (integers on the
            integer variables).
        ub: upper bounds, likewise; ``inf`` for none.
        solver: a registered backend name or a `Solver` instance.
        solver_options: keyword options for the backend (when given by name).
        executor: ``"auto"`` (default: threads when the backend releases the GIL), ``"serial"``,
            ``"threads"``, ``"processes"``, ``"ray"``, or any ``concurrent.futures.Executor``.
            A backend and pool named by strings are kept for the next call from this thread
            (`ilplayer.parallel.backend_cache`; [`release_solvers`][ilplayer.release_solvers] closes them).
        workers: parallel workers (default: the cores available).
        mp_context: start method for ``"processes"`` (default ``"forkserver"`` on Linux).
        sense: ``"min"`` or ``"max"``.
        A_eq: equality constraints ``A_eq y = b_eq``, (m_eq, n) shared or (B, m_eq, n); passed
            to the backends natively.
        b_eq: their right-hand sides, (m_eq,) or (B, m_eq).
        integrality: 1 (integer) or 0 (continuous) per variable, shape (n,) or (B, n), as in
            ``scipy.optimize.milp``; None (default) is all integer, all zeros the LP relaxation.
            Continuous variables and infinite bounds need a mixed-integer backend (highs,
            gurobi, scip, pyomo); the others refuse them.
        cost_map: (n, d), when the costs are not per variable (PyEPO's TSP: one cost per edge,
            two arc variables and a flow per edge): ``c`` is then (B, d), the program's costs
            are ``c @ cost_map.T`` and ``y`` is returned as ``y @ cost_map`` (B, d).

    Returns:
        ``(y, status)``: ``y`` (B, n) on ``c``'s device, detached, in ``c``'s dtype when that
        dtype holds every integer of the box exactly, else float32 or float64 (float16 holds
        integers up to 2048, bfloat16 up to 256); ``status`` (B,) int8 [`Status`][ilplayer.Status] codes.
        NumPy arrays when ``c`` is one. Rows without a solution (infeasible, unbounded, failed)
        hold the box centre (rounded down) as a placeholder.

    Example:
        >>> c = torch.tensor([[-1.0, -2.0]]); A = torch.tensor([[1.0, 1.0]]); b = torch.tensor([1.0])
        >>> y, status = solve(c, A, b, lb=0, ub=1)
        >>> y.tolist(), Status.names(status)
        ([[0.0, 1.0]], ['optimal'])
    """
    sense = check_sense(sense)
    problem = validate_problem(c, A, b, lb, ub, A_eq, b_eq, integrality, cost_map=cost_map)
    if sense == "max":
        problem = dataclasses.replace(problem, c=-problem.c)
    if isinstance(solver, str) and (executor is None or isinstance(executor, str)):
        with cached_backend(solver, solver_options, executor, workers, mp_context) as kept:
            y, status, _ = solve_problem(problem, kept)
    else:
        backend = Backend.build(solver, solver_options, executor, workers, mp_context)
        try:
            y, status, _ = solve_problem(problem, backend)
        finally:
            backend.close()
    y = y.to(exact_dtype(problem.c.dtype, problem.lb, problem.ub))
    if isinstance(c, np.ndarray):  # numpy in, numpy out
        return y.cpu().numpy(), status.cpu().numpy()
    return y, status


class ILPLayer(torch.nn.Module):
    """An integer linear program as a layer: ``y = argmin c·y s.t. A y <= b, lb <= y <= ub``
    (``argmax`` for a program with ``sense="max"``), solved by an
    [Oracle][ilplayer.Oracle] on the forward pass, differentiated by a gradient method on the
    backward pass.

    Two ways to make one. Composed, from an oracle and a method object:

        program = ilplayer.Program(lb=0, ub=1)
        layer = ilplayer.ILPLayer(ilplayer.Oracle(program, solver="highs"), CombOptNet(tau=0.5))

    or with keywords, which build the same three objects (``lb``, ``ub`` positional as well):

        layer = ilplayer.ILPLayer(lb=0, ub=1, solver="highs", tau=0.5)

    The keywords: the program's (``lb``, ``ub``, ``sense``, ``integrality``, ``cost_map``; see
    [Program][ilplayer.Program]), the oracle's (``solver`` — default ``"bruteforce"`` here —,
    ``solver_options``, ``executor``, ``workers``, ``mp_context``, ``pool``, ``solve_ratio``;
    see [Oracle][ilplayer.Oracle]), and the method's: ``method`` (an object or a name of
    [METHODS][ilplayer.gradients.METHODS], default ``"combopt"``) with its options — ``tau``,
    ``basis``, ``project_to_box``, ``feasibility_tol`` (CombOptNet), ``lambd`` (blackbox,
    frank-wolfe, imle: PyEPO's name; ``blackbox_lambda`` still means blackbox's), ``sigma``,
    ``samples``, ``seed`` (perturbed, imle, aimle), ``noise`` (perturbed). A keyword of another
    method than the chosen one is refused.

    The backend's native models and the worker pool are not state: ``copy.deepcopy``,
    ``pickle`` and ``torch.save`` copy the settings, and the copy builds its own backend and
    pool on its first forward pass. The layer is a context manager;
    [close][ilplayer.ILPLayer.close] releases what its oracle built.

    Args:
        *args: ``(oracle, method)``: the [Oracle][ilplayer.Oracle] that solves the forward pass
            and the gradient method, an object of [ilplayer.gradients][ilplayer.gradients]
            (``CombOptNet(tau=0.5)``, ``Perturbed(sigma=1.0, samples=8)``, ...) or its name
            (default ``"combopt"``); or, in the keyword form, ``(lb, ub)``.
        backward_threads: torch intra-op threads for the backward on CPU (default 1: its
            tensors are small, and more threads compete with the solver workers for the
            cores); None leaves torch's setting alone.
        **options: ``method=`` (the gradient method as above, in either form:
            ``ILPLayer(0, 1, method="blackbox")``; ``gradient=`` is its old name), ``oracle=``,
            and, without an oracle, the keyword shortcut (above).

    Attributes:
        oracle: the oracle (its ``program``, backend and pools).
        method: the gradient method object (``gradient`` is its name).
        last_status: int8 tensor of [Status][ilplayer.Status] codes from the last forward pass.
        last_objective: float64 ``c·y`` per instance of the last forward pass.

    Example:
        >>> layer = ILPLayer(lb=0, ub=1, solver="bruteforce", tau=0.5)
        >>> constraints = StaticConstraints(num_constraints=2, num_variables=8, lb=0, ub=1)
        >>> y = layer(torch.randn(4, 8), *constraints())
        >>> y.shape, layer.last_status.shape
        (torch.Size([4, 8]), torch.Size([4]))
    """

    @overload
    def __init__(
        self,
        oracle: Oracle,
        method: GradientMethod | str | None = None,
        *,
        backward_threads: int | None = 1,
    ) -> None: ...

    @overload
    def __init__(
        self,
        lb: Bounds | None = None,
        ub: Bounds | None = None,
        *,
        backward_threads: int | None = 1,
        **options: Any,
    ) -> None: ...

    def __init__(self, *args: Any, backward_threads: int | None = 1, **options: Any) -> None:
        super().__init__()
        if backward_threads is not None and (
            isinstance(backward_threads, bool)
            or not isinstance(backward_threads, int)
            or backward_threads < 1
        ):
            raise ValueError(
                f"backward_threads must be a positive integer or None, got {backward_threads!r}"
            )
        oracle, self.method = layer_parts(args, options)
        if oracle.cost_map is not None and isinstance(self.method, CombOptNet):
            raise ValueError(
                "cost_map: method='combopt' works in the program's own variables (its targets and "
                "constraint gradients live there); give it the costs c @ cost_map.T and read "
                "y @ cost_map yourself, or use a cost method (method='blackbox', 'identity', "
                "'perturbed', ... or the losses)"
            )
        self.oracle = oracle
        self.gradient = self.method.name
        self.backward_threads = backward_threads
        self._warned: set[str] = (
            set()
        )  # the warnings given once (an input's lost gradient, no signal)
        self.last_status: torch.Tensor | None = None
        self.last_objective: torch.Tensor | None = None

    @property
    def sense(self) -> str:
        """The program's sense, ``"min"`` or ``"max"``."""
        return self.oracle.sense

    def __enter__(self) -> ILPLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # torch.compile: the solve leaves Python and NumPy; dynamo is told not to trace it (one graph
    # break at the layer, the model's own layers compiled), rather than fail to, line by line.
    @untraced
    def forward(
        self,
        c: torch.Tensor,
        A: torch.Tensor | None = None,
        b: torch.Tensor | None = None,
        A_eq: torch.Tensor | None = None,
        b_eq: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Solve the batch; ``c`` (B, n), ``A`` (m, n) or (B, m, n), ``b`` (m,) or (B, m); without
        ``A`` and ``b``, the program's rows (or none: a box-only problem).

        NumPy inputs are turned into tensors (the output is a tensor); a scipy.sparse ``A`` (or
        a torch sparse one without grad) stays sparse up to the backend, a torch sparse ``A``
        that requires grad is densified differentiably. ``A_eq`` (m_eq, n) or (B, m_eq, n) and
        ``b_eq`` add equalities ``A_eq y = b_eq``, passed to the backend natively; they take
        part in CombOptNet's feasibility tests and get no gradient.
        """
        oracle, program = self.oracle, self.oracle.program
        c, A, b, A_eq, b_eq = oracle.rows(c, A, b, A_eq, b_eq)
        if torch.is_grad_enabled():
            self._warn_lost_gradients(A=A, b=b, A_eq=A_eq, b_eq=b_eq)
        cost = program.minimised(c) if isinstance(c, torch.Tensor) else c  # solved as min
        run = MethodRun(
            solve=oracle.solves(oracle.pool_rule if self.training else None),
            threads=self.backward_threads,
            cost_map=oracle.cost_map,
            warned=self._warned,
        )
        y, status = self.method.apply(
            run, cost, A, b, program.lb, program.ub, A_eq, b_eq, program.integrality
        )
        self.last_status = status
        self.last_objective = (c.detach().to(torch.float64) * y.detach().to(torch.float64)).sum(-1)
        return y

    def _warn_lost_gradients(self, **inputs: Any) -> None:
        """Warn once per argument when an input that requires grad gets no gradient: A and b
        under a cost-only method, A_eq and b_eq under any."""
        for name, value in inputs.items():
            if name in self._warned or not getattr(value, "requires_grad", False):
                continue
            if name in ("A", "b") and self.method.constraint_gradients:
                continue
            self._warned.add(name)
            givers = " or ".join(
                f"method={n!r}" for n, m in METHODS.items() if m.constraint_gradients
            )
            which = (
                f"only {givers} gives one (the other methods learn costs only)"
                if name in ("A", "b")
                else "no method gives one: equality constraints take part in the solve and in "
                "CombOptNet's feasibility tests, not in the gradient; learn them as pairs "
                "of inequality rows in A, b with method='combopt'"
            )
            warn_at_user_line(
                f"ILPLayer(method={self.gradient!r}): {name} requires grad but gets "
                f"no gradient from this layer; {which}.",
                NoGradientWarning,
            )

    def close(self) -> None:
        """Stop the oracle's worker pool and release the backend's native models (for what it
        created itself). Safe to call twice; a later forward pass builds them again."""
        self.oracle.close()

    def extra_repr(self) -> str:
        method = ", ".join(f"{name}={value!r}" for name, value in self.method.options().items())
        return f"{self.oracle!r}, method={self.gradient!r}" + (f", {method}" if method else "")
