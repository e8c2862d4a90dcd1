"""``ilplayer bench parallel``: serial, thread, process and Ray execution of one batch, beside
the ``ideal`` split (the same tasks in bare processes, no pool): the machine's ceiling."""

from __future__ import annotations

import multiprocessing
import queue
import statistics
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.records import Capability, ILPBatch, TaskFailure
from ilplayer.core.threads import one_blas_thread
from ilplayer.core.validation import validate_problem
from ilplayer.parallel.backend import Backend
from ilplayer.parallel.dispatch import backend_groups, solve_problem
from ilplayer.parallel.executors import make_executor, plan_tasks
from ilplayer.parallel.malloc import keep_freed_memory
from ilplayer.parallel.workers import (
    SolverRecipe,
    Task,
    default_start_method,
    solve_task,
)
from ilplayer.solvers.registry import get_solver, preferred_backend
from ilplayer.testing.instances import family_batch
from ilplayer_experiments.bench.solvers import rotated

PARALLEL_FAMILIES = ("binary m=4", "dense m=4", "set cover")
EXECUTORS = ("serial", "ideal", "threads", "processes", "ray")


def problem_of(data: ILPBatch) -> ProblemTensors:
    """``data`` as the layer would receive it (its arrays as tensors)."""
    tensor = lambda array: torch.from_numpy(np.array(array))  # a writable copy each
    return validate_problem(
        tensor(data.c),
        tensor(data.A),
        tensor(data.b),
        data.lb,
        data.ub,
        tensor(data.A_eq),
        tensor(data.b_eq),
        data.integrality,
    )


def dispatched_groups(data: ILPBatch, capabilities: frozenset[Capability] | SolverRecipe) -> Task:
    """The ``(rows, batch)`` groups the dispatcher sends a backend for ``data``, without the
    instances it answers itself: what a pool's tasks are planned from (``capabilities``: the
    backend's, or a recipe whose solver tells them)."""
    if isinstance(capabilities, SolverRecipe):
        solver = capabilities.create()
        capabilities = solver.capabilities
        solver.close()
    return backend_groups(problem_of(data), capabilities)[0]


def _bare_worker(
    recipe: SolverRecipe,
    task: Any,
    whole: Any,
    index: int,
    workers: int,
    repeats: int,
    barrier: Any,
    results: Any,
) -> None:
    """One worker of the ideal split: its own solver, its task in a loop, no pool around it.

    Each repeat has phases, each started and ended by a barrier that the parent also waits on
    (so it can time other things between repeats while the workers sleep): first all workers
    solve their tasks at once (the timed side by side, which thus follows the other executors'
    batches as a pool's does; timed after each worker's own solve of the same task, with its
    caches warm, it was ~5 % faster), then worker 0 solves the whole batch (``whole``, the
    serial reference), then each worker solves its task while the others wait. Each phase has a
    solver of its own, so the side-by-side solver meets its task as a pool's worker does: once
    per batch, beside the other worker (its warm starts and its timing-driven choices, such as
    whether the search around a start pays, see the same history). A failure is reported, and
    breaks the barrier so that the other workers and the parent stop too."""
    times: dict[str, list[float]] = {"whole": [], "alone": [], "together": []}
    try:
        jobs = {"together": (recipe.create(), task), "alone": (recipe.create(), task)}
        if whole is not None:  # worker 0 also times the whole batch
            jobs["whole"] = (recipe.create(), whole)
        solvers = [solver for solver, _ in jobs.values()]
        keep_freed_memory()  # set up as a pool's worker is: the ideal differs by the pool only
        with one_blas_thread():
            for (
                solver,
                work,
            ) in jobs.values():  # warm-up, as a pool's: native models, pools of starts
                failure = next(
                    (r for r in solve_task(solver, work) if isinstance(r, TaskFailure)), None
                )
                if failure is not None:
                    raise _WorkerFailed(failure.message)
            for _ in range(repeats):
                for phase in _phases(workers):
                    barrier.wait()
                    label = "alone" if phase == index else phase
                    if label in jobs:
                        solver, work = jobs[label]
                        start = time.perf_counter()
                        solve_task(solver, work)
                        times[label].append(time.perf_counter() - start)
                    barrier.wait()
        for solver in solvers:
            solver.close()
    except Exception as exc:  # reported to the parent, which raises it
        barrier.abort()
        results.put(
            (index, str(exc) if isinstance(exc, _WorkerFailed) else f"{type(exc).__name__}: {exc}")
        )
        return
    results.put((index, times))


def _phases(workers: int) -> list[Any]:
    return ["together", "whole", *range(workers)]


class _WorkerFailed(Exception):
    """A task of the ideal split failed; its message is already the task's."""


class IdealSplit:
    """The ceiling of a parallel solve on this machine: the batch cut into the tasks a pool gets,
    each solved by its own bare process in a loop (no pool, no transfers, no layer around it).

    The tasks are the pool's own: the groups the dispatcher sends a backend with these
    ``capabilities`` (default: those of a solver built from ``recipe``), without the
    instances it answers itself (a box optimum that meets the rows), cut by the same plan.
    Until 2026-11-27 the ideal solved every instance of the batch, the pool only those the
    dispatcher sends: dense m=4 (B=256) 256 against 222, two different splits of the work.
    Its workers are set up as a pool's are (one BLAS thread,
    [`keep_freed_memory`][ilplayer.parallel.malloc.keep_freed_memory]).

    ``start()`` launches the workers (they warm up), each ``repeat()`` runs one round of
    phases while the caller waits, and ``finish()`` returns, as medians over the repeats: the
    slowest task's seconds side by side (``seconds``), the whole batch in one process
    (``serial_s``), and the ratios ``speedup`` = serial / side by side, which is ``split`` =
    serial / tasks one after the other (what cutting the batch costs: a search over half the
    instances at once amortises its NumPy calls over fewer) times ``cores`` = one after the
    other / side by side (what the cores give identical work; shared cores or tasks of uneven
    difficulty bring it below ``workers``)."""

    def __init__(
        self,
        recipe: SolverRecipe,
        data: ILPBatch,
        workers: int,
        repeats: int,
        capabilities: frozenset[Capability] | None = None,
    ) -> None:
        whole = dispatched_groups(data, recipe if capabilities is None else capabilities)
        if not whole:
            raise ValueError(
                "ideal split: the dispatcher answers every instance of this batch itself "
                "(box optima that meet the rows); there is nothing to split"
            )
        tasks = plan_tasks(whole, workers)
        context: Any = multiprocessing.get_context(default_start_method())
        # A worker that dies without a word breaks the barrier after its timeout.
        self._barrier, self._results = context.Barrier(len(tasks) + 1, timeout=600), context.Queue()
        self._phases = _phases(len(tasks))
        self._processes = [
            context.Process(
                target=_bare_worker,
                daemon=True,
                args=(
                    recipe,
                    task,
                    whole if index == 0 else None,
                    index,
                    len(tasks),
                    repeats,
                    self._barrier,
                    self._results,
                ),
            )
            for index, task in enumerate(tasks)
        ]

    def start(self) -> None:
        for process in self._processes:
            process.start()

    def repeat(self) -> None:
        try:
            for _ in self._phases:
                self._barrier.wait()
                self._barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError(f"ideal split: a worker failed: {self._failure()}") from None

    def finish(self) -> dict[str, float]:
        runs = self._collect()
        serial = np.array(runs[0]["whole"])
        one_by_one = np.array([run["alone"] for run in runs.values()]).sum(axis=0)
        side_by_side = np.array([run["together"] for run in runs.values()]).max(axis=0)
        return {
            "seconds": float(np.median(side_by_side)),
            "serial_s": float(np.median(serial)),
            "speedup": float(np.median(serial / side_by_side)),
            "split": float(np.median(serial / one_by_one)),
            "cores": float(np.median(one_by_one / side_by_side)),
        }

    def close(self) -> None:
        self._barrier.abort()
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()

    def _collect(self) -> dict[int, Any]:
        runs: dict[int, Any] = {}
        while len(runs) < len(self._processes):
            try:
                index, payload = self._results.get(timeout=1)
                runs[index] = payload
            except queue.Empty:
                dead = [
                    index
                    for index, process in enumerate(self._processes)
                    if index not in runs and process.exitcode not in (None, 0)
                ]
                if dead:
                    raise RuntimeError(
                        f"ideal split: worker {dead[0]} died (exit code "
                        f"{self._processes[dead[0]].exitcode})"
                    ) from None
        # The first cause, not the broken barrier it left the other workers
        failed = sorted(
            ("BrokenBarrierError" in payload, payload)
            for payload in runs.values()
            if isinstance(payload, str)
        )
        if failed:
            raise RuntimeError(f"ideal split: a worker failed: {failed[0][1]}")
        return runs

    def _failure(self) -> str:
        try:
            self._collect()
        except RuntimeError as exc:
            return str(exc).removeprefix("ideal split: a worker failed: ")
        return "the barrier broke"


def ideal_split(
    recipe: SolverRecipe, data: ILPBatch, workers: int, repeats: int
) -> dict[str, float]:
    """`IdealSplit`'s figures, its repeats run back to back."""
    split = IdealSplit(recipe, data, workers, repeats)
    try:
        split.start()
        for _ in range(repeats):
            split.repeat()
        return split.finish()
    finally:
        split.close()


def parallel_benchmark(
    solver_name: str | None = None,
    batch: int = 256,
    workers: int = 2,
    repeats: int = 5,
    executors: Sequence[str] = EXECUTORS,
    families: Sequence[str] = PARALLEL_FAMILIES,
    runs: int = 1,
) -> list[dict[str, Any]]:
    """Print throughput (instances/s) per executor and family, with the speed-up over serial,
    and each pool's start-up cost; return the rows (``ratio``: the speed-up).

    Every executor is started (and warmed up by one batch) before any is timed; then each
    repeat times one batch on each, in an order that rotates, and a speed-up is the median over
    the repeats of serial's time over the executor's in the same repeat: a slow minute on this
    shared machine falls on every row alike. The ``ideal`` row (`IdealSplit`) is the
    ceiling; its speed-up is against its own serial reference, timed in its bare processes in
    the same repeat, and its last column splits it into what cutting the batch costs and what
    the cores give. Each pool's last column also gives its share of the ideal's throughput
    (``of_ideal``: the ideal's seconds over the pool's, medians of the same run), which is its
    speed-up over ilplayer's serial as a share of the ideal's over the same serial.

    ``runs`` > 1 measures it all again with fresh pools and fresh ideal processes each time
    (rows tagged ``run``), then prints and adds each executor's medians over the runs (``run``
    = ``"median"``, ``of_ideal_range`` the lowest and highest share). One run draws one set of
    worker processes, and two processes solving the same task differ by up to ~20 % on the
    2-core machine: a single run's share of the ideal is one draw (CP-SAT, dense m=4: 77-114 %
    over 16 runs whose medians were 97 and 99 %, docs/records/parallel.md)."""
    if not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    name = solver_name or preferred_backend()
    recipe = SolverRecipe.from_name(name)
    solver = get_solver(name)
    print(
        f"backend {name!r}, batch {batch}, {workers} workers, {repeats} repeats"
        f"{f', {runs} runs' if runs > 1 else ''}, executors interleaved after a warm-up batch each "
        "(pool start, worker solvers, native models)"
    )
    rows: list[dict[str, Any]] = []
    try:
        for family in families:
            data = family_batch(family, batch)
            problem = problem_of(data)
            family_rows = []
            for run in range(runs):
                if runs > 1:
                    print(f"run {run + 1} of {runs}")
                _header()
                measured = _one_run(
                    name, recipe, solver, family, data, problem, workers, repeats, executors
                )
                family_rows += [{**row, "run": run} for row in measured] if runs > 1 else measured
            rows += family_rows
            if runs > 1:
                rows += _medians(family_rows, runs)
    finally:
        solver.close()
    return rows


def _header(last: str = "start-up s (ideal: split, cores)") -> None:
    print(
        f"{'family':<11} {'executor':<10} | {'ms/instance':>11} | {'instances/s':>11} | {'speed-up':>8} | {last}"
    )


def _medians(rows: list[dict[str, Any]], runs: int) -> list[dict[str, Any]]:
    """Each executor's medians over the runs."""
    print(f"median of {runs} runs")
    _header("share of the ideal's throughput (lowest-highest run); ideal: split, cores")
    summary = []
    for kind in dict.fromkeys(row["executor"] for row in rows):
        mine = [row for row in rows if row["executor"] == kind]
        median = {
            key: _median_of(mine, key)
            for key in (
                "ms_per_instance",
                "ratio",
                "split",
                "cores",
                "of_ideal",
                "startup_s",
                "bare_serial_ms_per_instance",
            )
        }
        shares = [row["of_ideal"] for row in mine if row["of_ideal"] is not None]
        summary.append(
            {
                **mine[0],
                **median,
                "run": "median",
                "runs": len(mine),
                "of_ideal_range": [min(shares), max(shares)] if shares else None,
            }
        )
        row = summary[-1]
        ratio = "       -" if row["ratio"] is None else f"{row['ratio']:>7.2f}x"
        extra = (
            f"{100 * row['of_ideal']:.0f} % of ideal ({100 * min(shares):.0f}-{100 * max(shares):.0f} %)"
            if shares
            else ""
            if kind != "ideal" or row["cores"] is None
            else f"split {row['split']:.2f}x, cores {row['cores']:.2f}x"
        )
        print(
            f"{row['family']:<11} {kind:<10} | {row['ms_per_instance']:>11.3f} | "
            f"{1e3 / row['ms_per_instance']:>11.0f} | {ratio} | {extra}",
            flush=True,
        )
    return summary


def _median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if row.get(key) is not None]
    return float(np.median(values)) if values else None


def _one_run(
    name: str,
    recipe: SolverRecipe,
    solver: Any,
    family: str,
    data: ILPBatch,
    problem: ProblemTensors,
    workers: int,
    repeats: int,
    executors: Sequence[str],
) -> list[dict[str, Any]]:
    """One measurement of every executor on one family (what ``parallel_benchmark`` prints per run)."""
    batch = data.num_instances
    rows: list[dict[str, Any]] = []
    started: dict[str, Any] = {}
    startup: dict[str, float] = {}
    try:
        for kind in executors:
            start = time.perf_counter()
            try:
                if kind == "ideal":
                    started[kind] = IdealSplit(recipe, data, workers, repeats, solver.capabilities)
                    started[kind].start()
                else:
                    executor = started[kind] = make_executor(kind, workers, solver, recipe)
                    if executor is not None and hasattr(executor, "start"):
                        executor.start()
                    solve_problem(
                        problem, Backend(recipe, solver, executor)
                    )  # warm-up: solvers and models
            except (ValueError, ImportError, RuntimeError) as exc:
                print(f"{family:<11} {kind:<10} | skipped: {exc}")
                broken = started.pop(kind, None)
                if broken is not None:  # started, then failed its warm-up: no pool left behind
                    broken.close()
                continue
            startup[kind] = time.perf_counter() - start
        times: dict[str, list[float]] = {kind: [] for kind in started}
        failed: dict[str, str] = {}
        for repeat in range(repeats):
            for kind in rotated(list(times), repeat):
                if kind in failed:
                    continue
                start = time.perf_counter()
                try:
                    if kind == "ideal":
                        started[kind].repeat()
                    else:
                        solve_problem(problem, Backend(recipe, solver, started[kind]))
                except RuntimeError as exc:
                    failed[kind] = str(exc)
                times[kind].append(time.perf_counter() - start)
        ideal = None
        if "ideal" in started and "ideal" not in failed:
            try:
                ideal = started["ideal"].finish()
            except RuntimeError as exc:
                failed["ideal"] = str(exc)
    finally:
        for executor in started.values():
            if executor is not None:
                executor.close()
    serial = np.array(
        times["serial"] if "serial" in times and "serial" not in failed else [np.nan] * repeats
    )
    for kind in times:
        if kind in failed:
            print(f"{family:<11} {kind:<10} | skipped: {failed[kind]}")
            continue
        seconds, ratio = (
            statistics.median(times[kind]),
            float(np.median(serial / np.array(times[kind]))),
        )
        extra = f"{startup[kind]:.2f}"
        split = cores = of_ideal = None
        if ideal is not None and kind not in ("ideal", "serial"):
            of_ideal = ideal["seconds"] / seconds
            extra += f" ({100 * of_ideal:.0f} % of ideal)"
        if kind == "ideal" and ideal is not None:
            seconds, ratio, split, cores = (
                ideal["seconds"],
                ideal["speedup"],
                ideal["split"],
                ideal["cores"],
            )
            extra = (
                f"split {split:.2f}x, cores {cores:.2f}x; its serial "
                f"{1e3 * ideal['serial_s'] / batch:.3f} ms/instance"
            )
        rows.append(
            {
                "benchmark": "parallel",
                "family": family,
                "backend": name,
                "executor": kind,
                "workers": 1 if kind == "serial" else workers,
                "ms_per_instance": 1e3 * seconds / batch,
                "ratio": None if np.isnan(ratio) else ratio,
                "split": split,
                "cores": cores,
                "of_ideal": of_ideal,
                "startup_s": startup[kind],
                "bare_serial_ms_per_instance": (
                    1e3 * ideal["serial_s"] / batch
                    if kind == "ideal" and ideal is not None
                    else None
                ),
            }
        )
        shown = "       -" if np.isnan(ratio) else f"{ratio:>7.2f}x"
        print(
            f"{family:<11} {kind:<10} | {1e3 * seconds / batch:>11.3f} | {batch / seconds:>11.0f} | "
            f"{shown} | {extra}",
            flush=True,
        )
    return rows
