"""Parameter tuning of one backend on the paper's shapes: each candidate's time over the
current defaults, geometric mean over families and constraint sets (interleaved, one thread).

A candidate is a JSON dict of native parameters applied over the backend's defaults; the
answers are checked (every instance optimal, objectives equal to the defaults' within 1e-6).

    python benchmarks/tuning.py highs '{"mip_pscost_minreliable": 8}' '{"mip_heuristic_effort": 0.05}'
    python benchmarks/tuning.py scip '{"heuristics/emphasis": "off"}' --families "dense m=8" --n 32
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import ilplayer
from ilplayer.plugin_api import ILPBatch
from ilplayer_experiments.bench import SOLVER_FAMILIES, family_batch, rotated


def timed_solve(solver, batch: ILPBatch) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    result = solver.solve(batch)
    seconds = time.perf_counter() - start
    assert (result.status == 0).all(), f"{solver.name}: an instance was not solved to optimality"
    return seconds, result.objective


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("backend")
    parser.add_argument("candidates", nargs="*", help="JSON dicts of native parameters")
    parser.add_argument("--families", nargs="*", default=list(SOLVER_FAMILIES))
    parser.add_argument("--sets", type=int, default=3, help="constraint sets per family")
    parser.add_argument("--batch", type=int, default=32, help="cost vectors per constraint set")
    parser.add_argument("--n", type=int, default=16)
    args = parser.parse_args()
    candidates = [{}] + [json.loads(text) for text in args.candidates]
    solvers = [
        ilplayer.get_solver(args.backend, params=params, warm_start=False) for params in candidates
    ]
    logs = [[] for _ in candidates]
    print(
        f"{args.backend}: ms per instance (defaults first), n = {args.n}, {args.sets} constraint "
        f"sets x {args.batch} costs per family"
    )
    for family in args.families:
        totals = [0.0] * len(candidates)
        for seed in range(args.sets):
            batch = family_batch(family, args.batch, seed=seed, n=args.n)
            objectives = {}
            for index in rotated(range(len(solvers)), seed):
                seconds, objectives[index] = timed_solve(solvers[index], batch)
                totals[index] += seconds
                logs[index].append(math.log(seconds))
            for index, objective in objectives.items():
                assert np.allclose(objective, objectives[0], atol=1e-6), (
                    f"candidate {index} disagrees"
                )
        count = args.sets * args.batch
        print(f"{family:<11} " + "  ".join(f"{1e3 * t / count:8.3f}" for t in totals), flush=True)
    print(
        "geometric mean over the defaults: "
        + "  ".join(f"{math.exp(np.mean(np.array(log) - np.array(logs[0]))):.2f}" for log in logs)
    )
    for index, params in enumerate(candidates):
        print(f"  [{index}] {json.dumps(params) if params else 'defaults'}")
    for solver in solvers:
        solver.close()


if __name__ == "__main__":
    main()
