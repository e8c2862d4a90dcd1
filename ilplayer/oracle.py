"""The oracle: a [`Program`][ilplayer.program.Program] with the backend, the worker pool and the
decision pool that solve it — what every layer and loss solves through (PyEPO's ``optModel``,
InferOpt's maximizer)."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.bounds import exact_dtype
from ilplayer.core.decision_pool import PoolRule, fingerprint, pool_rule
from ilplayer.core.tensors import check_finite
from ilplayer.core.transforms import untraced
from ilplayer.core.validation import validate_problem

# UNBUILT: the name the pickles of ilplayer 0.1.0 look the unbuilt pool up by.
from ilplayer.parallel.backend import UNBUILT, Backend  # noqa: F401
from ilplayer.parallel.dispatch import solve_problem
from ilplayer.parallel.executors import ExecutorLike
from ilplayer.parallel.workers import BatchExecutor
from ilplayer.program import Program
from ilplayer.solvers.contract import Solver

__all__ = ["Oracle", "as_input"]


def as_input(value: Any) -> Any:
    """An argument as the solves take it: a NumPy array becomes a tensor; a torch sparse tensor
    that requires grad is densified with ``to_dense`` (differentiable). A scipy.sparse matrix,
    or a torch sparse one without grad, stays sparse (`validate_problem` keeps it as a
    host CSR matrix). Anything else is left for `validate_problem` to refuse by name."""
    if isinstance(value, torch.Tensor) and value.layout != torch.strided and value.requires_grad:
        return value.to_dense()
    if isinstance(value, np.ndarray) and value.dtype != object:
        return torch.from_numpy(value)
    return value


class Oracle:
    """Solves batches of a program with a backend: ``oracle(c) -> (y, status)``.

    The backend's native models and the worker pool are not state: ``copy.deepcopy``,
    ``pickle`` and ``torch.save`` copy the settings, and the copy builds its own backend and
    pool on its first solve. An oracle is a context manager; [close][ilplayer.Oracle.close]
    releases what it built (a later solve builds it again).

    Args:
        program: the [Program][ilplayer.Program] (its rows, box, integrality, sense, cost map);
            None: a box ``[0, 1]`` whose rows each call brings.
        solver: a backend name ([list_solvers][ilplayer.list_solvers]) or a
            `Solver` object.
        solver_options: keyword options for the backend (when given by name).
        executor: how a batch is spread over workers: ``"auto"`` (default), ``"serial"``,
            ``"threads"``, ``"processes"``, ``"ray"`` or a ``concurrent.futures.Executor``.
            The pool is created on the first solve and lives until ``close``.
        workers: parallel workers (default: the cores available).
        mp_context: start method for ``executor="processes"``.
        pool: known decisions of the program (k, n), a
            [DecisionPool][ilplayer.core.decision_pool.DecisionPool] shared with others, or a
            [PoolRule][ilplayer.core.decision_pool.PoolRule] (then leave ``solve_ratio`` out).
        solve_ratio: the share of training solves that call the solver; the others take, per
            instance, the pool's best decision (``Status.POOLED``). Applies where a layer or
            loss solves in training mode; ``oracle(c)`` always solves exactly.

    Attributes:
        program: the program it solves.
        pool_rule: the [PoolRule][ilplayer.core.decision_pool.PoolRule] of ``pool`` and
            ``solve_ratio`` (None: nothing is pooled).

    Example:
        >>> program = ilplayer.Program(A=[[1.0, 1.0]], b=[1.0], lb=0, ub=1)
        >>> with ilplayer.Oracle(program, solver="bruteforce") as oracle:
        ...     y, status = oracle(torch.tensor([[-1.0, -2.0]]))
        >>> y.tolist()
        [[0.0, 1.0]]
    """

    def __init__(
        self,
        program: Program | None = None,
        solver: str | Solver = "highs",
        solver_options: dict[str, Any] | None = None,
        executor: ExecutorLike = None,
        workers: int | None = None,
        mp_context: str | None = None,
        pool: Any = None,
        solve_ratio: float = 1.0,
    ) -> None:
        if program is None:
            program = Program()
        if not isinstance(program, Program):
            raise TypeError(f"program must be an ilplayer.Program, got {type(program).__name__}")
        self.program = program
        self.pool_rule = pool_rule(solve_ratio, pool)
        self.backend = Backend.build(solver, solver_options, executor, workers, mp_context)

    @classmethod
    def from_pyepo(cls, optmodel: Any, solver: str | Solver = "highs", **options: Any) -> Oracle:
        """An oracle for a PyEPO ``optModel`` on any backend and executor: its program read
        with [Program.from_pyepo][ilplayer.Program.from_pyepo] (costs and solutions in PyEPO's
        own vector), so every ilplayer loss trains on the user's PyEPO model unchanged.

        Args:
            optmodel: a PyEPO model built on gurobipy or Pyomo (shortest path, knapsack, TSP
                GG or MTZ, CVRP MTZ, or the user's own subclass).
            solver: the backend that solves it (not the model's own solver).
            **options: the other [Oracle][ilplayer.Oracle] arguments (executor, workers, pool, ...).
        """
        return cls(Program.from_pyepo(optmodel), solver=solver, **options)

    @property
    def sense(self) -> str:
        return self.program.sense

    @property
    def cost_map(self) -> torch.Tensor | None:
        return self.program.cost_map

    @property
    def solver(self) -> Solver:
        """The backend's solver; built again after ``close`` or in a copy, on first use."""
        return self.backend.solver

    @property
    def executor(self) -> BatchExecutor | None:
        """The worker pool (None: solved in the calling thread); built again after ``close``
        or in a copy, on first use."""
        return self.backend.executor

    @property
    def recipe(self) -> Any:
        """How the backend's solver is built (here or in a worker)."""
        return self.backend.recipe

    def rows(
        self, c: Any, A: Any = None, b: Any = None, A_eq: Any = None, b_eq: Any = None
    ) -> tuple[Any, ...]:
        """``(c, A, b, A_eq, b_eq)`` as the solves take them: the program's rows where the call
        brings none (``A = b = None``; ``A_eq = b_eq = None``), 0 rows where neither has any."""
        c, A, b, A_eq, b_eq = (as_input(x) for x in (c, A, b, A_eq, b_eq))
        program = self.program
        if A is None and b is None:
            A, b = program.A, program.b
        if A_eq is None and b_eq is None:
            A_eq, b_eq = program.A_eq, program.b_eq
        if A is None and b is None and isinstance(c, torch.Tensor):
            n = c.shape[-1] if program.cost_map is None else program.cost_map.shape[0]
            A = torch.zeros((0, n), dtype=c.dtype, device=c.device)
            b = torch.zeros((0,), dtype=c.dtype, device=c.device)
        return c, A, b, A_eq, b_eq

    @untraced  # a solve: not traced by torch.compile (ILPLayer.forward says why)
    def __call__(
        self, c: Any, A: Any = None, b: Any = None, A_eq: Any = None, b_eq: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The exact solutions for costs ``c`` (B, n) in the program's sense: ``(y, status)``,
        ``y`` on ``c``'s device in a dtype exact for the box, detached. ``A``, ``b`` (and
        ``A_eq``, ``b_eq``) replace the program's rows for this call."""
        problem = self.min_problem(c, A, b, A_eq, b_eq)
        y, status, _ = self._solve(problem)
        return y.to(exact_dtype(problem.c.dtype, problem.lb, problem.ub)), status

    @untraced  # a solve: not traced by torch.compile (ILPLayer.forward says why)
    def solve_batch(
        self,
        c: Any,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
        copies: int = 1,
        pool: PoolRule | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The solutions in the program's ``sense``, without autograd (for losses that solve
        their own batches): ``(y, status)``, ``y`` float64.

        With ``copies`` > 1, ``c`` holds that many stacked cost batches (copies·B, n) for one
        batch of B instances' constraints (perturbed samples): all are solved at once. With a
        ``pool`` rule (a loss's own, or the oracle's ``pool_rule``), its drawn share of
        calls is answered from the pool instead."""
        c = self.rows(c, A, b, A_eq, b_eq)[0]
        B = c.shape[0] // copies
        problem = self.min_problem(c[:B], A, b, A_eq, b_eq)
        if copies > 1:
            problem = problem.repeat(copies, self.program.minimised(c).detach())
        y, status, _ = self.solves(pool)(problem)
        return y, status

    def min_problem(
        self, c: Any, A: Any = None, b: Any = None, A_eq: Any = None, b_eq: Any = None
    ) -> ProblemTensors:
        """The validated batch of costs ``c`` (in the program's sense) under its box and
        integrality, in minimisation form, detached (for losses that solve their own)."""
        own_rows = A is None and b is None and A_eq is None and b_eq is None
        c, A, b, A_eq, b_eq = self.rows(c, A, b, A_eq, b_eq)
        c = self.program.minimised(c).detach()
        detach = lambda value: value.detach() if isinstance(value, torch.Tensor) else value
        program = self.program
        validate = lambda: validate_problem(
            c,
            detach(A),
            detach(b),
            program.lb,
            program.ub,
            detach(A_eq),
            detach(b_eq),
            program.integrality,
            cost_map=program.cost_map,
        )
        if not (
            own_rows
            and isinstance(c, torch.Tensor)
            and c.layout == torch.strided
            and c.dim() == 2
            and c.shape[0] > 0
            and np.ndim(program.integrality) < 2
        ):
            return validate()
        # The program's own rows (immutable) are validated once per cost dtype, device and
        # width; later batches check only their costs (a 32-instance LP batch spent a tenth of
        # its time validating and copying rows that never change).
        templates = self.__dict__.setdefault("_templates", {})
        kind = (c.dtype, c.device, c.shape[1])
        if kind not in templates:
            templates[kind] = validate()
            return templates[kind]
        check_finite(c, "c")
        return dataclasses.replace(templates[kind], c=c)

    def solves(
        self, pool: PoolRule | None = None
    ) -> Callable[[ProblemTensors], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """How a batch of ``min_problem`` is solved: exactly with the backend, or, with a
        ``pool`` rule, its drawn share from the pool. Returns ``(y float64, status, objective)``."""
        return self._solve if pool is None else functools.partial(pool.solve, exact=self._solve)

    def refresh_pool(
        self,
        pool: PoolRule,
        c: Any,
        A: Any = None,
        b: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
    ) -> torch.Tensor:
        """For the losses that read a whole pool: solve ``c`` (in the program's sense) in the
        rule's drawn share of calls, adding the answers; the pool's decisions (k, n), float64."""
        c = c if isinstance(c, torch.Tensor) else torch.as_tensor(c)
        build = lambda: self.min_problem(c, A, b, A_eq, b_eq)
        if A is not None or b is not None or A_eq is not None or b_eq is not None:
            return pool.refresh(build, self._solve, c.device)
        # The program's own rows: their fingerprint is computed once (a Program is immutable),
        # and a batch the pool answers is not validated again.
        keys = self.__dict__.setdefault("_program_keys", {})
        kind = (c.dtype, tuple(c.shape[1:]))  # another width or dtype: validated (and refused) anew
        if kind not in keys:
            keys[kind] = fingerprint(build())
        return pool.refresh(build, self._solve, c.device, key=keys[kind])

    def _solve(self, problem: ProblemTensors) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``problem`` with this oracle's backend and pool: ``(y float64, status, objective)``."""
        return solve_problem(problem, self.backend)

    def __getstate__(self) -> dict[str, Any]:
        """The settings without what the oracle built: native models, pools and workers are
        rebuilt by the copy (``pickle``, ``torch.save``)."""
        self.backend.shareable()
        return self._state()

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "backend" not in state:  # ilplayer 0.1.0 kept the backend's parts in five fields
            state = dict(state)
            name, workers, mp_context = state.pop("_executor_settings")
            state["backend"] = Backend(
                state.pop("recipe"),
                state.pop("_solver"),
                state.pop("_executor"),
                owns_solver=state.pop("_owns_solver"),
                owns_executor=state.pop("_owns_executor"),
                executor_settings=(name, workers, mp_context),
            )
        self.__dict__.update(state)

    def __deepcopy__(self, memo: dict[int, Any]) -> Oracle:
        """A copy that builds its own backend and pool; your own executor object is shared."""
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        copied.__setstate__(copy.deepcopy(self._state(), memo))
        return copied

    def _state(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_templates", None)  # validated batches (a first batch's costs): rebuilt on use
        return state

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker pool and release the backend's native models (for what the oracle
        created itself). Safe to call twice; a later solve builds them again."""
        self.backend.close()

    def __repr__(self) -> str:
        solver, executor = self.backend.names()
        return f"Oracle({self.program!r}, solver={solver!r}, executor={executor!r})"
