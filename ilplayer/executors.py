"""Parallel batch solving: thread and process pools, Ray actors, or any
``concurrent.futures.Executor``.

Workers are persistent: each builds its solver once from a picklable :class:`SolverRecipe` and
keeps it (and so its native models, one per ``(A, b)``) for as long as the pool lives. A batch
is planned into about one task per worker; a task carries whole ``(A, b)`` groups or slices of
one, so ``A`` and ``b`` travel once per task, not once per instance.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
import types
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ilplayer.plugins import SolverSpec, resolve_solver_name
from ilplayer.solver import Solver
from ilplayer.types import Capability, ILPBatch, SolveResult

__all__ = [
    "EXECUTORS",
    "AutoDispatch",
    "BatchExecutor",
    "FuturesExecutor",
    "RayExecutor",
    "SolverRecipe",
    "TaskFailure",
    "default_workers",
    "make_executor",
    "plan_tasks",
    "run_task",
    "solve_task",
]

EXECUTORS = ("auto", "serial", "threads", "processes", "ray")
Task = list[tuple[np.ndarray, ILPBatch]]


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class SolverRecipe:
    """How a worker builds its own solver: a registered spec and its options. Picklable."""

    spec: SolverSpec
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_name(cls, name: str, options: dict[str, Any] | None = None) -> SolverRecipe:
        spec, implied = resolve_solver_name(name)
        return cls(spec, tuple(sorted({**implied, **(options or {})}.items())))

    def create(self) -> Solver:
        return self.spec.create(**dict(self.options))


@dataclass(frozen=True)
class TaskFailure:
    """A task whose worker raised or died; its instances become ``Status.ERROR``."""

    message: str


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


# Workers run NumPy's BLAS on one thread. The products they make (the search around a start:
# candidates x variables x rows) are too small to gain from more, and BLAS threads on top of
# the workers themselves oversubscribe the cores: HiGHS, dense m=4, B=256, two worker
# processes 1.31x serial with OpenBLAS' default threads, 1.80x with one (docs/records/parallel.md).
_blas_controller: Any = None
_blas_scanned_modules = -1  # len(sys.modules) when the loaded libraries were scanned


def one_blas_thread() -> Any:
    """A context manager that limits every loaded BLAS to one thread (threadpoolctl).

    Scanning the loaded libraries takes ~ms, so the scan is kept until a module has been
    imported since: a BLAS that came with it (scipy's, after a thread pool had already run)
    escaped the limit of a scan taken before it was loaded.
    """
    global _blas_controller, _blas_scanned_modules
    if _blas_controller is None or len(sys.modules) != _blas_scanned_modules:
        from threadpoolctl import ThreadpoolController

        _blas_controller = ThreadpoolController()
        _blas_scanned_modules = len(sys.modules)
    return _blas_controller.limit(limits=1, user_api="blas")


def _process_worker_init(client_pid: int, more: Any = None, more_args: tuple[Any, ...] = ()) -> None:
    """Workers ignore Ctrl-C (the client handles it), run BLAS on one thread, and exit when the
    client process dies, however it dies. With ``forkserver`` a worker's parent is the fork
    server, which itself waits for its workers, so PR_SET_PDEATHSIG alone would leave orphans:
    watch the client. ``more(*more_args)`` runs after (a pool's own setup)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    one_blas_thread()  # for the life of the worker: its limit is never undone
    threading.Thread(target=_exit_with, args=(client_pid,), daemon=True,
                     name="ilplayer-client-watch").start()
    if more is not None:
        more(*more_args)


def default_start_method() -> str:
    """``forkserver`` on Linux (no fork of a process with threads running), else ``spawn``."""
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


def start_process_pool(workers: int, mp_context: str | None = None, *, starter: str = "executor='processes'",
                       instead: str = "executor='threads' or 'serial'", initializer: Any = None,
                       initargs: tuple[Any, ...] = ()) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool whose workers are set up as above (then ``initializer(*initargs)``).

    Refuses to start from the top level of an unguarded main script (``starter`` names what
    started it, ``instead`` what to use without processes): under ``spawn`` and ``forkserver``
    each worker would run that script again.
    """
    context = multiprocessing.get_context(mp_context or default_start_method())
    where = unguarded_main_line() if context.get_start_method() != "fork" else None
    if where is not None:
        raise RuntimeError(
            f"{starter} was started from the top level of {where[0]} (line {where[1]}) without an "
            f"`if __name__ == \"__main__\":` guard. With the {context.get_start_method()!r} start "
            "method every worker process imports that script again and would run it too. Put the "
            f"script's code under `if __name__ == \"__main__\":` (or use {instead}).")
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_process_worker_init,
                                                  initargs=(os.getpid(), initializer, initargs))
    if context.get_start_method() != "fork" and _main_without_a_file() is not None:
        _start_now_without_main(pool, workers)
    return pool


def _main_without_a_file() -> Any:
    """The main module when it names a file that is not there (a script read from stdin:
    ``__file__`` is ``'<stdin>'``), else None. ``python -c`` and notebooks name no file."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None or os.path.isfile(path):
        return None
    return main


def _start_now_without_main(pool: concurrent.futures.ProcessPoolExecutor, workers: int) -> None:
    """Start every worker now, with the main module's ``__file__`` hidden.

    A ``spawn`` or ``forkserver`` worker runs the main script's file again before it takes
    tasks; for ``'<stdin>'`` it died on FileNotFoundError and every row came back ERROR. The
    workers need nothing from the main module (their tasks are ilplayer's functions), so they
    are started while it names no file, as for ``python -c``.
    """
    main = _main_without_a_file()
    path = main.__file__
    del main.__file__
    try:
        futures: list[concurrent.futures.Future[int]] = []
        while len(getattr(pool, "_processes", None) or {}) < workers and len(futures) < workers:
            futures.append(pool.submit(_ping, 0))
        for future in futures:
            future.result()
    finally:
        main.__file__ = path


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


# --- the main-module guard ------------------------------------------------------------------

def unguarded_main_line() -> tuple[str, int] | None:
    """``(script, line)`` when this call comes from the main script's top-level code outside an
    ``if __name__ == "__main__":`` block; None when it does not, or when that cannot be told
    (an interactive session, ``python -c``, a notebook).

    Under ``spawn`` and ``forkserver`` every worker imports the main script again: top-level
    code that starts a pool then runs again in each worker, which dies while starting up.
    """
    import ast

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path or not os.path.isfile(path):
        return None
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None  # not reached from the main script's top level
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) \
                and "__name__" in ast.unparse(node.test) \
                and node.lineno <= line <= (node.end_lineno or node.lineno):
            return None
    return path, line


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


# --- executors -------------------------------------------------------------------------------

class BatchExecutor(ABC):
    """Runs planned tasks on persistent workers. ``run`` returns one entry per task, in order:
    the task's results, or a :class:`TaskFailure` when its worker was lost."""

    kind: str = ""
    workers: int = 1
    auto: AutoDispatch | None = None  # set by executor="auto": each batch goes the faster way

    @abstractmethod
    def run(self, recipe: SolverRecipe, tasks: list[Task]) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        """Solve the tasks; never raises for a failed or lost worker."""

    def close(self) -> None:
        """Stop the workers. Safe to call twice."""

    def __enter__(self) -> BatchExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _terminate_process_pool(pool: concurrent.futures.Executor) -> None:
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


class AutoDispatch:
    """``executor="auto"``'s choice per batch: the workers or the calling thread, whichever has
    been faster per instance.

    Threads help only where the native solve dominates: a batch of sub-millisecond instances
    whose time goes to Python (building models, the search around a start) holds the GIL
    and runs no faster on two threads, and a busy machine may leave no second core. So both
    ways are measured as moving averages of seconds per instance: the first two batches are
    serial, the next two parallel, then the faster way is used and the other is re-measured
    every ``probe_every``-th batch, so the choice follows the instances as training changes
    them. The first batch of each way is not timed: it starts the pool and builds each
    worker's native models with no warm starts, and timed it made the workers look twice as
    slow as they were (CP-SAT, dense m=4, B=64: 3.7 against 1.6 ms per instance), which the
    probes' moving average took ~100 batches to forget.
    """

    def __init__(self, probe_every: int = 16, weight: float = 0.25) -> None:
        self.probe_every, self.weight = probe_every, weight
        self.seconds_per_instance: dict[bool, float] = {}  # parallel? -> moving average
        self._warmed: set[bool] = set()  # the ways whose warm-up batch has run
        self._batches = 0

    def parallel(self) -> bool:
        """Whether the next batch goes to the workers."""
        for way in (False, True):
            if way not in self.seconds_per_instance:
                return way
        self._batches += 1
        faster = self.seconds_per_instance[True] < self.seconds_per_instance[False]
        return faster if self._batches % self.probe_every else not faster

    def record(self, parallel: bool, seconds: float, instances: int) -> None:
        if parallel not in self._warmed:
            self._warmed.add(parallel)
            return
        if instances:
            rate, last = seconds / instances, self.seconds_per_instance.get(parallel)
            self.seconds_per_instance[parallel] = rate if last is None else last + self.weight * (rate - last)


class FuturesExecutor(BatchExecutor):
    """Any ``concurrent.futures.Executor``: ilplayer's own thread and process pools, or yours
    (a Dask client's executor, ...). Pools that ilplayer created are rebuilt when broken and
    shut down by :meth:`close`; yours are left to you.

    ilplayer's own pools are one single-worker pool per worker ("lanes"), and task ``j`` of
    every batch goes to lane ``j``: the same slice of a batch meets the same worker, whose
    solver holds the previous answers of those instances as warm starts. With one shared pool
    a task went to whichever worker was free, and a worker that met the other half of the batch
    solved it as if it were new (CP-SAT, dense m=4, B=256: 220 against 130 ms per batch,
    docs/parallel.md). Your pool gets the tasks as it schedules them.
    """

    def __init__(self, pool: concurrent.futures.Executor | None = None, *, kind: str = "executor",
                 workers: int | None = None, mp_context: str | None = None,
                 auto: AutoDispatch | None = None) -> None:
        self.kind = kind
        self.auto = auto
        self.workers = workers or getattr(pool, "_max_workers", None) or default_workers()
        self.mp_context = mp_context
        self._owned = pool is None
        self._pool = pool
        self._lanes: list[concurrent.futures.Executor | None] = [None] * self.workers
        if self._owned:  # workers stop with the executor, closed or not
            weakref.finalize(self, _shutdown_lanes, self._lanes, kind)

    def _make_lane(self, index: int) -> concurrent.futures.Executor:
        if self.kind == "threads":
            return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"ilplayer-lane{index}")
        return start_process_pool(1, self.mp_context)

    def lane(self, index: int) -> concurrent.futures.Executor:
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
        return [pid for lane in self._lanes if lane is not None
                for pid in (getattr(lane, "_processes", None) or {})]

    def start(self) -> None:
        """Start every worker now (otherwise they start with the first batch)."""
        for future in [self.lane(i).submit(_ping, i) for i in range(self.workers)]:
            future.result()

    def run(self, recipe: SolverRecipe, tasks: list[Task]) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        if self.kind == "threads":  # BLAS's threads are the process's: limited while ours run
            with one_blas_thread():
                return self._run(recipe, tasks)
        return self._run(recipe, tasks)

    def _run(self, recipe: SolverRecipe, tasks: list[Task]) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        futures: list[tuple[int, concurrent.futures.Future | TaskFailure]] = []
        broken: set[int] = set()  # lanes to replace before the next batch
        for index, task in enumerate(tasks):
            try:
                futures.append((index, self.lane(index).submit(run_task, recipe, task)))
            except concurrent.futures.BrokenExecutor as exc:  # died before this batch
                broken.add(index % self.workers)
                futures.append((index, TaskFailure(f"worker lost ({type(exc).__name__}: {exc})")))
        results: list[list[SolveResult | TaskFailure] | TaskFailure] = []
        try:
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
                    _shutdown_pool(lane, self.kind)
        return results

    def close(self) -> None:
        if self._owned:
            _shutdown_lanes(self._lanes, self.kind)


def _ping(_: int) -> int:
    return os.getpid()


def _shutdown_lanes(lanes: list[concurrent.futures.Executor | None], kind: str) -> None:
    """Stop every lane's worker (a process is terminated, not waited for) and empty the lanes."""
    pools = [lane for lane in lanes if lane is not None]
    lanes[:] = [None] * len(lanes)
    for pool in pools:
        _shutdown_pool(pool, kind)


def _shutdown_pool(pool: concurrent.futures.Executor, kind: str) -> None:
    if kind == "processes":
        _terminate_process_pool(pool)
    else:
        pool.shutdown(wait=True, cancel_futures=True)


RAY_TRIES = 3  # runs of one task on different actors before its rows are ERROR


class _RayActorPool:
    """The Ray actors of this process, shared by every :class:`RayExecutor` on one Ray session.

    One actor holds one CPU. With actors per executor, a second executor (a ``solve(...,
    executor="ray")`` whose pool ``solve`` keeps, then a layer) waited forever for CPUs that the
    first one's actors held; shared, they queue their tasks on the same actors, each of which
    keeps a solver per recipe. A lost actor is replaced by a new one, which Ray places where a
    CPU is free (at once, or when a node joins); until it is up, the live ones take its tasks.
    """

    def __init__(self, ray: Any, session: str) -> None:
        self.ray, self.session = ray, session
        self.actors: list[Any] = []
        self.pings: dict[Any, Any] = {}  # actor -> its first ping, until it answered
        self.users = 0
        self.lock = threading.Lock()

    def grow(self, count: int) -> None:
        with self.lock:
            while len(self.actors) < count:
                self._add()

    def _add(self) -> None:
        actor = self.ray.remote(num_cpus=1, max_restarts=0)(_RayWorker).options(
            scheduling_strategy="SPREAD").remote()
        self.actors.append(actor)
        self.pings[actor] = actor.ping.remote()

    def lost(self, actor: Any) -> None:
        """Replace ``actor`` (dead, or on a lost node) by a new one."""
        with self.lock:
            if actor not in self.actors:
                return  # already replaced after another of its tasks
            self.actors[self.actors.index(actor)] = self.actors[-1]
            self.actors.pop()
            self.pings.pop(actor, None)
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)
            self._add()

    def ready(self, count: int, timeout: float) -> list[Any]:
        """Up to ``count`` actors that have answered, waiting up to ``timeout`` seconds for the
        first one when none has."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                waiting = list(self.pings.items())
            if waiting:
                refs = [ref for _, ref in waiting]
                done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
                for actor, ref in waiting:
                    if ref in done:
                        try:
                            self.ray.get(ref)
                            with self.lock:
                                self.pings.pop(actor, None)
                        except self.ray.exceptions.RayError:
                            self.lost(actor)
            with self.lock:
                up = [a for a in self.actors if a not in self.pings][:count]
                waiting = list(self.pings.values())
            left = deadline - time.monotonic()
            if up or left <= 0 or not waiting:
                return up
            self.ray.wait(waiting, num_returns=1, timeout=min(left, 1.0))

    def close(self) -> None:
        with self.lock:
            actors, self.actors = self.actors, []
            self.pings.clear()
        for actor in actors:
            with contextlib.suppress(Exception):  # already dead, or Ray already shut down
                self.ray.kill(actor, no_restart=True)


_ray_pools: dict[str, _RayActorPool] = {}
_ray_pools_lock = threading.Lock()


class RayExecutor(BatchExecutor):
    """Ray actors that each hold a persistent solver. Uses the running Ray cluster (or the one
    at ``address``), or starts a local one; ``workers`` defaults to the cluster's CPUs.

    Every Ray executor of a process shares its actors (:class:`_RayActorPool`). A task whose
    actor dies or whose node is lost runs again on another live actor (up to ``RAY_TRIES``
    runs); its rows are ``Status.ERROR`` only when no actor answers within ``wait_s`` seconds.
    """

    kind = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, wait_s: float = 60.0) -> None:
        self.requested_workers = workers
        self.address = address
        self.wait_s = wait_s
        self._pool: _RayActorPool | None = None
        self._count = 0
        self._ray: Any = None

    @property
    def workers(self) -> int:  # type: ignore[override]
        return self._count or self.requested_workers or default_workers()

    @property
    def _actors(self) -> list[Any]:
        """The actors this executor uses (the first ``workers`` of the shared pool)."""
        return [] if self._pool is None else self._pool.actors[:self._count]

    def _ensure_pool(self) -> _RayActorPool:
        if self._pool is not None and self._ray.is_initialized() and \
                self._pool.session == self._ray.get_runtime_context().get_session_name():
            return self._pool
        try:
            import ray
        except ImportError as exc:
            raise ImportError("executor='ray' needs Ray: pip install 'ilplayer[ray]'") from exc
        self._ray = ray
        if not ray.is_initialized():
            if self.address is not None:
                ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False)
            else:
                ray.init(num_cpus=self.requested_workers, include_dashboard=False,
                         logging_level=logging.ERROR, log_to_driver=False)
        session = ray.get_runtime_context().get_session_name()
        with _ray_pools_lock:
            for old in [k for k in _ray_pools if k != session]:  # Ray was shut down and restarted
                _ray_pools.pop(old)
            pool = _ray_pools.get(session)
            if pool is None:
                pool = _ray_pools[session] = _RayActorPool(ray, session)
            pool.users += 1
        self._pool = pool
        self._count = self.requested_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        pool.grow(self._count)
        return pool

    def start(self) -> None:
        """Start Ray (if needed) and wait until this executor's actors are up (at most
        ``wait_s`` seconds; at least one must be)."""
        pool = self._ensure_pool()
        deadline = time.monotonic() + self.wait_s
        while len(pool.ready(self._count, 0)) < self._count and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pool.ready(self._count, 0):
            raise RuntimeError(f"executor='ray': no Ray actor started within {self.wait_s} s; the "
                               f"cluster has {self._ray.available_resources().get('CPU', 0)} free CPUs")

    def run(self, recipe: SolverRecipe, tasks: list[Task]) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        pool = self._ensure_pool()
        ray = self._ray
        results: list[Any] = [None] * len(tasks)
        pending: dict[Any, tuple[int, Any, int]] = {}  # ref -> (task, actor, runs so far)

        def submit(index: int, runs: int, reason: str) -> None:
            actors = pool.ready(self._count, self.wait_s)
            if not actors:
                results[index] = TaskFailure(f"{reason}; no Ray actor answered within {self.wait_s} s "
                                             f"(free CPUs: {ray.available_resources().get('CPU', 0)})")
                return
            actor = actors[index % len(actors)]
            pending[actor.run.remote(recipe, tasks[index])] = (index, actor, runs + 1)

        for index in range(len(tasks)):
            submit(index, 0, "no Ray worker")
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index, actor, runs = pending.pop(done[0])
            try:
                results[index] = ray.get(done[0])
            except ray.exceptions.RayTaskError as exc:  # the task itself failed, not its worker
                results[index] = TaskFailure(f"{type(exc).__name__}: {exc}")
            except ray.exceptions.RayError as exc:  # its actor or node was lost: run it elsewhere
                pool.lost(actor)
                reason = f"Ray worker lost ({type(exc).__name__}: {exc})"
                if runs >= RAY_TRIES:
                    results[index] = TaskFailure(f"{reason}, {runs} times")
                else:
                    submit(index, runs, reason)
        return results

    def close(self) -> None:
        """Leave the shared actors; the last executor to leave stops them. Safe to call twice."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        with _ray_pools_lock:
            pool.users -= 1
            last = pool.users == 0
            if last and _ray_pools.get(pool.session) is pool:
                _ray_pools.pop(pool.session)
        if last:
            pool.close()


class _RayWorker:
    """A Ray actor body: a worker with persistent solvers, BLAS on one thread."""

    def __init__(self) -> None:
        one_blas_thread()

    def ping(self) -> int:
        return os.getpid()

    def run(self, recipe: SolverRecipe, task: Task) -> list[SolveResult | TaskFailure]:
        return run_task(recipe, task)


ExecutorLike = Union[str, BatchExecutor, concurrent.futures.Executor, None]


def make_executor(executor: ExecutorLike, workers: int | None, solver: Solver,
                  mp_context: str | None = None, by_name: bool = True) -> BatchExecutor | None:
    """The executor to use for ``solver``; ``None`` means solve serially in this thread.

    ``"auto"`` (or None): threads when the backend releases the GIL, more than one worker is
    available and the solver was given by name (workers build their own instances), else
    serial; then each batch goes to the threads or stays in the calling thread, whichever has
    been faster (:class:`AutoDispatch`). Device-native backends solve the whole batch in one
    call and use no executor.
    """
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    if isinstance(executor, (BatchExecutor, concurrent.futures.Executor)) and not by_name:
        raise ValueError("a parallel executor needs the solver by name (each worker builds its "
                         "own instance from the registered spec), not a Solver object")
    if isinstance(executor, BatchExecutor):
        return executor
    if isinstance(executor, concurrent.futures.Executor):
        return FuturesExecutor(executor, workers=workers)
    if executor is None:
        executor = "auto"
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS} or a concurrent.futures.Executor, "
                         f"got {executor!r}")
    if Capability.DEVICE_TENSORS in solver.capabilities or executor == "serial":
        return None
    if not by_name:
        if executor == "auto":
            return None
        raise ValueError(f"executor={executor!r} needs the solver by name (each worker builds its "
                         "own instance from the registered spec), not a Solver object")
    count = workers or default_workers()
    releases_gil = Capability.RELEASES_GIL in solver.capabilities
    if executor == "auto":
        if not (releases_gil and count > 1):
            return None
        return FuturesExecutor(kind="threads", workers=count, auto=AutoDispatch())
    if executor == "threads":
        if not releases_gil:
            raise ValueError(f"executor='threads': solver {solver.name!r} holds the GIL while "
                             "solving, so threads would run one at a time; use "
                             "executor='processes'")
        return FuturesExecutor(kind="threads", workers=count)
    if executor == "processes":
        method = mp_context or default_start_method()
        if method not in multiprocessing.get_all_start_methods():
            raise ValueError(f"mp_context must be one of {multiprocessing.get_all_start_methods()}, "
                             f"got {method!r}")
        return FuturesExecutor(kind="processes", workers=count, mp_context=method)
    return RayExecutor(workers=workers)
