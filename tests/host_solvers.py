"""Small host-side (NumPy) backends for tests of the host path of the core."""

from __future__ import annotations

import itertools
import os
import time

import numpy as np

from ilplayer import Status
from ilplayer.plugin_api import Capability, ILPBatch, Solver, SolveResult


class EnumerationSolver(Solver):
    """Exact NumPy enumeration; counts the (A, b) groups and instances it is given."""

    name = "enumeration"

    def __init__(self) -> None:
        self.groups_seen = 0
        self.instances_seen = 0

    @staticmethod
    def feasible_points(batch: ILPBatch) -> np.ndarray:
        points = np.array(
            list(
                itertools.product(*[range(int(l), int(u) + 1) for l, u in zip(batch.lb, batch.ub)])
            ),
            dtype=float,
        )
        return points[(points @ batch.A.T <= batch.b + 1e-6).all(axis=1)]

    def solve(self, batch: ILPBatch) -> SolveResult:
        self.groups_seen += 1
        self.instances_seen += len(batch.c)
        feasible = self.feasible_points(batch)
        k, n = batch.c.shape
        if len(feasible) == 0:
            return SolveResult(
                y=np.zeros((k, n)),
                status=np.full(k, Status.INFEASIBLE),
                objective=np.full(k, np.nan),
            )
        costs = batch.c @ feasible.T
        best = costs.argmin(axis=1)
        return SolveResult(
            y=feasible[best], status=np.full(k, Status.OPTIMAL), objective=costs[np.arange(k), best]
        )


class FlakySolver(EnumerationSolver):
    """Raises on groups whose first cost entry is negative."""

    name = "flaky"

    def solve(self, batch: ILPBatch) -> SolveResult:
        if batch.c[0, 0] < 0:
            raise RuntimeError("native library crashed")
        return super().solve(batch)


class LyingSolver(EnumerationSolver):
    """Claims optimality for a point that violates the constraints."""

    name = "lying"

    def solve(self, batch: ILPBatch) -> SolveResult:
        result = super().solve(batch)
        y = np.array(batch.ub, dtype=float)[None, :].repeat(batch.num_instances, 0)
        return SolveResult(
            y=y, status=np.full(batch.num_instances, Status.OPTIMAL), objective=result.objective
        )


class SlowSolver(EnumerationSolver):
    """Sleeps ``delay`` seconds per group: long enough to kill or interrupt a worker mid-batch."""

    name = "slow"
    capabilities = frozenset({Capability.RELEASES_GIL})

    def __init__(self, delay: float = 0.2) -> None:
        super().__init__()
        self.delay = delay

    def solve(self, batch: ILPBatch) -> SolveResult:
        time.sleep(self.delay)
        return super().solve(batch)


def hold(seconds: float) -> None:
    """Occupies a worker for ``seconds`` (Ray's fault tests block a CPU with it)."""
    time.sleep(seconds)


class GilEnumerationSolver(EnumerationSolver):
    """Releases the GIL (NumPy enumeration mostly does), so thread pools may run it."""

    name = "gil-enumeration"
    capabilities = frozenset({Capability.RELEASES_GIL})


class FlakyParallelSolver(GilEnumerationSolver):
    """Raises on batches holding an instance whose first cost entry is negative (in whichever
    worker runs it)."""

    name = "flaky-parallel"

    def solve(self, batch: ILPBatch) -> SolveResult:
        if (batch.c[:, 0] < 0).any():
            raise RuntimeError(f"native library crashed in process {os.getpid()}")
        return super().solve(batch)


class SuboptimalSolver(EnumerationSolver):
    """Returns the worst feasible point and calls it optimal (for tests of the checks)."""

    name = "suboptimal"

    def solve(self, batch: ILPBatch) -> SolveResult:
        feasible = self.feasible_points(batch)
        if len(feasible) == 0:
            return super().solve(batch)
        k = batch.num_instances
        worst = (batch.c @ feasible.T).argmax(axis=1)
        return SolveResult(
            y=feasible[worst], status=np.full(k, Status.OPTIMAL), objective=np.full(k, np.nan)
        )


class FalseInfeasibleSolver(EnumerationSolver):
    """Calls every instance with a tight row infeasible (for tests of the checks)."""

    name = "false-infeasible"

    def solve(self, batch: ILPBatch) -> SolveResult:
        result = super().solve(batch)
        if batch.num_constraints and len(batch.c) > 1:
            status = result.status.copy()
            status[:] = Status.INFEASIBLE
            return SolveResult(y=result.y, status=status, objective=result.objective)
        return result


# The backends that solve mixed-integer programs (Capability.CONTINUOUS_VARIABLES).
MILP_BACKENDS = ("highs", "gurobi", "scip", "pyomo:appsi_highs")


def require(name: str) -> Solver:
    """The backend ``name``, or a skip naming what is missing (not installed, no licence)."""
    import pytest

    import ilplayer

    try:
        return ilplayer.get_solver(name)
    except Exception as exc:  # not installed, or its licence is missing
        pytest.skip(f"solver {name!r} is not usable here: {type(exc).__name__}: {exc}")
