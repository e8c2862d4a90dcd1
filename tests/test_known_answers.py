"""Paper-sized instances on which a backend once returned a wrong answer, with the optimum that
Gurobi and CP-SAT agree on. Too large for the fuzz oracle's enumeration (11^16 box points):
scripts/cross_check.py found them by comparing backends (docs/fuzz.md)."""

from __future__ import annotations

import numpy as np
import pytest

import ilplayer
from ilplayer import ILPBatch, Status

# Random Constraints, dense [-5, 5], m = 4, n = 16 (ilplayer.bench.family_batch("dense m=4",
# seed=4), costs after 7 rounds of 1 % moves). HiGHS 1.16 with mip_feasibility_tolerance=1e-9
# answered -13.823151208437597 (y_0 = -3, y_3 = 0, y_11 = 5) and called it optimal.
DENSE_M4 = {
    "c": [0.04861850348385087, -0.14191865885488494, -0.3793301035052371, 0.12024108528464722, 0.10112357908464044,
          -0.15261460244958225, 0.3710339672447803, 0.38237896635312163, -0.11978913176665125, -0.0348708463161661,
          -0.265298756303437, 0.19488621366271416, -0.2738955768213214, -0.16192572255241972, 0.4302083077582267,
          -0.3182042924187352],
    "A": [[-0.01936741047171171, 0.19599963305525375, -0.3743444380549916, 0.37494858246976415, 0.37958133513561854,
           0.04340184793892289, -0.0760771027332563, 0.2196154898823001, -0.33177049684951915, -0.03972131151131196,
           -0.2739350216228352, 0.30376758115176694, -0.07602419618886277, -0.41916807006023304, 0.04138674185943375,
           -0.13544539027399766],
          [-0.09242429442040621, 0.189666694970731, -0.057679985536480904, -0.26318058026991015, -0.26024873556957256,
           0.0052925161549300355, -0.1392366663503329, -0.32525316948892724, 0.1367819935216934, -0.005071833017438212,
           -0.17137800255633404, -0.4722534112125725, 0.44314225555775505, -0.006687602848353873, -0.3283267906814039,
           -0.33854453454377126],
          [0.061115090712574156, -0.07375392935346393, 0.42237217567893026, -0.0691285994111788, -0.44181408910541475,
           -0.3001442008372652, 0.21865130467948513, -0.27718808017812935, -0.32356131401009924, -0.25814868002245,
           -0.1339303923440979, -0.03552833460141428, 0.2955720952709527, 0.28770766625430244, 0.18961517152512403,
           -0.03310097608104617],
          [0.32073601079128944, -0.29419734733156044, -0.3992724450128021, 0.3085383868172576, -0.17803499277778123,
           0.342940045976504, 0.01448125600292874, -0.1216434591587455, -0.2860569427081489, 0.10539795747493766,
           0.22556559525365674, -0.0475111813642292, -0.21279929492183783, 0.343109625806603, 0.20901379299207393,
           -0.1971845938953961]],
    "b": [-2.021237817411856, 1.6024720082931039, 2.663867517609464, 0.09436127729516047],
    "y": [-4, 5, 5, 2, 5, 5, -5, -5, 5, 5, 5, 4, 5, 5, -5, 5],
}

BACKENDS = ["highs", "gurobi", "cpsat", "scip"]


def _solver_or_skip(name: str, **options):
    if name.split(":")[0] not in ilplayer.available_solvers():
        pytest.skip(f"backend {name!r} is not installed")
    try:
        return ilplayer.get_solver(name, **options)
    except ImportError as exc:
        pytest.skip(f"backend {name!r} cannot start here: {exc}")


@pytest.mark.parametrize("name, options", [
    *[(name, {"warm_start": warm}) for name in BACKENDS for warm in (False, True)],
    ("pyomo:appsi_highs", {}),  # Pyomo's HiGHS gets the native plugin's tolerances
])
def test_every_backend_finds_the_optimum_highs_once_missed(name, options):
    c, A, b, y = (np.array(DENSE_M4[key], dtype=np.float64) for key in "cAby")
    assert np.all(A @ y <= b)  # the optimum meets the rows strictly
    batch = ILPBatch(c=c[None], A=A, b=b, lb=np.full(16, -5.0), ub=np.full(16, 5.0))
    with _solver_or_skip(name, **options) as solver:
        result = solver.solve(batch)
    assert result.status[0] == Status.OPTIMAL
    assert result.objective[0] == pytest.approx(c @ y, abs=1e-5)  # CP-SAT: costs rounded at scale 1e6
