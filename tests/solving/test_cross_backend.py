"""Every available backend gives the same optimal objective on 600 random instances, and the
known optimum of paper-sized instances on which one of them once answered wrong."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.plugin_api import ILPBatch
from ilplayer.testing import FAMILIES, make_instances

CANDIDATES = ["highs", "gurobi", "cpsat", "scip", "pyomo:appsi_highs"]
SEEDS = range(
    5
)  # 10 families x 5 seeds x 12 instances = 600 instances (the fuzz tests hold thousands more)


def usable(name: str) -> bool:
    try:
        solver = ilplayer.get_solver(name)
    except (ilplayer.UnknownSolverError, ilplayer.SolverNotInstalledError, ImportError):
        return False
    solver.close()
    return bool(type(solver).license_status())


def usable_backends() -> list[str]:
    return [name for name in CANDIDATES if usable(name)]


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
                    y, status = ilplayer.solve(
                        inst.c, inst.A, inst.b, inst.lb, inst.ub, solver=solver
                    )
                    assert torch.equal(status, status_ref), (name, family, seed)
                    solved = status_ref == Status.OPTIMAL
                    torch.testing.assert_close(
                        (inst.c * y).sum(-1)[solved],
                        reference[solved],
                        rtol=1e-6,
                        atol=1e-6,
                        msg=f"{name} {family} {seed}",
                    )
                checked += len(inst.c)
    finally:
        for solver in solvers.values():
            solver.close()
    assert checked >= 600


# Random Constraints, dense [-5, 5], m = 4, n = 16 (ilplayer_experiments.bench.family_batch("dense m=4",
# seed=4), costs after 7 rounds of 1 % moves). HiGHS 1.16 with mip_feasibility_tolerance=1e-9
# answered -13.823151208437597 (y_0 = -3, y_3 = 0, y_11 = 5) and called it optimal.
DENSE_M4 = {
    "c": [
        0.04861850348385087,
        -0.14191865885488494,
        -0.3793301035052371,
        0.12024108528464722,
        0.10112357908464044,
        -0.15261460244958225,
        0.3710339672447803,
        0.38237896635312163,
        -0.11978913176665125,
        -0.0348708463161661,
        -0.265298756303437,
        0.19488621366271416,
        -0.2738955768213214,
        -0.16192572255241972,
        0.4302083077582267,
        -0.3182042924187352,
    ],
    "A": [
        [
            -0.01936741047171171,
            0.19599963305525375,
            -0.3743444380549916,
            0.37494858246976415,
            0.37958133513561854,
            0.04340184793892289,
            -0.0760771027332563,
            0.2196154898823001,
            -0.33177049684951915,
            -0.03972131151131196,
            -0.2739350216228352,
            0.30376758115176694,
            -0.07602419618886277,
            -0.41916807006023304,
            0.04138674185943375,
            -0.13544539027399766,
        ],
        [
            -0.09242429442040621,
            0.189666694970731,
            -0.057679985536480904,
            -0.26318058026991015,
            -0.26024873556957256,
            0.0052925161549300355,
            -0.1392366663503329,
            -0.32525316948892724,
            0.1367819935216934,
            -0.005071833017438212,
            -0.17137800255633404,
            -0.4722534112125725,
            0.44314225555775505,
            -0.006687602848353873,
            -0.3283267906814039,
            -0.33854453454377126,
        ],
        [
            0.061115090712574156,
            -0.07375392935346393,
            0.42237217567893026,
            -0.0691285994111788,
            -0.44181408910541475,
            -0.3001442008372652,
            0.21865130467948513,
            -0.27718808017812935,
            -0.32356131401009924,
            -0.25814868002245,
            -0.1339303923440979,
            -0.03552833460141428,
            0.2955720952709527,
            0.28770766625430244,
            0.18961517152512403,
            -0.03310097608104617,
        ],
        [
            0.32073601079128944,
            -0.29419734733156044,
            -0.3992724450128021,
            0.3085383868172576,
            -0.17803499277778123,
            0.342940045976504,
            0.01448125600292874,
            -0.1216434591587455,
            -0.2860569427081489,
            0.10539795747493766,
            0.22556559525365674,
            -0.0475111813642292,
            -0.21279929492183783,
            0.343109625806603,
            0.20901379299207393,
            -0.1971845938953961,
        ],
    ],
    "b": [-2.021237817411856, 1.6024720082931039, 2.663867517609464, 0.09436127729516047],
    "y": [-4, 5, 5, 2, 5, 5, -5, -5, 5, 5, 5, 4, 5, 5, -5, 5],
}


@pytest.mark.parametrize("name", CANDIDATES)
def test_every_backend_finds_the_optimum_highs_once_missed(name):
    """Too large for the fuzz oracle's enumeration (11^16 box points): scripts/cross_check.py
    found it by comparing backends (docs/fuzz.md). Cold and, where a backend takes starts, warm."""
    c, A, b, y = (np.array(DENSE_M4[key], dtype=np.float64) for key in "cAby")
    assert np.all(A @ y <= b)  # the optimum meets the rows strictly
    batch = ILPBatch(c=c[None], A=A, b=b, lb=np.full(16, -5.0), ub=np.full(16, 5.0))
    if not usable(name):
        pytest.skip(f"backend {name!r} is not installed or has no licence here")
    warm_starts = [False, True] if ":" not in name else [None]  # Pyomo's paths take no starts
    for warm in warm_starts:
        with ilplayer.get_solver(name, **({} if warm is None else {"warm_start": warm})) as solver:
            result = solver.solve(batch)
        assert result.status[0] == Status.OPTIMAL, (name, warm)
        assert result.objective[0] == pytest.approx(c @ y, abs=1e-5), (
            name,
            warm,
        )  # CP-SAT: costs at scale 1e6
