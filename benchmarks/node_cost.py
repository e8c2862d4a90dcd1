"""Where a MIP backend's time goes: nodes per instance and milliseconds per node.

Each backend solves the same instances with ilplayer's parameters, straight through its native
model (no box check, LP shortcut, search or pooled start), cold and then with the instance's
optimum handed over as its start (HiGHS: cutoff and MIP start). A least-squares fit over the
instances splits each backend's time into a fixed part (model setup, root) and a cost per node.
Ratios are to the first backend, measured in the same run, constraint sets interleaved.

    python benchmarks/node_cost.py                          # highs against gurobi, dense m=8
    python benchmarks/node_cost.py --families "dense m=4" "binary m=8" --sets 6
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import ilplayer
from ilplayer_experiments.bench import family_batch, rotated

NODES = {  # native node count of the last solve, read off the plugin's model
    "gurobi": lambda model: model.mip.NodeCount,
    "highs": lambda model: model.highs.getInfo().mip_node_count,
}


def timed_nodes(
    solver, model, c: np.ndarray, start: np.ndarray | None
) -> tuple[float, float, np.ndarray]:
    began = time.perf_counter()
    status, y = solver.solve_instance(model, c, start)
    seconds = time.perf_counter() - began
    assert status == ilplayer.Status.OPTIMAL, f"{solver.name}: status {status!r}"
    return seconds, float(NODES[solver.name](model)), y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", nargs="+", default=["gurobi", "highs"], choices=sorted(NODES))
    parser.add_argument("--families", nargs="+", default=["dense m=8"])
    parser.add_argument("--sets", type=int, default=4, help="constraint sets per family")
    parser.add_argument("--batch", type=int, default=64, help="cost vectors per constraint set")
    args = parser.parse_args()
    torch.set_num_threads(1)
    solvers = {name: ilplayer.get_solver(name, warm_start=False) for name in args.backends}
    print(
        f"ms per instance, nodes per instance and the fit ms = fixed + per node x nodes; {args.sets} "
        f"constraint sets x {args.batch} fresh costs per family, one thread; ratio to {args.backends[0]}"
    )
    for family in args.families:
        for started in (False, True):
            seconds = {name: [] for name in solvers}
            nodes = {name: [] for name in solvers}
            for seed in range(args.sets):
                batch = family_batch(family, args.batch, seed=seed)
                optimum = solvers[args.backends[0]].solve(
                    batch
                )  # the starts (and the answer check)
                for name in rotated(list(solvers), seed):
                    model = solvers[name].model_for(batch)
                    for c, best, value in zip(batch.c, optimum.y, optimum.objective):
                        took, count, y = timed_nodes(
                            solvers[name], model, c, best if started else None
                        )
                        assert abs(c @ y - value) <= 1e-6 * max(1.0, abs(value)), (
                            f"{name} disagrees"
                        )
                        seconds[name].append(1e3 * took)
                        nodes[name].append(count)
            label = f"{family}, {'the optimum as start' if started else 'cold'}"
            print(
                f"\n{label}\n{'backend':<8} {'ms':>7} {'nodes':>7} | {'fixed ms':>8} {'ms/node':>8} | "
                "ratio ms  ratio ms/node"
            )
            base = None
            for name in solvers:
                ms, count = np.array(seconds[name]), np.array(nodes[name])
                per_node, fixed = np.polyfit(count, ms, 1)
                base = base or (ms.mean(), per_node)
                print(
                    f"{name:<8} {ms.mean():7.2f} {count.mean():7.1f} | {fixed:8.3f} {per_node:8.4f} | "
                    f"{ms.mean() / base[0]:7.2f}x  {per_node / base[1]:7.2f}x",
                    flush=True,
                )
    for solver in solvers.values():
        solver.close()


if __name__ == "__main__":
    main()
