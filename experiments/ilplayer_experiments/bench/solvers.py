"""``ilplayer bench solvers | warm | reuse | backward``: the backends against each other per
family, warm starts against cold, ``solve()`` against a reused layer, the backward's threads."""

from __future__ import annotations

import importlib.util
import multiprocessing
import statistics
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ilplayer.core.records import ILPBatch
from ilplayer.core.validation import validate_problem
from ilplayer.parallel.dispatch import solve_problem
from ilplayer.solvers.registry import (
    MIP_BACKEND_RANKING,
    available_solvers,
    get_solver,
    preferred_backend,
)
from ilplayer.testing.instances import family_batch

SOLVER_FAMILIES = ("binary m=1", "binary m=8", "dense m=4", "dense m=8", "set cover", "knapsack")
MIP_BACKENDS = MIP_BACKEND_RANKING


def installed_backends(names: Sequence[str]) -> list[str]:
    available = available_solvers()
    return [name for name in names if name in available or name.split(":")[0] in available]


def _solve_ms(solver: Any, batch: ILPBatch, through_layer: bool = False) -> float:
    """ms per instance of ``solver.solve(batch)``, or with ``through_layer`` of what a layer's
    forward does: validation, the box check and the backend (`solve_problem`)."""
    start = time.perf_counter()
    if through_layer:
        problem = validate_problem(
            torch.tensor(batch.c), torch.tensor(batch.A), torch.tensor(batch.b), batch.lb, batch.ub
        )
        result = SimpleNamespace(status=solve_problem(problem, solver)[1].numpy())
    else:
        result = solver.solve(batch)
    seconds = time.perf_counter() - start
    if not (result.status == 0).all():
        raise RuntimeError(f"{solver.name}: not every benchmark instance was solved to optimality")
    return 1e3 * seconds / batch.num_instances


class ReferenceLayerSolver:
    """What the CombOptNet reference implementation does for every instance (its
    ``models/comboptnet.py``): a fresh Gurobi model with Gurobi's default parameters but one
    thread, built variable by variable and row by row, solved, thrown away. A benchmark row,
    not a backend."""

    name = "reference"

    def __init__(self) -> None:
        import gurobipy

        self._gp = gurobipy
        self._env = gurobipy.Env(params={"OutputFlag": 0})

    def solve(self, batch: ILPBatch) -> Any:
        gp = self._gp
        status = np.zeros(batch.num_instances, dtype=np.int8)
        for i, c in enumerate(batch.c):
            with gp.Model(env=self._env) as model:
                model.Params.Threads = 1
                y = [
                    model.addVar(lb=float(lo), ub=float(hi), vtype=gp.GRB.INTEGER)
                    for lo, hi in zip(batch.lb, batch.ub)
                ]
                model.setObjective(gp.quicksum(float(w) * v for w, v in zip(c, y)), gp.GRB.MINIMIZE)
                for row, bound in zip(batch.A, batch.b):
                    model.addConstr(
                        gp.quicksum(float(a) * v for a, v in zip(row, y)) - float(bound) <= 0
                    )
                model.optimize()
                status[i] = 0 if model.Status == gp.GRB.OPTIMAL else 4
        return SimpleNamespace(status=status)

    def close(self) -> None:
        self._env.dispose()


def rotated(items: Sequence[Any], shift: int) -> list[Any]:
    """``items`` starting at ``shift`` (mod its length). Interleaved timings rotate who goes
    first: the first solve of a batch pays for cold caches (0.91x measured for a copy of the
    defaults that always ran second, benchmarks/tuning.py)."""
    shift %= len(items)
    return [*items[shift:], *items[:shift]]


def solvers_benchmark(
    backends: Sequence[str] = MIP_BACKENDS,
    families: Sequence[str] = SOLVER_FAMILIES,
    batch: int = 64,
    repeats: int = 3,
    n: int = 16,
    reference: bool = False,
    through_layer: bool = False,
) -> list[dict[str, Any]]:
    """ms per instance for a batch of ``batch`` fresh cost vectors on one ``(A, b)``, each
    backend reused across batches (as a layer does), serial, one thread. Backends run
    interleaved, batch by batch, so that the machine's load hits them alike; the figure is the
    median over ``repeats`` batches, and the ratio is to the first backend in the same run.
    With ``reference`` (and gurobipy installed) a row for `ReferenceLayerSolver`, the
    CombOptNet reference's way of solving, joins them. With ``through_layer`` ilplayer's
    backends are timed as a layer's forward calls them (validation and the core's box check
    included); the reference row stays the reference's own loop."""
    names = installed_backends(backends)
    if reference and importlib.util.find_spec("gurobipy") is not None:
        names.append(ReferenceLayerSolver.name)
    layer_path = {name: through_layer and name != ReferenceLayerSolver.name for name in names}
    rows = []
    for family in families:
        solvers = {
            name: ReferenceLayerSolver() if name == ReferenceLayerSolver.name else get_solver(name)
            for name in names
        }
        everything = family_batch(family, batch * (repeats + 1), n=n)  # one (A, b)
        chunks = [
            everything.with_rows(c=everything.c[i * batch : (i + 1) * batch])
            for i in range(repeats + 1)
        ]
        for solver in solvers.values():  # warm-up: the native model of this (A, b)
            solver.solve(chunks[0])
        samples: dict[str, list[float]] = {name: [] for name in names}
        for index, data in enumerate(chunks[1:]):
            for name in rotated(names, index):
                samples[name].append(_solve_ms(solvers[name], data, layer_path[name]))
        for solver in solvers.values():
            solver.close()
        reference_ms = statistics.median(samples[names[0]])
        for name in names:
            ms = statistics.median(samples[name])
            rows.append(
                {
                    "benchmark": "solvers",
                    "family": family,
                    "n": n,
                    "backend": name,
                    "through_layer": layer_path[name],
                    "ms_per_instance": ms,
                    "ratio": ms / reference_ms,
                    "reference": names[0],
                }
            )
    return rows


def _perturbed(batch: ILPBatch, scale: float, seed: int) -> ILPBatch:
    rng = np.random.default_rng(seed)
    return batch.with_rows(c=batch.c * (1 + scale * rng.standard_normal(batch.c.shape)))


def warm_benchmark(
    backends: Sequence[str] = MIP_BACKENDS,
    families: Sequence[str] = ("binary m=8", "dense m=8"),
    batch: int = 64,
    epochs: int = 4,
    noise: float = 0.01,
    n: int = 16,
) -> list[dict[str, Any]]:
    """Training revisits its instances every epoch with slightly changed costs: solve the same
    batch ``epochs`` times, costs moved by ``noise`` (relative) each time, with warm starts off
    and on (two solvers, interleaved). The ratio is warm / cold over the epochs after the first."""
    rows = []
    for family in families:
        base = family_batch(family, batch, seed=0, n=n)
        for name in installed_backends(backends):
            cold, warm = get_solver(name, warm_start=False), get_solver(name, warm_start=True)
            times: dict[str, list[float]] = {"cold": [], "warm": []}
            for epoch in range(epochs):
                data = _perturbed(base, noise, epoch)
                for label, solver in rotated((("cold", cold), ("warm", warm)), epoch):
                    ms = _solve_ms(solver, data)
                    if epoch:
                        times[label].append(ms)
            cold.close()
            warm.close()
            cold_ms, warm_ms = statistics.fmean(times["cold"]), statistics.fmean(times["warm"])
            rows.append(
                {
                    "benchmark": "warm",
                    "family": family,
                    "n": n,
                    "backend": name,
                    "cold_ms": cold_ms,
                    "warm_ms": warm_ms,
                    "ratio": warm_ms / cold_ms,
                }
            )
    return rows


def reuse_benchmark(
    backends: Sequence[str] = ("gurobi", "highs"),
    batch: int = 8,
    calls: int = 40,
    family: str = "dense m=4",
) -> list[dict[str, Any]]:
    """``ilplayer.solve`` called repeatedly against a reused ``ILPLayer`` forward (no grad) on
    the same small batch, alternating call by call. Ratio: solve() / layer."""
    from ilplayer.layer import ILPLayer, solve
    from ilplayer.parallel.backend_cache import release_solvers

    data = family_batch(family, batch)
    c, A, b = (torch.from_numpy(np.array(x)) for x in (data.c, data.A, data.b))
    lb, ub = data.lb.tolist(), data.ub.tolist()
    rows = []
    for name in installed_backends(backends):
        layer = ILPLayer(lb, ub, solver=name, executor="serial")
        times: dict[str, list[float]] = {"solve": [], "layer": []}
        with torch.no_grad():
            for call in range(calls + 2):
                for label in rotated(("solve", "layer"), call):
                    start = time.perf_counter()
                    if label == "solve":
                        solve(c, A, b, lb, ub, solver=name, executor="serial")
                    else:
                        layer(c, A, b)
                    if call >= 2:
                        times[label].append(1e3 * (time.perf_counter() - start))
        layer.close()
        release_solvers()
        solve_ms, layer_ms = statistics.median(times["solve"]), statistics.median(times["layer"])
        rows.append(
            {
                "benchmark": "reuse",
                "family": family,
                "backend": name,
                "batch": batch,
                "solve_ms": solve_ms,
                "layer_ms": layer_ms,
                "ratio": solve_ms / layer_ms,
            }
        )
    return rows


def _busy_neighbour(stop: Any) -> None:  # a process that keeps torch's default threads busy
    a = torch.rand(256, 256)
    while not stop.is_set():
        a = torch.tanh(a @ a)


def backward_benchmark(
    batch: int = 64, m: int = 8, n: int = 16, repeats: int = 200
) -> list[dict[str, Any]]:
    """The layer's backward (B = ``batch``, dense m x n) with torch's default threads and with
    the layer's one thread, on a quiet machine and beside one busy process. Ratio: each to the
    quiet one-thread time measured in the same run."""
    from ilplayer.layer import ILPLayer
    from ilplayer.learning.constraints import StaticConstraints

    constraints = StaticConstraints(m, n, -5, 5, seed=0)
    c = (torch.rand(batch, n) - 0.5).requires_grad_()
    layers = {
        "torch default threads": ILPLayer(-5, 5, solver=preferred_backend(), backward_threads=None),
        "layer (1 thread)": ILPLayer(-5, 5, solver=preferred_backend(), backward_threads=1),
    }
    outputs = {label: layer(c, *constraints()) for label, layer in layers.items()}
    dy = torch.randn(batch, n) / batch

    def median_ms(label: str) -> float:
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.autograd.grad(
                outputs[label], [c, *constraints.parameters()], dy, retain_graph=True
            )
            samples.append(1e3 * (time.perf_counter() - start))
        return statistics.median(samples)

    rows = []
    quiet = {label: median_ms(label) for label in layers}
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    neighbour = context.Process(target=_busy_neighbour, args=(stop,), daemon=True)
    neighbour.start()
    try:
        time.sleep(1.0)
        busy = {label: median_ms(label) for label in layers}
    finally:
        stop.set()
        neighbour.join(5)
    reference = quiet["layer (1 thread)"]
    for label in layers:
        for load, figures in (("quiet", quiet), ("busy neighbour", busy)):
            rows.append(
                {
                    "benchmark": "backward",
                    "threads": label,
                    "load": load,
                    "batch": batch,
                    "ms": figures[label],
                    "ratio": figures[label] / reference,
                }
            )
    for layer in layers.values():
        layer.close()
    return rows
