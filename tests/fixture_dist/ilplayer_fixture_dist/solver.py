import numpy as np

from ilplayer import Status
from ilplayer.plugin_api import ILPBatch, Solver, SolveResult


class GreedyBoxSolver(Solver):
    """Exact only when the constraints never bind: the box optimum, or ERROR if infeasible."""

    name = "fixture-dist"

    def solve(self, batch: ILPBatch) -> SolveResult:
        y = np.where(batch.c < 0, batch.ub, batch.lb).astype(float)
        feasible = (y @ batch.A.T <= batch.b + 1e-9).all(axis=1)
        status = np.where(feasible, Status.OPTIMAL, Status.ERROR)
        return SolveResult(y=y, status=status, objective=(batch.c * y).sum(1))
