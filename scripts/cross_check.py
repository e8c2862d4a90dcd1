"""Backends against a reference on paper-sized instances, where exhaustive enumeration cannot go.

`ilplayer fuzz` checks every backend against enumeration, so its instances have at most a few
thousand box points. The paper's shapes (n = 16 on [-5, 5]: 11^16 points) are out of its
reach, and a wrong answer there went unseen: HiGHS 1.16 with `mip_feasibility_tolerance=1e-9`
returned a point 0.003 above the optimum as optimal on one dense m=4 instance in ~13 000
(docs/records/solvers.md, "Correctness"). This script solves the benchmark families with every
backend the way a layer does (one persistent solver per backend, warm starts and the search
around a start on, costs moved by 1 % each round as training revisits them) and compares each
answer with a cold solve of the reference backend, whose point is checked to meet the rows
strictly (1e-9).

"worse" counts answers above the reference's objective by more than the tolerance (a wrong
answer); "better" those below it (a point inside the 1e-6 band of the rows, which the core
accepts, or a wrong reference); each is saved as JSON under --out.

    python scripts/cross_check.py --sets 20                        # every installed backend
    python scripts/cross_check.py --backends highs --families "dense m=4" --sets 100
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import ilplayer
from ilplayer_experiments.bench import MIP_BACKENDS, SOLVER_FAMILIES, family_batch

STRICT_TOL = 1e-9
# CP-SAT solves costs rounded at scale 1e6: its objective may differ by up to ~1e-5 (solvers.md)
OBJECTIVE_TOL = 1e-5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    installed = [name for name in MIP_BACKENDS if name in ilplayer.available_solvers()]
    parser.add_argument("--backends", nargs="+", default=installed)
    parser.add_argument("--reference", default="gurobi" if "gurobi" in installed else "cpsat")
    parser.add_argument("--families", nargs="+", default=list(SOLVER_FAMILIES))
    parser.add_argument("--sets", type=int, default=10, help="constraint sets per family")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--rounds", type=int, default=3, help="solves of each batch, costs moved by 1 %% between"
    )
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--start", type=int, default=0, help="first constraint-set seed")
    parser.add_argument("--out", type=Path, default=Path("experiments/results/cross-check"))
    args = parser.parse_args()
    reference = ilplayer.get_solver(args.reference, warm_start=False)
    failed = False
    for family in args.families:
        counts = {
            name: {"solved": 0, "worse": 0, "better": 0, "status": 0} for name in args.backends
        }
        for seed in range(args.start, args.start + args.sets):
            batch = family_batch(family, args.batch, seed=seed, n=args.n)
            rng = np.random.default_rng(seed)
            solvers = {name: ilplayer.get_solver(name) for name in args.backends}
            for round_ in range(args.rounds):
                if round_:
                    batch = batch.with_rows(
                        c=batch.c * (1 + 0.01 * rng.standard_normal(batch.c.shape))
                    )
                expected = reference.solve(batch)
                strict = np.all(expected.y @ batch.A.T <= batch.b + STRICT_TOL, axis=1)
                assert strict[expected.status == 0].all(), (
                    f"{args.reference}: a point outside the rows"
                )
                for name, solver in solvers.items():
                    got = solver.solve(batch)
                    tally = counts[name]
                    tally["solved"] += len(batch.c)
                    both = (got.status == 0) & (expected.status == 0)
                    tally["status"] += int((got.status != expected.status).sum())
                    gap = np.where(both, got.objective - expected.objective, 0.0)
                    tol = OBJECTIVE_TOL * (1 + np.abs(np.nan_to_num(expected.objective)))
                    for kind, rows in (
                        ("worse", np.flatnonzero(gap > tol)),
                        ("better", np.flatnonzero(gap < -tol)),
                    ):
                        tally[kind] += len(rows)
                        for row in rows:
                            save(
                                args.out,
                                name,
                                kind,
                                family,
                                seed,
                                round_,
                                batch,
                                row,
                                got,
                                expected,
                            )
            for solver in solvers.values():
                solver.close()
        print(
            f"{family}: "
            + ", ".join(
                f"{name} {c['worse']} worse / {c['better']} better / {c['status']} status "
                f"of {c['solved']}"
                for name, c in counts.items()
            ),
            flush=True,
        )
        failed |= any(c["worse"] or c["status"] for c in counts.values())
    reference.close()
    if failed:
        raise SystemExit(f"disagreements saved under {args.out}")


def save(
    out: Path,
    name: str,
    kind: str,
    family: str,
    seed: int,
    round_: int,
    batch,
    row: int,
    got,
    expected,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = (
        out
        / f"{name}-{kind}-{family.replace(' ', '').replace('=', '')}-set{seed}-round{round_}-row{row}.json"
    )
    path.write_text(
        json.dumps(
            {
                "backend": name,
                "family": family,
                "seed": seed,
                "round": round_,
                "c": batch.c[row].tolist(),
                "A": batch.A.tolist(),
                "b": batch.b.tolist(),
                "lb": batch.lb.tolist(),
                "ub": batch.ub.tolist(),
                "got": {"y": got.y[row].tolist(), "objective": float(got.objective[row])},
                "reference": {
                    "y": expected.y[row].tolist(),
                    "objective": float(expected.objective[row]),
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
