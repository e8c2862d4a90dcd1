"""Per-instance solve time of every installed backend, with the model reused across instances
(ilplayer) beside a fresh model built per instance (what the reference implementation does).

Families, n = 16: binary box with m = 1, 4, 8 random constraints; dense box [-5, 5] with
m = 4, 8; weighted set cover (8 elements, 16 subsets). One thread per solver.

    python benchmarks/solvers.py [--instances 200] [--backends highs gurobi cpsat scip]
"""

from __future__ import annotations

import argparse
import statistics
import time

import ilplayer
from ilplayer.plugin_api import ILPBatch
from ilplayer_experiments.bench import FAMILIES, family_batch

DEFAULT_BACKENDS = ["gurobi", "cpsat", "highs", "scip", "pyomo:appsi_highs"]


def per_instance_ms(solver, batch: ILPBatch, fresh: bool) -> list[float]:
    times = []
    model = None if fresh else solver.model_for(batch)
    for c in batch.c:
        start = time.perf_counter()
        if fresh:
            model = solver.build_model(batch)
        status, _ = solver.solve_instance(model, c)
        if fresh:
            solver.dispose_model(model)
        times.append((time.perf_counter() - start) * 1e3)
        assert status == ilplayer.Status.OPTIMAL
    return times


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[int(0.9 * len(ordered))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--backends", nargs="*", default=DEFAULT_BACKENDS)
    args = parser.parse_args()
    families = FAMILIES
    print(
        f"{args.instances} instances per family (pyomo: a quarter), n = 16, one thread; ms per instance"
    )
    print(
        f"{'backend':<18} {'family':<11} | {'reused median/p90':>18} | {'fresh median/p90':>18} | speed-up"
    )
    for name in args.backends:
        try:
            solver = ilplayer.get_solver(name)
        except (ilplayer.UnknownSolverError, ImportError) as exc:
            print(f"{name:<18} skipped: {exc}")
            continue
        count = args.instances // 4 if name.startswith("pyomo") else args.instances
        for family in families:
            batch = family_batch(family, count)
            per_instance_ms(solver, family_batch(family, 5, seed=1), fresh=False)  # warm-up
            reused = summary(per_instance_ms(solver, batch, fresh=False))
            fresh = summary(per_instance_ms(solver, batch, fresh=True))
            print(
                f"{name:<18} {family:<11} | {reused[0]:>8.3f} / {reused[1]:<7.3f} | "
                f"{fresh[0]:>8.3f} / {fresh[1]:<7.3f} | {fresh[0] / reused[0]:5.1f}x",
                flush=True,
            )
        solver.close()


if __name__ == "__main__":
    main()
