"""Every available backend gives the same optimal objective on 1 200 random instances."""

from __future__ import annotations

import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.testing import FAMILIES, make_instances

CANDIDATES = ["highs", "gurobi", "cpsat", "scip", "pyomo:appsi_highs"]
SEEDS = range(10)  # 10 families x 10 seeds x 12 instances = 1 200 instances


def usable_backends() -> list[str]:
    usable = []
    for name in CANDIDATES:
        try:
            solver = ilplayer.get_solver(name)
        except (ilplayer.UnknownSolverError, ilplayer.SolverNotInstalledError, ImportError):
            continue
        if type(solver).license_status():
            usable.append(name)
        solver.close()
    return usable


def test_all_available_backends_agree_with_bruteforce_and_each_other():
    backends = usable_backends()
    if not backends:
        pytest.skip("no MIP backend plugin is installed")
    solvers = {name: ilplayer.get_solver(name) for name in backends}
    checked = 0
    try:
        for family in FAMILIES:
            for seed in SEEDS:
                inst = make_instances(family, seed, batch=12)
                y_ref, status_ref = ilplayer.solve(inst.c, inst.A, inst.b, inst.lb, inst.ub)
                reference = (inst.c * y_ref).sum(-1)
                for name, solver in solvers.items():
                    y, status = ilplayer.solve(inst.c, inst.A, inst.b, inst.lb, inst.ub, solver=solver)
                    assert torch.equal(status, status_ref), (name, family, seed)
                    solved = status_ref == Status.OPTIMAL
                    torch.testing.assert_close((inst.c * y).sum(-1)[solved], reference[solved],
                                               rtol=1e-6, atol=1e-6, msg=f"{name} {family} {seed}")
                checked += len(inst.c)
    finally:
        for solver in solvers.values():
            solver.close()
    assert checked >= 1000
