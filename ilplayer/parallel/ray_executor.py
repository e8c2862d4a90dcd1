"""``executor="ray"``: Ray actors that each keep a persistent solver, shared by every Ray
executor of a process, and that survive a lost node (`RayExecutor`)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any

from ilplayer.core.records import SolveResult, TaskFailure
from ilplayer.core.threads import one_blas_thread
from ilplayer.parallel.malloc import keep_freed_memory
from ilplayer.parallel.workers import (
    BatchExecutor,
    SolverRecipe,
    Task,
    default_workers,
    run_task,
)

__all__ = ["RAY_TRIES", "RayExecutor"]


RAY_TRIES = 3  # runs of one task on different actors before its rows are ERROR


class _RayActors:
    """The Ray actors of this process, shared by every `RayExecutor` on one Ray session.

    One actor holds one CPU. With actors per executor, a second executor (a ``solve(...,
    executor="ray")`` whose actors ``solve`` keeps, then a layer) waited forever for CPUs that the
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
        actor = (
            self.ray.remote(num_cpus=1, max_restarts=0)(_RayWorker)
            .options(scheduling_strategy="SPREAD")
            .remote()
        )
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


_ray_actors: dict[str, _RayActors] = {}
_ray_actors_lock = threading.Lock()


class RayExecutor(BatchExecutor):
    """Ray actors that each hold a persistent solver. Uses Ray as this process runs it, else
    the cluster at ``address`` (or ``RAY_ADDRESS``), else starts a local one of its own (never
    one that happens to run on the machine); ``workers`` defaults to the cluster's CPUs.

    Every Ray executor of a process shares its actors (`_RayActors`). A task whose
    actor dies or whose node is lost runs again on another live actor (up to ``RAY_TRIES``
    runs); its rows are ``Status.ERROR`` only when no actor answers within ``wait_s`` seconds.
    """

    kind = "ray"

    def __init__(
        self, workers: int | None = None, address: str | None = None, wait_s: float = 60.0
    ) -> None:
        self.requested_workers = workers
        self.address = address
        self.wait_s = wait_s
        self._shared: _RayActors | None = None
        self._count = 0
        self._ray: Any = None

    @property
    def workers(self) -> int:  # type: ignore[override]
        return self._count or self.requested_workers or default_workers()

    @property
    def _actors(self) -> list[Any]:
        """The actors this executor uses (the first ``workers`` of the shared actors)."""
        return [] if self._shared is None else self._shared.actors[: self._count]

    def _ensure_shared(self) -> _RayActors:
        if (
            self._shared is not None
            and self._ray.is_initialized()
            and self._shared.session == self._ray.get_runtime_context().get_session_name()
        ):
            return self._shared
        try:
            import ray
        except ImportError as exc:
            raise ImportError("executor='ray' needs Ray: pip install 'ilplayer[ray]'") from exc
        self._ray = ray
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS")
            if address:
                ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
            else:
                # address="local": a new local instance; without it Ray joins any cluster
                # started on this machine (a test's, another user's) and refuses num_cpus.
                ray.init(
                    address="local",
                    num_cpus=self.requested_workers,
                    include_dashboard=False,
                    logging_level=logging.ERROR,
                    log_to_driver=False,
                )
        session = ray.get_runtime_context().get_session_name()
        with _ray_actors_lock:
            for old in [k for k in _ray_actors if k != session]:  # Ray was shut down and restarted
                _ray_actors.pop(old)
            shared = _ray_actors.get(session)
            if shared is None:
                shared = _ray_actors[session] = _RayActors(ray, session)
            shared.users += 1
        self._shared = shared
        self._count = self.requested_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        shared.grow(self._count)
        return shared

    def start(self) -> None:
        """Start Ray (if needed) and wait until this executor's actors are up (at most
        ``wait_s`` seconds; at least one must be)."""
        shared = self._ensure_shared()
        deadline = time.monotonic() + self.wait_s
        while len(shared.ready(self._count, 0)) < self._count and time.monotonic() < deadline:
            time.sleep(0.05)
        if not shared.ready(self._count, 0):
            raise RuntimeError(
                f"executor='ray': no Ray actor started within {self.wait_s} s; the "
                f"cluster has {self._ray.available_resources().get('CPU', 0)} free CPUs"
            )

    def run(
        self, recipe: SolverRecipe, tasks: list[Task]
    ) -> list[list[SolveResult | TaskFailure] | TaskFailure]:
        shared = self._ensure_shared()
        ray = self._ray
        results: list[Any] = [None] * len(tasks)
        pending: dict[Any, tuple[int, Any, int]] = {}  # ref -> (task, actor, runs so far)

        def submit(index: int, runs: int, reason: str) -> None:
            actors = shared.ready(self._count, self.wait_s)
            if not actors:
                results[index] = TaskFailure(
                    f"{reason}; no Ray actor answered within {self.wait_s} s "
                    f"(free CPUs: {ray.available_resources().get('CPU', 0)})"
                )
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
                shared.lost(actor)
                reason = f"Ray worker lost ({type(exc).__name__}: {exc})"
                if runs >= RAY_TRIES:
                    results[index] = TaskFailure(f"{reason}, {runs} times")
                else:
                    submit(index, runs, reason)
        return results

    def close(self) -> None:
        """Leave the shared actors; the last executor to leave stops them. Safe to call twice."""
        shared, self._shared = self._shared, None
        if shared is None:
            return
        with _ray_actors_lock:
            shared.users -= 1
            last = shared.users == 0
            if last and _ray_actors.get(shared.session) is shared:
                _ray_actors.pop(shared.session)
        if last:
            shared.close()


class _RayWorker:
    """A Ray actor body: a worker with persistent solvers, BLAS on one thread, the memory its
    solves free kept (as a process shared's workers)."""

    def __init__(self) -> None:
        one_blas_thread()
        keep_freed_memory()

    def ping(self) -> int:
        return os.getpid()

    def run(self, recipe: SolverRecipe, task: Task) -> list[SolveResult | TaskFailure]:
        return run_task(recipe, task)
