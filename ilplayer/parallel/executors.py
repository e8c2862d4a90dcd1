"""Parallel batch solving: thread and process pools, Ray actors, or any
``concurrent.futures.Executor``; which one a name makes (`make_executor`).

Workers are persistent: each builds its solver once from a picklable `SolverRecipe` and
keeps it (and so its native models, one per ``(A, b)``) for as long as the pool lives
(`ilplayer.parallel.workers`). A batch is planned into about one task per worker; a task carries
whole ``(A, b)`` groups or slices of one, so ``A`` and ``b`` travel once per task, not once per
instance. Ray's executor is `ilplayer.parallel.ray_executor`.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import warnings
import weakref
from typing import Union

import numpy as np

from ilplayer.core.records import Capability, ILPBatch, SolveResult, TaskFailure
from ilplayer.core.threads import one_blas_thread
from ilplayer.parallel.auto import AutoDispatch
from ilplayer.parallel.lanes import LaneFuture, ProcessLane
from ilplayer.parallel.ray_executor import RayExecutor
from ilplayer.parallel.workers import (
    BatchExecutor,
    SolverRecipe,
    Task,
    default_start_method,
    default_workers,
    ping,
    run_task,
)
from ilplayer.solvers.contract import Solver

__all__ = [
    "EXECUTORS",
    "ExecutorLike",
    "FuturesExecutor",
    "make_executor",
    "plan_tasks",
]

EXECUTORS = ("auto", "serial", "threads", "processes", "ray")


# --- planning --------------------------------------------------------------------------------


def plan_tasks(groups: list[tuple[np.ndarray, ILPBatch]], workers: int) -> list[Task]:
    """About ``workers`` tasks of about ``batch / workers`` instances each.

    A large group is sliced (its ``A, b`` then travel once per slice); small groups are packed
    together. One task per instance would cost more than a sub-millisecond solve.
    """
    total = sum(len(rows) for rows, _ in groups)
    target = max(1, math.ceil(total / max(1, workers)))
    tasks: list[Task] = []
    current: Task = []
    size = 0
    for rows, batch in groups:
        start = 0
        while start < len(rows):
            take = min(len(rows) - start, target - size)  # fill the current task exactly
            if take == len(rows):
                current.append((rows, batch))
            else:
                piece = slice(start, start + take)
                current.append((rows[piece], batch.with_rows(c=batch.c[piece])))
            start += take
            size += take
            if size == target:
                tasks.append(current)
                current, size = [], 0
    if current:
        tasks.append(current)
    return tasks


Lane = Union[concurrent.futures.Executor, ProcessLane]  # runs task j of each batch


class FuturesExecutor(BatchExecutor):
    """Any ``concurrent.futures.Executor``: ilplayer's own thread and process pools, or yours
    (a Dask client's executor, ...). Pools that ilplayer created are rebuilt when broken and
    shut down by `close`; yours are left to you.

    ilplayer's own pools are one worker per "lane" (a single-worker thread pool, or a process
    fed through its own pipe: `ProcessLane`), and task ``j`` of
    every batch goes to lane ``j``: the same slice of a batch meets the same worker, whose
    solver holds the previous answers of those instances as warm starts. With one shared pool
    a task went to whichever worker was free, and a worker that met the other half of the batch
    solved it as if it were new (docs/records/parallel.md). Your pool gets the tasks as it
    schedules them.
    """

    def __init__(
        self,
        pool: concurrent.futures.Executor | None = None,
        *,
        kind: str = "executor",
        workers: int | None = None,
        mp_context: str | None = None,
        auto: AutoDispatch | None = None,
    ) -> None:
        self.kind = kind
        self.auto = auto
        self.workers = workers or getattr(pool, "_max_workers", None) or default_workers()
        self.mp_context = mp_context
        self._owned = pool is None
        self._pool = pool
        self._lanes: list[Lane | None] = [None] * self.workers
        if self._owned:  # workers stop with the executor, closed or not
            weakref.finalize(self, _shutdown_lanes, self._lanes)

    def _make_lane(self, index: int) -> Lane:
        if self.kind == "threads":
            return concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix=f"ilplayer-lane{index}"
            )
        return ProcessLane(self.mp_context)

    def lane(self, index: int) -> Lane:
        """The pool that runs task ``index`` of each batch (yours, for every task)."""
        if not self._owned:
            assert self._pool is not None
            return self._pool
        index %= self.workers
        lane = self._lanes[index]
        if lane is None:
            lane = self._lanes[index] = self._make_lane(index)
        return lane

    def worker_pids(self) -> list[int]:
        """The process ids of an ilplayer process pool's running workers (started ones only)."""
        return [
            lane.pid
            for lane in self._lanes
            if isinstance(lane, ProcessLane) and lane.pid is not None
        ]

    def start(self) -> None:
        """Start every worker now (otherwise they start with the first batch)."""
        for future in [self.lane(i).submit(ping, i) for i in range(self.workers)]:
            future.result()

    def run(
        self, recipe: SolverRecipe, tasks: list[Task]
    ) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        if self.kind == "processes" and self._owned and multiprocessing.current_process().daemon:
            # A daemonic process (a DataLoader worker) cannot have children: threads, said once.
            warnings.warn(
                "executor='processes': this is a daemonic process (a DataLoader worker?), which cannot "
                "start worker processes; its batches are solved in threads instead",
                RuntimeWarning,
                stacklevel=4,
            )
            self.kind = "threads"
        if self.kind == "threads":  # BLAS's threads are the process's: limited while ours run
            with one_blas_thread():
                return self._run(recipe, tasks)
        return self._run(recipe, tasks)

    def _run(
        self, recipe: SolverRecipe, tasks: list[Task]
    ) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        futures: list[tuple[int, concurrent.futures.Future | LaneFuture | TaskFailure]] = []
        broken: set[int] = set()  # lanes to replace before the next batch
        results: list[list[SolveResult | TaskFailure] | TaskFailure] = []
        try:  # a Ctrl-C while tasks are still being sent stops the workers too
            for index, task in enumerate(tasks):
                try:
                    futures.append((index, self.lane(index).submit(run_task, recipe, task)))
                except concurrent.futures.BrokenExecutor as exc:  # died before this batch
                    broken.add(index % self.workers)
                    failure = TaskFailure(f"worker lost ({type(exc).__name__}: {exc})")
                    futures.append((index, failure))
            for index, future in futures:
                if isinstance(future, TaskFailure):
                    results.append(future)
                    continue
                try:
                    results.append(future.result())
                except concurrent.futures.BrokenExecutor as exc:
                    broken.add(index % self.workers)
                    results.append(TaskFailure(f"worker lost ({type(exc).__name__}: {exc})"))
                except Exception as exc:  # e.g. the recipe or a batch cannot be pickled
                    results.append(TaskFailure(f"{type(exc).__name__}: {exc}"))
        except BaseException:  # Ctrl-C: stop the workers now, leave no orphans
            if self._owned:
                self.close()
            raise
        if self._owned:
            for index in broken:  # the next batch gets a fresh worker there
                lane, self._lanes[index] = self._lanes[index], None
                if lane is not None:
                    _shutdown_lane(lane)
        return results

    def close(self) -> None:
        if self._owned:
            _shutdown_lanes(self._lanes)


def _shutdown_lanes(lanes: list[Lane | None]) -> None:
    """Stop every lane's worker (a process is terminated, not waited for) and empty the lanes."""
    started = [lane for lane in lanes if lane is not None]
    lanes[:] = [None] * len(lanes)
    for lane in started:
        _shutdown_lane(lane)


def _shutdown_lane(lane: Lane) -> None:
    if isinstance(lane, ProcessLane):
        lane.terminate()
    else:
        lane.shutdown(wait=True, cancel_futures=True)


ExecutorLike = Union[str, BatchExecutor, concurrent.futures.Executor, None]


_NOT_REBUILDABLE = (
    "needs a solver its workers can build again: a name, or a Solver built with keyword "
    "arguments only (each worker builds its own instance from them)"
)


def make_executor(
    executor: ExecutorLike,
    workers: int | None,
    solver: Solver,
    recipe: SolverRecipe | None,
    mp_context: str | None = None,
) -> BatchExecutor | None:
    """The executor to use for ``solver``, whose workers build their own from ``recipe``
    (None: it cannot be rebuilt); ``None`` means solve serially in this thread.

    ``"auto"`` (or None): threads when the backend releases the GIL, more than one worker is
    available and the workers can build the solver, else serial; then each batch goes to the
    threads or stays in the calling thread, whichever has been faster (`AutoDispatch`).
    Device-native backends solve the whole batch in one call and use no executor.
    """
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    if isinstance(executor, (BatchExecutor, concurrent.futures.Executor)) and recipe is None:
        raise ValueError(f"a parallel executor {_NOT_REBUILDABLE}")
    if isinstance(executor, BatchExecutor):
        return executor
    if isinstance(executor, concurrent.futures.Executor):
        return FuturesExecutor(executor, workers=workers)
    if executor is None:
        executor = "auto"
    if executor not in EXECUTORS:
        raise ValueError(
            f"executor must be one of {EXECUTORS} or a concurrent.futures.Executor, "
            f"got {executor!r}"
        )
    if Capability.DEVICE_TENSORS in solver.capabilities or executor == "serial":
        return None
    if recipe is None:
        if executor == "auto":
            return None
        raise ValueError(f"executor={executor!r} {_NOT_REBUILDABLE}")
    count = workers or default_workers()
    releases_gil = Capability.RELEASES_GIL in solver.capabilities
    if executor == "auto":
        if not (releases_gil and count > 1):
            return None
        return FuturesExecutor(kind="threads", workers=count, auto=AutoDispatch())
    if executor == "threads":
        if not releases_gil:
            raise ValueError(
                f"executor='threads': solver {solver.name!r} holds the GIL while "
                "solving, so threads would run one at a time; use "
                "executor='processes'"
            )
        return FuturesExecutor(kind="threads", workers=count)
    if executor == "processes":
        method = mp_context or default_start_method()
        if method not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"mp_context must be one of {multiprocessing.get_all_start_methods()}, "
                f"got {method!r}"
            )
        return FuturesExecutor(kind="processes", workers=count, mp_context=method)
    return RayExecutor(workers=workers)
