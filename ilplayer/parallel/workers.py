"""The worker side of parallel solving, and how ilplayer's worker processes live and die.

A worker builds its solver once from a picklable `SolverRecipe` and keeps it (and so its
native models, one per ``(A, b)``) for as long as the pool lives: `run_task`. Worker
processes run BLAS on one thread, ignore Ctrl-C and exit with their client however it dies
(`start_process_pool`); a script without a guard is refused before a worker starts
(`unguarded_main_line`). `BatchExecutor` is what every pool offers the core.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from ilplayer.core.records import ILPBatch, SolveResult, TaskFailure
from ilplayer.core.threads import one_blas_thread
from ilplayer.parallel.auto import AutoDispatch
from ilplayer.parallel.main_guard import main_file_hidden, main_without_a_file, unguarded_main_line
from ilplayer.parallel.malloc import keep_freed_memory
from ilplayer.solvers.contract import Solver
from ilplayer.solvers.registry import SolverSpec, resolve_solver_name

__all__ = [
    "BatchExecutor",
    "SolverRecipe",
    "Task",
    "default_start_method",
    "default_workers",
    "frozen",
    "ping",
    "run_task",
    "solve_task",
    "start_process_pool",
    "terminate_process_pool",
]

Task = list[tuple[np.ndarray, ILPBatch]]


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def frozen(value: Any) -> Any:
    """``value`` as a hashable key: dicts as sorted item tuples, lists as tuples (nested)."""
    if isinstance(value, dict):
        return tuple(sorted((k, frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class SolverRecipe:
    """How a worker builds its own solver: a registered spec and its options. Picklable, and
    hashable (workers keep one solver per recipe) with option values such as a ``params`` dict."""

    spec: SolverSpec
    options: tuple[tuple[str, Any], ...] = ()

    def __hash__(self) -> int:
        return hash((self.spec, frozen(self.options)))

    @classmethod
    def from_name(cls, name: str, options: dict[str, Any] | None = None) -> SolverRecipe:
        """The registered backend ``name`` with ``options``: the one place a name is resolved."""
        spec, implied = resolve_solver_name(name)
        return cls(spec, tuple(sorted({**implied, **(options or {})}.items())))

    @classmethod
    def from_solver(cls, solver: Solver) -> SolverRecipe | None:
        """How to build another ``solver``: its class with the keyword arguments it was built
        with; None when it was built with positional ones (then nothing can rebuild it)."""
        args, kwargs = solver.arguments
        if args:
            return None
        spec = SolverSpec(name=solver.name or type(solver).__name__, target=type(solver))
        return cls(spec, tuple(sorted(kwargs.items())))

    def create(self) -> Solver:
        return self.spec.create(**dict(self.options))


# --- worker side -----------------------------------------------------------------------------

_worker_state = threading.local()  # per thread; a worker process runs tasks in one thread


def _worker_solver(recipe: SolverRecipe) -> Solver:
    solvers: dict[SolverRecipe, Solver] = getattr(_worker_state, "solvers", None) or {}
    _worker_state.solvers = solvers
    if recipe not in solvers:
        solvers[recipe] = recipe.create()
    return solvers[recipe]


def run_task(recipe: SolverRecipe, task: Task) -> list[SolveResult | TaskFailure]:
    """Solve every batch of a task with this worker's persistent solver."""
    return solve_task(_worker_solver(recipe), task)


def solve_task(solver: Solver, task: Task) -> list[SolveResult | TaskFailure]:
    """Solve every batch of a task with ``solver``; a failing batch becomes a TaskFailure."""
    results: list[SolveResult | TaskFailure] = []
    for _, batch in task:
        try:
            results.append(solver.solve(batch))
        except Exception as exc:  # one failing group must not sink the task
            results.append(TaskFailure(f"{type(exc).__name__}: {exc}"))
    return results


def process_worker_init(client_pid: int, more: Any = None, more_args: tuple[Any, ...] = ()) -> None:
    """Workers ignore Ctrl-C (the client handles it), run BLAS on one thread, keep the memory
    their solves free ([`keep_freed_memory`][ilplayer.parallel.malloc.keep_freed_memory]), and exit when the
    client process dies, however it dies. With ``forkserver`` a worker's parent is the fork
    server, which itself waits for its workers, so PR_SET_PDEATHSIG alone would leave orphans:
    watch the client. ``more(*more_args)`` runs after (a pool's own setup)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    one_blas_thread()  # for the life of the worker: its limit is never undone
    keep_freed_memory()
    threading.Thread(
        target=_exit_with, args=(client_pid,), daemon=True, name="ilplayer-client-watch"
    ).start()
    if more is not None:
        more(*more_args)


def default_start_method() -> str:
    """``forkserver`` on Linux (no fork of a process with threads running), else ``spawn``."""
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


def start_process_pool(
    workers: int,
    mp_context: str | None = None,
    *,
    starter: str = "executor='processes'",
    instead: str = "executor='threads' or 'serial'",
    initializer: Any = None,
    initargs: tuple[Any, ...] = (),
) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool whose workers are set up as above (then ``initializer(*initargs)``).

    Refuses to start from the top level of an unguarded main script (``starter`` names what
    started it, ``instead`` what to use without processes): under ``spawn`` and ``forkserver``
    each worker would run that script again.
    """
    context = guarded_context(mp_context, starter, instead)
    pool = concurrent.futures.ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=process_worker_init,
        initargs=(os.getpid(), initializer, initargs),
    )
    main = main_without_a_file()
    if context.get_start_method() != "fork" and main is not None:
        _start_now_without_main(pool, workers, main)
    return pool


def guarded_context(mp_context: str | None, starter: str, instead: str) -> Any:
    """The multiprocessing context to start workers with; refused from an unguarded main script."""
    context = multiprocessing.get_context(mp_context or default_start_method())
    where = unguarded_main_line() if context.get_start_method() != "fork" else None
    if where is not None:
        raise RuntimeError(
            f"{starter} was started from the top level of {where[0]} (line {where[1]}) without an "
            f'`if __name__ == "__main__":` guard. With the {context.get_start_method()!r} start '
            "method every worker process imports that script again and would run it too. Put the "
            f'script\'s code under `if __name__ == "__main__":` (or use {instead}).'
        )
    return context


def _start_now_without_main(
    pool: concurrent.futures.ProcessPoolExecutor, workers: int, main: Any
) -> None:
    """Start every worker now, with the main module's ``__file__`` hidden (`main_file_hidden`)."""
    with main_file_hidden(main):
        futures: list[concurrent.futures.Future[int]] = []
        while len(getattr(pool, "_processes", None) or {}) < workers and len(futures) < workers:
            futures.append(pool.submit(ping, 0))
        for future in futures:
            future.result()


def _exit_with(pid: int) -> None:
    try:
        handle = os.pidfd_open(pid)  # Linux >= 5.3: readable once the process has exited
    except (AttributeError, OSError):
        handle = None
    if handle is not None:
        select.select([handle], [], [])
    else:
        while True:
            time.sleep(0.5)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                continue
    os._exit(1)


def terminate_process_pool(pool: concurrent.futures.Executor) -> None:
    """Stop a process pool now, even mid-task (Ctrl-C, broken pool, close)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)


def ping(_: int) -> int:
    return os.getpid()


class BatchExecutor(ABC):
    """Runs planned tasks on persistent workers. ``run`` returns one entry per task, in order:
    the task's results, or a `TaskFailure` when its worker was lost."""

    kind: str = ""
    workers: int = 1
    auto: AutoDispatch | None = None  # set by executor="auto": each batch goes the faster way

    @abstractmethod
    def run(
        self, recipe: SolverRecipe, tasks: list[Task]
    ) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        """Solve the tasks; never raises for a failed or lost worker."""

    def close(self) -> None:
        """Stop the workers. Safe to call twice."""

    def __enter__(self) -> BatchExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
