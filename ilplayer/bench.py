"""Benchmarks reachable from the command line (``ilplayer bench parallel``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import numpy as np
import torch

from ilplayer.dispatch import solve_problem
from ilplayer.executors import SolverRecipe, make_executor
from ilplayer.instances import random_constraint_rows, sample_cover
from ilplayer.plugins import get_solver, preferred_backend
from ilplayer.problem import validate_problem
from ilplayer.types import ILPBatch

FAMILIES = ("binary m=1", "binary m=4", "binary m=8", "dense m=4", "dense m=8", "set cover")
PARALLEL_FAMILIES = ("binary m=4", "dense m=4", "set cover")
EXECUTORS = ("serial", "threads", "processes", "ray")


def family_batch(family: str, instances: int, seed: int = 0, n: int = 16) -> ILPBatch:
    """Instances of one benchmark family sharing ``(A, b)``: random constraints on a binary or
    dense [-5, 5] box (supplementary A), or weighted set cover (n/2 elements, n subsets)."""
    rng = np.random.default_rng(seed)
    if family == "set cover":
        A, b = -sample_cover(rng, n // 2, n), -np.ones(n // 2)
        return ILPBatch(c=rng.uniform(0.1, 1, (instances, n)), A=A, b=b, lb=np.zeros(n), ub=np.ones(n))
    box, m = family.split(" m=")
    lo, hi = (0, 1) if box == "binary" else (-5, 5)
    g = torch.Generator().manual_seed(seed)
    corner = torch.tensor([lo if rng.random() < 0.5 else hi for _ in range(n)], dtype=torch.float64)
    A, b = random_constraint_rows(int(m), n, lo, hi, generator=g, feasible_point=corner)
    c = rng.uniform(-0.5, 0.5, (instances, n))
    return ILPBatch(c=c / np.linalg.norm(c, axis=1, keepdims=True), A=A.numpy(), b=b.numpy(),
                    lb=np.full(n, lo), ub=np.full(n, hi))


def parallel_benchmark(solver_name: str | None = None, batch: int = 256, workers: int = 2,
                       repeats: int = 5, executors: Sequence[str] = EXECUTORS,
                       families: Sequence[str] = PARALLEL_FAMILIES) -> None:
    """Print throughput (instances/s) per executor and family, with the speed-up over serial
    measured in the same run, and each pool's start-up cost."""
    name = solver_name or preferred_backend()
    recipe = SolverRecipe.from_name(name)
    solver = get_solver(name)
    print(f"backend {name!r}, batch {batch}, {workers} workers, median of {repeats} batches "
          "after a warm-up batch (pool start, worker solvers, native models)")
    print(f"{'family':<11} {'executor':<10} | {'ms/instance':>11} | {'instances/s':>11} | "
          f"{'speed-up':>8} | start-up s")
    for family in families:
        data = family_batch(family, batch)
        problem = validate_problem(torch.from_numpy(data.c.copy()), torch.from_numpy(data.A.copy()),
                                   torch.from_numpy(data.b.copy()), data.lb, data.ub)
        serial_rate = None
        for kind in executors:
            try:
                executor = make_executor(kind, workers, solver)
            except (ValueError, ImportError) as exc:
                print(f"{family:<11} {kind:<10} | skipped: {exc}")
                continue
            try:
                start = time.perf_counter()
                if executor is not None and hasattr(executor, "start"):
                    executor.start()
                solve_problem(problem, solver, executor, recipe)  # warm-up: solvers and models
                startup = time.perf_counter() - start
                times = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    solve_problem(problem, solver, executor, recipe)
                    times.append(time.perf_counter() - start)
            except ImportError as exc:
                print(f"{family:<11} {kind:<10} | skipped: {exc}")
                continue
            finally:
                if executor is not None:
                    executor.close()
            seconds = statistics.median(times)
            rate = batch / seconds
            serial_rate = serial_rate or rate
            print(f"{family:<11} {kind:<10} | {1e3 * seconds / batch:>11.3f} | {rate:>11.0f} | "
                  f"{rate / serial_rate:>7.2f}x | {startup:.2f}", flush=True)
    solver.close()
