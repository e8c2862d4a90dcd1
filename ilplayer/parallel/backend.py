"""A backend resolved once (`Backend`): how to build its solver (the recipe), the solver and
worker pool built from it on first use, and which of them it owns. An `Oracle` holds one;
[`ilplayer.solve`][ilplayer.solve]'s cache keeps some; `ilplayer.parallel.dispatch` solves
through it."""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from ilplayer.core.records import ILPBatch, SolveResult, TaskFailure
from ilplayer.parallel.executors import ExecutorLike, make_executor, plan_tasks
from ilplayer.parallel.workers import BatchExecutor, SolverRecipe, solve_task
from ilplayer.solvers.contract import Solver

__all__ = ["UNBUILT", "Backend"]


class _Unbuilt:
    """What a backend builds on its next solve; copies and pickles as itself."""

    def __reduce__(self) -> str:
        return "UNBUILT"


UNBUILT: Any = _Unbuilt()


class Backend:
    """A backend resolved once: its `SolverRecipe` (how to build it, here or in a worker), this
    thread's solver, and the executor whose workers build their own from the recipe (None:
    solved in the calling thread). What it owns (built from a name or an executor's name) is
    built on first use, released by `close` and built again by the next solve; a solver or
    executor object you gave is used as it is and never closed.

    ``copy.deepcopy`` and ``pickle`` copy the settings: the copy builds its own solver and pool
    (your own executor object is shared by a deep copy, and cannot be pickled)."""

    def __init__(
        self,
        recipe: SolverRecipe | None,
        solver: Solver | None,
        executor: BatchExecutor | None = None,
        owns_solver: bool = False,
        owns_executor: bool = False,
        executor_settings: tuple[str | None, int | None, str | None] = (None, None, None),
    ) -> None:
        self.recipe = recipe
        self._solver = solver
        self._executor: Any = executor
        self.owns_solver = owns_solver
        self.owns_executor = owns_executor
        # (name, workers, mp_context) of an executor this backend builds itself.
        self.executor_settings = executor_settings

    @classmethod
    def build(
        cls,
        solver: str | Solver,
        options: dict[str, Any] | None,
        executor: ExecutorLike,
        workers: int | None = None,
        mp_context: str | None = None,
    ) -> Backend:
        """``solver`` (a name, resolved here once, or a Solver object used as it is) with its
        ``options`` and the workers ``executor`` names (or yours, used as it is)."""
        if options is not None and not isinstance(options, dict):
            raise TypeError(
                "solver_options must be a dict of keyword options for the backend, e.g. "
                f"{{'time_limit': 10}}; got {type(options).__name__}"
            )
        if isinstance(solver, Solver):
            if options:
                raise ValueError("solver_options only apply when solver is given by name")
            recipe, built = SolverRecipe.from_solver(solver), solver
        else:
            recipe = SolverRecipe.from_name(solver, options)
            built = recipe.create()
        try:
            pool = make_executor(executor, workers, built, recipe, mp_context)
        except BaseException:
            if built is not solver:
                built.close()
            raise
        name = executor if isinstance(executor, str) else None
        owned = executor is None or name is not None
        return cls(
            recipe,
            built,
            pool,
            owns_solver=built is not solver,
            owns_executor=owned,
            executor_settings=(name, workers, mp_context),
        )

    @property
    def solver(self) -> Solver:
        """This thread's solver; built again after `close`, or in a copy, on first use."""
        if self._solver is None:
            assert self.recipe is not None, "a solver the backend built has its recipe"
            self._solver = self.recipe.create()
        return self._solver

    @property
    def executor(self) -> BatchExecutor | None:
        """The worker pool (None: solved in the calling thread); built again after `close`,
        or in a copy, on first use."""
        if self._executor is UNBUILT:
            name, workers, mp_context = self.executor_settings
            self._executor = make_executor(name, workers, self.solver, self.recipe, mp_context)
        return self._executor

    def names(self) -> tuple[str | None, str]:
        """``(solver, executor)`` by name, without building either (for a ``repr``)."""
        solver = (
            self._solver.name
            if self._solver is not None
            else self.recipe.spec.name
            if self.recipe
            else None
        )
        if self._executor is UNBUILT:
            return solver, self.executor_settings[0] or "auto"
        return solver, self._executor.kind if self._executor is not None else "serial"

    def solve_groups(
        self, groups: list[tuple[np.ndarray, ILPBatch]]
    ) -> list[tuple[np.ndarray, ILPBatch, SolveResult | TaskFailure]]:
        """Every group ``(rows, batch)`` solved, in this thread or on the executor's workers
        (an ``auto`` executor decides from what it measured), each with its result or the
        failure of its task (one failing group must not sink the batch)."""
        executor = self.executor
        auto = executor.auto if executor is not None else None
        parallel = executor is not None and bool(groups) and (auto is None or auto.parallel())
        start = time.perf_counter()
        if not parallel:
            tasks = [[group] for group in groups]
            outcomes: list = [solve_task(self.solver, task) for task in tasks]
        else:
            assert executor is not None and self.recipe is not None, (
                "make_executor refuses parallel executors without a recipe"
            )
            tasks = plan_tasks(groups, executor.workers)
            outcomes = executor.run(self.recipe, tasks)
        if auto is not None and groups:
            auto.record(parallel, time.perf_counter() - start, sum(len(r) for r, _ in groups))
        solved = []
        for task, outcome in zip(tasks, outcomes):
            results = [outcome] * len(task) if isinstance(outcome, TaskFailure) else outcome
            solved += [(rows, batch, result) for (rows, batch), result in zip(task, results)]
        return solved

    def close(self) -> None:
        """Stop the pool and release the solver, for what this backend built itself. Safe to
        call twice; a later solve builds them again."""
        if self.owns_executor:
            executor, self._executor = self._executor, UNBUILT
            if executor is not None and executor is not UNBUILT:
                executor.close()
        if self.owns_solver and self._solver is not None:
            solver, self._solver = self._solver, None
            solver.close()

    def shareable(self) -> None:
        """Refuse to pickle a backend on an executor object of yours (a pool is not data)."""
        if not self.owns_executor:
            raise TypeError(
                "a layer or oracle given your own executor object cannot be pickled (a pool is "
                "not data); build it with executor='threads', 'processes', 'ray' or 'serial' "
                "to save it, or copy it with copy.deepcopy, whose copy shares your pool"
            )

    def __getstate__(self) -> dict[str, Any]:
        self.shareable()
        return self._state()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __deepcopy__(self, memo: dict[int, Any]) -> Backend:
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        if not self.owns_executor:
            memo[id(self._executor)] = self._executor  # your pool: shared, not copied
        copied.__setstate__(copy.deepcopy(self._state(), memo))
        return copied

    def _state(self) -> dict[str, Any]:
        """The settings, without what this backend built (built again by the copy)."""
        state = dict(self.__dict__)
        if self.owns_solver:
            state["_solver"] = None
        if self.owns_executor:
            state["_executor"] = UNBUILT
        return state
