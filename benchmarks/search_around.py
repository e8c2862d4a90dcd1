"""A backend (HiGHS by default) with and without the search around a pooled start
(ilplayer.solvers.reduced_costs), on fresh
and on revisited costs: ms per instance, every answer checked against a cold solve.

For each family, 4 constraint sets: a warm-up batch of 64 costs, then 64 fresh costs on the
same set ("fresh"), then the warm-up's costs moved by 1 % ("revisited"). "start" is HiGHS with
warm starts but without the search; "+search" the default.

    python benchmarks/search_around.py "pyepo knapsack" knapsack "binary m=8" "set cover" "dense m=8"
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ilplayer
from ilplayer.core.records import ILPBatch
from ilplayer_experiments.bench import family_batch
from ilplayer_experiments.decision_focused import knapsack_data


def pyepo_knapsack(count: int, seed: int) -> ILPBatch:
    """PyEPO's knapsack (2 rows, 32 items, capacity 20) with its costs x (1 + 0.3 N(0, 1))."""
    weights, _, values = knapsack_data(1000, 5, 32, 2, 4, 0.5, 135)
    rng = np.random.default_rng(seed)
    c = -(
        values[seed * count : (seed + 1) * count].astype(np.float64)
        * (1 + 0.3 * rng.standard_normal((count, 32)))
    )
    return ILPBatch(
        c=c, A=weights.astype(np.float64), b=np.full(2, 20.0), lb=np.zeros(32), ub=np.ones(32)
    )


def timed(solver, batch: ILPBatch) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    result = solver.solve(batch)
    return 1e3 * (time.perf_counter() - start) / batch.num_instances, result.objective


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "families",
        nargs="*",
        default=["pyepo knapsack", "knapsack", "binary m=8", "set cover", "dense m=4", "dense m=8"],
    )
    parser.add_argument("--sets", type=int, default=4)
    parser.add_argument("--backend", default="highs")
    args = parser.parse_args()
    print(f"{args.backend}: ms per instance")
    print(
        f"{'family':<16} {'cold':>6} | fresh: {'start':>6} {'+search':>7} | revisited: {'start':>6} {'+search':>7}"
    )
    for family in args.families:
        times: dict[str, list[float]] = {
            key: [] for key in ("cold", "fresh", "fresh+", "revisit", "revisit+")
        }
        for seed in range(args.sets):
            both = (
                pyepo_knapsack(128, seed)
                if family == "pyepo knapsack"
                else family_batch(family, 128, seed=seed)
            )
            warmup, fresh = both.with_rows(c=both.c[:64]), both.with_rows(c=both.c[64:])
            rng = np.random.default_rng(seed)
            revisit = warmup.with_rows(
                c=warmup.c * (1 + 0.01 * rng.standard_normal(warmup.c.shape))
            )
            cold = ilplayer.get_solver(args.backend, warm_start=False)
            no_search = ilplayer.get_solver(args.backend)
            no_search.relaxation_multipliers = lambda model, c: [None] * len(c)
            search = ilplayer.get_solver(args.backend)
            for solver in (cold, no_search, search):
                solver.solve(warmup)
            for key, solver, batch in (
                ("cold", cold, fresh),
                ("fresh", no_search, fresh),
                ("fresh+", search, fresh),
                ("revisit", no_search, revisit),
                ("revisit+", search, revisit),
            ):
                ms, objective = timed(solver, batch)
                times[key].append(ms)
                if key == "revisit":
                    reference_revisit = objective
                elif key == "cold":
                    reference_fresh = objective
                else:
                    reference = reference_revisit if key.startswith("revisit") else reference_fresh
                    assert np.allclose(objective, reference, atol=1e-6), (
                        f"{family}: {key} disagrees"
                    )
        mean = {key: float(np.mean(value)) for key, value in times.items()}
        print(
            f"{family:<16} {mean['cold']:6.2f} |        {mean['fresh']:6.2f} {mean['fresh+']:7.2f} |"
            f"            {mean['revisit']:6.2f} {mean['revisit+']:7.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
