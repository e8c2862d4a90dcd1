"""The public entry points: :func:`solve` (no autograd) and :class:`ILPLayer` (CombOptNet)."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ilplayer.backend_cache import cached_backend
from ilplayer.decision_pool import PoolRule, pool_rule
from ilplayer.dispatch import solve_problem
from ilplayer.errors import NoGradientWarning, NoSignalWarning, warn_at_user_line
from ilplayer.executors import Backend, BatchExecutor, ExecutorLike, make_executor
from ilplayer.gradients import GRADIENTS, METHODS, CombOptNet, GradientMethod, LayerSolves
from ilplayer.problem import Bounds, ProblemTensors, check_box, check_cost_map, exact_dtype, validate_problem
from ilplayer.solver import Solver

__all__ = ["ILPLayer", "NoGradientWarning", "NoSignalWarning", "solve"]


def _check_sense(sense: Any) -> str:
    if not isinstance(sense, str) or sense.lower() not in ("min", "max"):
        raise ValueError(f"sense must be 'min' or 'max', got {sense!r}")
    return sense.lower()


def solve(c: torch.Tensor, A: torch.Tensor, b: torch.Tensor, lb: Bounds = 0, ub: Bounds = 1,
          solver: str | Solver = "bruteforce", solver_options: dict[str, Any] | None = None,
          executor: ExecutorLike = None, workers: int | None = None,
          mp_context: str | None = None, sense: str = "min", A_eq: Any = None,
          b_eq: Any = None, integrality: Any = None, cost_map: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
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
        solver: a registered backend name or a :class:`Solver` instance.
        solver_options: keyword options for the backend (when given by name).
        executor: ``"auto"`` (default: threads when the backend releases the GIL), ``"serial"``,
            ``"threads"``, ``"processes"``, ``"ray"``, or any ``concurrent.futures.Executor``.
            A backend and pool named by strings are kept for the next call from this thread
            (:mod:`ilplayer.backend_cache`; :func:`release_solvers` closes them).
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
        integers up to 2048, bfloat16 up to 256); ``status`` (B,) int8 :class:`Status` codes.
        NumPy arrays when ``c`` is one. Rows without a solution (infeasible, unbounded, failed)
        hold the box centre (rounded down) as a placeholder.

    Example:
        >>> c = torch.tensor([[-1.0, -2.0]]); A = torch.tensor([[1.0, 1.0]]); b = torch.tensor([1.0])
        >>> y, status = solve(c, A, b, lb=0, ub=1)
        >>> y.tolist(), Status.names(status)
        ([[0.0, 1.0]], ['optimal'])
    """
    sense = _check_sense(sense)
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


def _as_layer_input(value: Any) -> Any:
    """Tensors for the autograd function: numpy arrays become tensors; a torch sparse tensor that
    requires grad is densified with ``to_dense`` (differentiable). A scipy.sparse matrix, or a
    torch sparse one without grad, stays sparse (:func:`validate_problem` keeps it as a host CSR
    matrix). Anything else is left for :func:`validate_problem` to refuse with a clear message."""
    if isinstance(value, torch.Tensor) and value.layout != torch.strided and value.requires_grad:
        return value.to_dense()
    if isinstance(value, np.ndarray) and value.dtype != object:
        return torch.from_numpy(value)
    return value


def _layer_inputs(c: Any, A: Any, b: Any, A_eq: Any, b_eq: Any) -> tuple[Any, ...]:
    """The layer's inputs as tensors; ``A = b = None`` becomes 0 rows."""
    c, A, b, A_eq, b_eq = (_as_layer_input(x) for x in (c, A, b, A_eq, b_eq))
    if A is None and b is None:
        A = torch.zeros((0, c.shape[-1]), dtype=c.dtype, device=c.device)
        b = torch.zeros((0,), dtype=c.dtype, device=c.device)
    return c, A, b, A_eq, b_eq


# The layer's keywords, as shortcuts for fields of the methods that have them: {method: field}.
_SAMPLED = ("perturbed", "imle", "aimle")
_METHOD_KEYWORDS: dict[str, dict[str, str]] = {
    "tau": {"combopt": "tau"}, "basis": {"combopt": "basis"}, "project_to_box": {"combopt": "project_to_box"},
    "feasibility_tol": {"combopt": "feasibility_tol"}, "blackbox_lambda": {"blackbox": "lam"},
    "sigma": dict.fromkeys(_SAMPLED, "sigma"), "samples": dict.fromkeys(_SAMPLED, "samples"),
    "seed": dict.fromkeys(_SAMPLED, "seed"), "noise": {"perturbed": "noise"}}


def _gradient_method(gradient: str | GradientMethod, given: dict[str, Any]) -> GradientMethod:
    """``gradient`` as a method object: a name with the layer's keywords for that method, or an
    object of yours (whose options are its own: the layer's keywords are then refused)."""
    if isinstance(gradient, GradientMethod):
        if given:
            name = sorted(given)[0]
            raise ValueError(f"{name} is an option of the gradient method: set it on the object "
                             f"(gradient={type(gradient).__name__}(...)), not on the layer")
        return gradient
    if gradient not in METHODS:
        raise ValueError(f"gradient must be one of {GRADIENTS} or a GradientMethod, got {gradient!r}")
    for name in given:
        owners = _METHOD_KEYWORDS[name]
        if gradient not in owners:
            which = " or ".join(repr(owner) for owner in owners)
            raise ValueError(f"{name} applies to gradient={which} only; this layer has "
                             f"gradient={gradient!r}: leave {name} out")
    return METHODS[gradient](**{_METHOD_KEYWORDS[name][gradient]: value for name, value in given.items()})


class _Unbuilt:
    """The pool the layer builds on its next forward pass; copies and pickles as itself."""

    def __reduce__(self) -> str:
        return "_UNBUILT"


_UNBUILT: Any = _Unbuilt()


class ILPLayer(torch.nn.Module):
    """An integer linear program as a layer: ``y = argmin c·y s.t. A y <= b, lb <= y <= ub``
    (``argmax`` with ``sense="max"``).

    The forward pass runs the chosen exact backend; the backward pass returns, by default, the
    CombOptNet gradients for ``c``, ``A`` and ``b`` (pure torch on the inputs' device), or a
    cost-only gradient (``gradient="blackbox" | "identity" | "perturbed"``, docs/gradients.md).

    The backend's native models and the worker pool are not state: ``copy.deepcopy``,
    ``pickle`` and ``torch.save`` copy the layer's settings, and the copy builds its own
    backend and pool on its first forward pass. The layer is a context manager; :meth:`close`
    releases what it built (a later forward pass builds it again).

    Args:
        lb: lower bounds of the variables, a scalar or one per variable (``-inf``: none).
        ub: upper bounds of the variables, a scalar or one per variable (``inf``: none).
        solver: backend name (see :func:`ilplayer.list_solvers`) or a :class:`Solver`.
        solver_options: keyword options for the backend.
        tau: soft-min temperature of supplementary A.1 (the paper uses 0.5); ``None`` for the
            hard minimum. CombOptNet only, like ``basis``, ``project_to_box`` and
            ``feasibility_tol``.
        basis: ``"delta"`` (the paper's basis of dominant directions) or ``"canonical"``.
        project_to_box: project ``y - dy`` onto the box before decomposing (supplementary B.1).
        feasibility_tol: tolerance of the backward's feasibility test for the targets.
        executor: how a batch is spread over workers (see :func:`solve`). The pool is created
            on the first forward pass and lives until :meth:`close` (or garbage collection).
        workers: parallel workers (default: the cores available).
        mp_context: start method for ``executor="processes"``.
        backward_threads: torch intra-op threads for the backward on CPU (default 1: the
            backward's tensors are small, and more threads compete with the solver workers
            for the cores); None leaves torch's setting alone.
        sense: ``"min"`` or ``"max"`` (any case).
        integrality: 1 (integer) or 0 (continuous) per variable, (n,) or (B, n); None: all
            integer. A mixed-integer program needs a mixed-integer backend (see :func:`solve`);
            every gradient method takes it, CombOptNet for ``c`` only (it refuses ``A`` and ``b``
            that require grad when a variable is continuous).
        gradient: ``"combopt"`` (for ``c``, ``A``, ``b``), ``"blackbox"`` (Vlastelica et al.,
            interpolation ``blackbox_lambda``, default 10), ``"identity"`` (Sahoo et al.) or
            ``"perturbed"`` (Berthet et al.: the forward returns the mean of ``samples``
            solutions (default 8) under Gaussian noise of scale ``sigma`` (default 1), solved as
            one batch; ``seed`` fixes the noise; ``noise="multiplicative"``: the costs times
            ``exp(sigma Z - sigma^2 / 2)``, which keeps their signs, Dalle et al. 2022). The
            last three give gradients for ``c`` only.
            Or a method object holding its options (:mod:`ilplayer.gradients`:
            ``CombOptNet(tau=None)``, ``Blackbox(lam=20)``, ``Identity()``,
            ``Perturbed(sigma=0.5, samples=16, seed=0)``); the keywords above are shortcuts
            for its fields. An option of another method than the chosen one is refused.
        solve_ratio: the share of training batches that call the solver (default 1); the
            others take, per instance, the best decision of ``pool`` under the predicted
            costs (:class:`~ilplayer.Status` ``POOLED``). Applies in training mode only (the
            forward pass under ``layer.train()``, and the losses' solves); ``layer.eval()``
            and :meth:`solve_batch` solve exactly. Every solve adds its answers to the pool.
        pool: known decisions of the program (k, n), e.g. the training set's optimal
            solutions, or a :class:`~ilplayer.decision_pool.DecisionPool` shared with others,
            or a :class:`~ilplayer.decision_pool.PoolRule` (then leave ``solve_ratio`` out).
            With the default ``solve_ratio=1`` and no pool, nothing is pooled.
        cost_map: (n, d), for costs that are not per variable (PyEPO's TSP: a cost per edge,
            the program's variables two arcs and a flow per edge): the layer takes ``c`` (B, d),
            solves the program with costs ``c @ cost_map.T`` and returns ``y @ cost_map``
            (B, d). Every cost method then works in that space, as PyEPO's do on its models:
            the perturbed methods' noise lands on the d costs, not on the program's variables.
            Not with ``gradient="combopt"`` (its gradients live in the program's variables).

    Attributes:
        method: the gradient method object (``gradient`` is its name).
        last_status: int8 tensor of :class:`Status` codes from the last forward pass.
        last_objective: float64 ``c·y`` per instance of the last forward pass.

    Example:
        >>> layer = ILPLayer(lb=0, ub=1, solver="bruteforce", tau=0.5)
        >>> constraints = StaticConstraints(num_constraints=2, num_variables=8, lb=0, ub=1)
        >>> y = layer(torch.randn(4, 8), *constraints())
        >>> y.shape, layer.last_status.shape
        (torch.Size([4, 8]), torch.Size([4]))
    """

    integrality: Any = None  # the default of a layer saved before mixed-integer programs
    cost_map: torch.Tensor | None = None  # the default of a layer saved before cost maps
    pool_rule: PoolRule | None = None  # the default of a layer saved before solve_ratio

    def __init__(self, lb: Bounds = 0, ub: Bounds = 1, solver: str | Solver = "bruteforce",
                 solver_options: dict[str, Any] | None = None, tau: float | None = 0.5,
                 basis: str = "delta", project_to_box: bool = True,
                 feasibility_tol: float = 1e-6, executor: ExecutorLike = None,
                 workers: int | None = None, mp_context: str | None = None,
                 backward_threads: int | None = 1, sense: str = "min",
                 gradient: str | GradientMethod = "combopt",
                 blackbox_lambda: float | None = None, sigma: float | None = None,
                 samples: int | None = None, seed: int | None = None, noise: str | None = None,
                 integrality: Any = None,
                 solve_ratio: float = 1.0, pool: Any = None, cost_map: Any = None) -> None:
        super().__init__()
        self.pool_rule = pool_rule(solve_ratio, pool)
        sense = _check_sense(sense)
        # The keywords given for a method: the cost methods' are None when left out; CombOptNet's
        # have its defaults (a value of another type counts as given, to be checked).
        defaults = CombOptNet()
        keywords = {"blackbox_lambda": blackbox_lambda, "sigma": sigma, "samples": samples, "seed": seed,
                    "noise": noise, "tau": tau, "basis": basis, "project_to_box": project_to_box,
                    "feasibility_tol": feasibility_tol}
        given: dict[str, Any] = {}
        for name, value in keywords.items():
            default = getattr(defaults, name, None)
            if value != default or type(value) is not type(default):
                given[name] = value
        if backward_threads is not None and (isinstance(backward_threads, bool) or
                                             not isinstance(backward_threads, int) or backward_threads < 1):
            raise ValueError(f"backward_threads must be a positive integer or None, got {backward_threads!r}")
        self.method = _gradient_method(gradient, given)
        self.cost_map = check_cost_map(cost_map)
        if self.cost_map is not None and isinstance(self.method, CombOptNet):
            raise ValueError("cost_map: gradient='combopt' works in the program's own variables (its targets and "
                             "constraint gradients live there); give it the costs c @ cost_map.T and read "
                             "y @ cost_map yourself, or use a cost method (gradient='blackbox', 'identity', "
                             "'perturbed', ... or the losses)")
        self.sense, self.gradient = sense, self.method.name
        self.backward_threads = backward_threads
        self._warned_no_signal = False
        self._warned_no_gradient: set[str] = set()
        self.last_objective: torch.Tensor | None = None
        check_box(lb, ub, integrality)
        self.lb, self.ub, self.integrality = lb, ub, integrality
        # What the layer builds from (the recipe and the executor settings: kept by its copies)
        # and what it built (the solver and pool it owns: not copied, built again on use).
        self._executor_settings = (executor if isinstance(executor, str) or executor is None else None,
                                   workers, mp_context)
        backend = Backend.build(solver, solver_options, executor, workers, mp_context)
        self.recipe = backend.recipe
        self._solver: Solver | None = backend.solver
        self._owns_solver = backend.owns_solver
        self._executor: BatchExecutor | None = backend.executor
        self._owns_executor = executor is None or isinstance(executor, str)
        self.last_status: torch.Tensor | None = None

    @property
    def solver(self) -> Solver:
        """The backend; built again after :meth:`close` or in a copy, on first use."""
        if self._solver is None:
            assert self.recipe is not None, "a solver the layer built has its recipe"
            self._solver = self.recipe.create()
        return self._solver

    @property
    def executor(self) -> BatchExecutor | None:
        """The worker pool (None: solved in the calling thread); built again after
        :meth:`close` or in a copy, on first use."""
        if self._executor is _UNBUILT:
            executor, workers, mp_context = self._executor_settings
            self._executor = make_executor(executor, workers, self.solver, self.recipe, mp_context)
        return self._executor

    def __getstate__(self) -> dict[str, Any]:
        """The layer's settings without what it built: native models, pools and workers are
        rebuilt by the copy (``pickle``, ``torch.save``)."""
        if not self._owns_executor:
            raise TypeError("ILPLayer: a layer given your own executor object cannot be pickled "
                            "(a pool is not data); build it with executor='threads', "
                            "'processes', 'ray' or 'serial' to save it, or copy it with "
                            "copy.deepcopy, whose copy shares your pool")
        return self._state(memo=None)

    def __deepcopy__(self, memo: dict[int, Any]) -> ILPLayer:
        """A copy that builds its own backend and pool; your own executor object is shared."""
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        copied.__setstate__(copy.deepcopy(self._state(memo), memo))
        return copied

    def _state(self, memo: dict[int, Any] | None) -> dict[str, Any]:
        state = super().__getstate__()
        if self._owns_solver:
            state["_solver"] = None
        if self._owns_executor:
            state["_executor"] = _UNBUILT
        elif memo is not None:
            memo[id(self._executor)] = self._executor  # the user's pool: shared, not copied
        return state

    def __enter__(self) -> ILPLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forward(self, c: torch.Tensor, A: torch.Tensor | None, b: torch.Tensor | None,
                A_eq: torch.Tensor | None = None, b_eq: torch.Tensor | None = None) -> torch.Tensor:
        """Solve the batch; ``c`` (B, n), ``A`` (m, n) or (B, m, n), ``b`` (m,) or (B, m).

        NumPy inputs are turned into tensors (the output is a tensor); a scipy.sparse ``A`` (or
        a torch sparse one without grad) stays sparse up to the backend, a torch sparse ``A``
        that requires grad is densified differentiably; ``A = b = None`` is a box-only problem.
        ``A_eq`` (m_eq, n) or (B, m_eq, n) and ``b_eq`` add equalities ``A_eq y = b_eq``,
        passed to the backend natively; they take part in CombOptNet's feasibility tests and
        get no gradient.
        """
        c, A, b, A_eq, b_eq = _layer_inputs(c, A, b, A_eq, b_eq)
        if torch.is_grad_enabled():
            self._warn_lost_gradients(A=A, b=b, A_eq=A_eq, b_eq=b_eq)
        cost = -c if self.sense == "max" and isinstance(c, torch.Tensor) else c  # solved as min
        run = LayerSolves(solve=self.solves(self.pool_rule if self.training else None),
                          check_signal=self._check_signal, threads=self.backward_threads, cost_map=self.cost_map)
        y, status = self.method.apply(run, cost, A, b, self.lb, self.ub, A_eq, b_eq, self.integrality)
        self.last_status = status
        self.last_objective = (c.detach().to(torch.float64) * y.detach().to(torch.float64)).sum(-1)
        return y

    def solve_batch(self, c: torch.Tensor, A: torch.Tensor | None, b: torch.Tensor | None,
                    A_eq: Any = None, b_eq: Any = None, copies: int = 1,
                    pool: PoolRule | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The exact solutions in the layer's ``sense`` with its backend and executor, without
        autograd (for losses that solve their own batches): ``(y, status)``, ``y`` float64.

        With ``copies`` > 1, ``c`` holds that many stacked cost batches (copies·B, n) for one
        batch of B instances' constraints (perturbed samples): all are solved at once. With a
        ``pool`` rule (a loss's own, or the layer's :attr:`pool_rule`), its drawn share of
        calls is answered from the pool instead."""
        c = _layer_inputs(c, A, b, A_eq, b_eq)[0]
        B = c.shape[0] // copies
        problem = self.min_problem(c[:B], A, b, A_eq, b_eq)
        if copies > 1:
            problem = problem.repeat(copies, (-c if self.sense == "max" else c).detach())
        y, status, _ = self.solves(pool)(problem)
        return y, status

    def min_problem(self, c: torch.Tensor, A: Any, b: Any, A_eq: Any = None, b_eq: Any = None) -> ProblemTensors:
        """The validated batch of costs ``c`` (in the layer's sense) under the layer's box and
        integrality, in minimisation form, detached (for losses that solve their own)."""
        c, A, b, A_eq, b_eq = _layer_inputs(c, A, b, A_eq, b_eq)
        c = (-c if self.sense == "max" else c).detach()
        return validate_problem(c, A.detach(), b.detach(), self.lb, self.ub,
                                None if A_eq is None else A_eq.detach(), None if b_eq is None else b_eq.detach(),
                                self.integrality, cost_map=self.cost_map)

    def solves(self, pool: PoolRule | None = None
               ) -> Callable[[ProblemTensors], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """How a batch of :meth:`min_problem` is solved: exactly with the layer's backend, or,
        with a ``pool`` rule, its drawn share from the pool. Returns ``(y float64, status,
        objective)``."""
        return self._solve if pool is None else functools.partial(pool.solve, exact=self._solve)

    def refresh_pool(self, pool: PoolRule, c: torch.Tensor, A: Any, b: Any, A_eq: Any = None,
                     b_eq: Any = None) -> torch.Tensor:
        """For the losses that read a whole pool: solve ``c`` (in the layer's sense) in the
        rule's drawn share of calls, adding the answers; the pool's decisions (k, n), float64."""
        return pool.refresh(self.min_problem(c, A, b, A_eq, b_eq), self._solve)

    def _solve(self, problem: ProblemTensors) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``problem`` with this layer's backend and pool: ``(y float64, status, objective)``."""
        return solve_problem(problem, Backend(self.recipe, self.solver, self.executor))

    def _warn_lost_gradients(self, **inputs: Any) -> None:
        """Warn once per argument when an input that requires grad gets no gradient: A and b
        under a cost-only method, A_eq and b_eq under any."""
        for name, value in inputs.items():
            if name in self._warned_no_gradient or not getattr(value, "requires_grad", False):
                continue
            if name in ("A", "b") and self.method.constraint_gradients:
                continue
            self._warned_no_gradient.add(name)
            givers = " or ".join(f"gradient={n!r}" for n, m in METHODS.items() if m.constraint_gradients)
            which = (f"only {givers} gives one (the other methods learn costs only)"
                     if name in ("A", "b") else
                     "no method gives one: equality constraints take part in the solve and in "
                     "CombOptNet's feasibility tests, not in the gradient; learn them as pairs "
                     "of inequality rows in A, b with gradient='combopt'")
            warn_at_user_line(f"ILPLayer(gradient={self.gradient!r}): {name} requires grad but gets "
                              f"no gradient from this layer; {which}.", NoGradientWarning)

    def _check_signal(self, dc: torch.Tensor | None, dy: torch.Tensor, *others: torch.Tensor | None) -> None:
        """Warn once when a backward pass gives the whole batch an all-zero gradient although
        the incoming gradient was not zero: the loss is learning nothing."""
        if self._warned_no_signal or dy.device.type == "meta":
            return
        grads = [g for g in (dc, *others) if g is not None]
        if not grads or not bool(dy.any()) or any(bool(g.any()) for g in grads):
            return
        self._warned_no_signal = True
        warn_at_user_line(f"ILPLayer(gradient={self.gradient!r}): the backward pass gave the whole "
                          "batch an all-zero gradient although the loss's gradient was not zero. "
                          f"{self.method.no_signal_hint}.",
                          NoSignalWarning)

    def close(self) -> None:
        """Stop the layer's worker pool and release the backend's native models (for what the
        layer created itself). Safe to call twice; a later forward pass builds them again."""
        if self._owns_executor:
            executor, self._executor = self._executor, _UNBUILT
            if executor is not None and executor is not _UNBUILT:
                executor.close()
        if self._owns_solver and self._solver is not None:
            solver, self._solver = self._solver, None
            solver.close()

    def extra_repr(self) -> str:
        built = self._executor is not _UNBUILT
        executor = (self._executor.kind if self._executor is not None else "serial") if built else \
            (self._executor_settings[0] or "auto")
        solver = self._solver.name if self._solver is not None else self.recipe.spec.name if self.recipe else None
        method = ", ".join(f"{name}={value!r}" for name, value in self.method.options().items())
        mixed = "" if self.integrality is None else f"integrality={self.integrality!r}, "
        if self.cost_map is not None:
            mixed += f"cost_map={tuple(self.cost_map.shape)}, "
        return (f"lb={self.lb}, ub={self.ub}, {mixed}sense={self.sense!r}, solver={solver!r}, "
                f"executor={executor!r}, gradient={self.gradient!r}" + (f", {method}" if method else ""))
