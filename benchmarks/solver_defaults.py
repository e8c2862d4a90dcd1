"""ilplayer's time per mixed-integer program against the backend's own defaults on the same
program, on held-out programs with integer variables of infinite bound and fractional rows
(the family where settings tuned for small boxes can turn a millisecond solve into a hang).

Per instance: ``ilplayer.solve(..., solver=S, executor="serial")`` (one call per instance, the
backend kept between calls) beside the solver library called directly with its defaults (one
thread, the user's exact rows), alternating; a time limit caps both. Prints per backend the
median and largest ratio, the instances over ``--bound`` times the defaults' time, and the
instances whose statuses differ (a time limit counts as no answer). ``--tuned`` passes the
small-box speed settings as ``params``, which keeps them on every model: the behaviour before
the backends gave such models the solver's defaults (a baseline for the same command).

    python benchmarks/solver_defaults.py --solvers highs gurobi scip --slabs 200 --random 200
    python benchmarks/solver_defaults.py --solvers highs gurobi scip --tuned
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import torch

import ilplayer
from ilplayer import Status
from ilplayer.testing.milp_cases import (
    MilpCase,
    lattice_case,
    milp_case,
    slab_case,
    tie_knapsack_case,
)


def _highs_defaults(case: MilpCase, limit: float) -> str:
    import highspy

    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("time_limit", limit)
    inf = highspy.kHighsInf
    n = case.c.shape[1]
    highs.addVars(
        n,
        np.where(np.isfinite(case.lb), case.lb, -inf),
        np.where(np.isfinite(case.ub), case.ub, inf),
    )
    kinds = [
        highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
        for i in case.integrality
    ]
    highs.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.array(kinds))
    for rows, low, high in (
        (case.A, -inf * np.ones(len(case.b)), case.b),
        (case.A_eq, case.b_eq, case.b_eq),
    ):
        for row, lo, hi in zip(rows, low, high):
            nz = np.flatnonzero(row).astype(np.int32)
            highs.addRow(lo, hi, len(nz), nz, row[nz])
    highs.changeColsCost(n, np.arange(n, dtype=np.int32), case.c[0])
    highs.run()
    status = highs.getModelStatus()
    names = {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
        highspy.HighsModelStatus.kUnbounded: "unbounded",
        highspy.HighsModelStatus.kUnboundedOrInfeasible: "infeasible-or-unbounded",
    }
    return names.get(status, "no answer")


def _gurobi_defaults(case: MilpCase, limit: float) -> str:
    import gurobipy as gp

    with (
        gp.Env(params={"OutputFlag": 0, "Threads": 1, "TimeLimit": limit}) as env,
        gp.Model(env=env) as model,
    ):
        x = model.addMVar(
            case.c.shape[1],
            lb=case.lb,
            ub=case.ub,
            vtype=np.where(case.integrality, gp.GRB.INTEGER, gp.GRB.CONTINUOUS),
        )
        if len(case.b):
            model.addConstr(case.A @ x <= case.b)
        if len(case.b_eq):
            model.addConstr(case.A_eq @ x == case.b_eq)
        x.Obj = case.c[0]
        model.optimize()
        return {
            gp.GRB.OPTIMAL: "optimal",
            gp.GRB.INFEASIBLE: "infeasible",
            gp.GRB.UNBOUNDED: "unbounded",
            gp.GRB.INF_OR_UNBD: "infeasible-or-unbounded",
        }.get(model.Status, "no answer")


def _scip_defaults(case: MilpCase, limit: float) -> str:
    import pyscipopt

    model = pyscipopt.Model()
    model.hideOutput()
    model.setParam("limits/time", limit)
    bound = lambda v: float(v) if np.isfinite(v) else None
    y = [
        model.addVar(vtype="I" if i else "C", lb=bound(lo), ub=bound(hi))
        for lo, hi, i in zip(case.lb, case.ub, case.integrality)
    ]
    for row, rhs in zip(case.A, case.b):
        model.addCons(pyscipopt.quicksum(float(a) * v for a, v in zip(row, y)) <= float(rhs))
    for row, rhs in zip(case.A_eq, case.b_eq):
        model.addCons(pyscipopt.quicksum(float(a) * v for a, v in zip(row, y)) == float(rhs))
    model.setObjective(pyscipopt.quicksum(float(a) * v for a, v in zip(case.c[0], y)))
    model.optimize()
    status = model.getStatus()
    return (
        status
        if status in ("optimal", "infeasible", "unbounded")
        else "infeasible-or-unbounded"
        if status == "inforunbd"
        else "no answer"
    )


DEFAULTS = {"highs": _highs_defaults, "gurobi": _gurobi_defaults, "scip": _scip_defaults}


def tuned_params(name: str) -> dict:
    """The backend's small-box speed settings, as params (kept on every model)."""
    if name == "gurobi":
        return {"Presolve": 0, "Cuts": 0, "Heuristics": 0.0}
    if name == "highs":
        from ilplayer_highs.solver import DEFAULT_OPTIONS, SPEED_OPTIONS

        return {key: DEFAULT_OPTIONS[key] for key in SPEED_OPTIONS}
    from ilplayer_scip.solver import DEFAULT_PARAMS, SPEED_PARAMS

    return {key: DEFAULT_PARAMS[key] for key in SPEED_PARAMS}


def held_out_cases(
    slabs: int, random: int, start: int, knapsacks: int = 0, lattices: int = 0
) -> list[MilpCase]:
    """``slabs`` slab programs, ``random`` fuzz programs with an unbounded integer variable,
    ``knapsacks`` near-tie binary knapsacks and ``lattices`` programs of fractional equalities
    over unbounded integers (one cost vector each), from seed ``start`` on: seeds no test uses."""
    cases = [slab_case(seed) for seed in range(start, start + slabs)]
    cases += [tie_knapsack_case(seed) for seed in range(start, start + knapsacks)]
    cases += [lattice_case(seed) for seed in range(start, start + lattices)]
    seed = start
    while len(cases) < slabs + knapsacks + lattices + random:
        case = milp_case(seed, batch=1)
        seed += 1
        if (case.integrality & ~(np.isfinite(case.lb) & np.isfinite(case.ub))).any():
            cases.append(case)
    return cases


def _same(ours: str, theirs: str) -> bool:
    """Whether two statuses agree: the same, or one decides what the other leaves open
    ("infeasible or unbounded")."""
    open_ = ("infeasible-or-unbounded", "infeasible_or_unbounded")
    if theirs in open_:
        return ours in ("infeasible", "unbounded", *open_)
    if ours in open_:
        return theirs in ("infeasible", "unbounded")
    return ours == theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solvers", nargs="*", default=list(DEFAULTS), choices=list(DEFAULTS))
    parser.add_argument(
        "--slabs", type=int, default=100, help="slab programs (milp_cases.slab_case)"
    )
    parser.add_argument(
        "--random", type=int, default=100, help="fuzz programs with an unbounded integer"
    )
    parser.add_argument(
        "--knapsacks",
        type=int,
        default=0,
        help="binary knapsacks of near-alike items (milp_cases.tie_knapsack_case)",
    )
    parser.add_argument(
        "--lattices",
        type=int,
        default=0,
        help="fractional equalities over unbounded integers (milp_cases.lattice_case)",
    )
    parser.add_argument(
        "--start", type=int, default=900_000, help="first seed (held out from the tests)"
    )
    parser.add_argument("--limit", type=float, default=10.0, help="seconds per solve, both sides")
    parser.add_argument(
        "--bound", type=float, default=10.0, help="the ratio an instance must stay under"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="*", help="only the held-out programs of these seeds"
    )
    parser.add_argument(
        "--tuned", action="store_true", help="keep the small-box speed settings (the old behaviour)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    warnings.simplefilter("ignore")
    cases = held_out_cases(args.slabs, args.random, args.start, args.knapsacks, args.lattices)
    if args.seeds:
        cases = [case for case in cases if case.seed in args.seeds]
    print(
        f"{len(cases)} held-out programs ({args.slabs} slabs, {args.random} fuzz with an unbounded integer, "
        f"{args.knapsacks} near-tie knapsacks, {args.lattices} lattices), "
        f"time limit {args.limit} s, one thread"
    )
    for name in args.solvers:
        ratios, over, differ = [], [], []
        undecided = 0
        ours_total = theirs_total = 0.0
        options = {"time_limit": args.limit, "params": tuned_params(name) if args.tuned else {}}
        warm = slab_case(args.start + 10**7, feasible=True)  # loads each side's library; not timed
        DEFAULTS[name](warm, args.limit)
        ilplayer.solve(
            warm.c,
            warm.A,
            warm.b,
            warm.lb,
            warm.ub,
            solver=name,
            executor="serial",
            solver_options=options,
            integrality=warm.integrality,
        )
        for case in cases:
            start = time.perf_counter()
            theirs = DEFAULTS[name](case, args.limit)
            theirs_s = time.perf_counter() - start
            start = time.perf_counter()
            _, status = ilplayer.solve(
                case.c,
                case.A,
                case.b,
                case.lb,
                case.ub,
                solver=name,
                executor="serial",
                solver_options=options,
                A_eq=case.A_eq,
                b_eq=case.b_eq,
                integrality=case.integrality,
            )
            ours_s = time.perf_counter() - start
            ours = Status.names(status)[0]
            ours_total += ours_s
            theirs_total += theirs_s
            ratios.append(ours_s / theirs_s)
            if theirs != "no answer" and ours_s > args.bound * theirs_s:
                over.append(
                    (case.seed, case.kinds[0], round(ours_s * 1e3, 2), round(theirs_s * 1e3, 2))
                )
            if theirs != "no answer" and not _same(ours, theirs):
                differ.append((case.seed, case.kinds[0], ours, theirs))
            undecided += ours == "infeasible_or_unbounded" and theirs in ("infeasible", "unbounded")
        ratio = np.array(ratios)
        label = f"{name} (tuned)" if args.tuned else name
        print(
            f"{label}: ilplayer {ours_total:.2f} s, defaults {theirs_total:.2f} s; per instance ratio median "
            f"{np.median(ratio):.2f}, max {ratio.max():.2f}; over {args.bound:g}x: {len(over)}; "
            f"statuses differ: {len(differ)}; left open (ilplayer 'infeasible or unbounded' where the defaults "
            f"decided): {undecided}"
        )
        for row in over[:10]:
            print(f"  over: seed {row[0]} ({row[1]}) {row[2]} ms vs {row[3]} ms")
        for row in differ[:10]:
            print(f"  differs: seed {row[0]} ({row[1]}) ilplayer {row[2]}, defaults {row[3]}")


if __name__ == "__main__":
    main()
