"""What a process lane costs around its workers' solves: ilplayer's pipe lanes against
single-worker ``ProcessPoolExecutor`` lanes (the lanes before 2026-11-27), same tasks.

Each round sends the two tasks of one batch (the dispatcher's own plan of a B = 256 batch)
to two workers and waits for both answers, on each kind of lane in turn; the workers time
their own solves, so what is left of a round is the lane's: the time until the last task
starts solving, and from the last answer's end until the caller holds it.

    python benchmarks/lane_transport.py --solver cpsat --family "dense m=4"
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np


def timed(recipe: Any, task: Any) -> tuple[float, float, Any]:
    from ilplayer.parallel.workers import run_task

    start = time.monotonic()  # system-wide on Linux: comparable across processes
    answer = run_task(recipe, task)
    return start, time.monotonic(), answer


def main() -> None:
    from ilplayer.parallel.executors import plan_tasks
    from ilplayer.parallel.lanes import ProcessLane
    from ilplayer.parallel.workers import (
        SolverRecipe,
        ping,
        start_process_pool,
        terminate_process_pool,
    )
    from ilplayer.testing.instances import family_batch
    from ilplayer_experiments.bench.parallel import dispatched_groups
    from ilplayer_experiments.bench.solvers import rotated

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solver", default="cpsat")
    parser.add_argument("--family", default="dense m=4")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    recipe = SolverRecipe.from_name(args.solver)
    tasks = plan_tasks(dispatched_groups(family_batch(args.family, 256), recipe), 2)
    lanes: dict[str, list[Any]] = {
        "ProcessPoolExecutor lanes": [start_process_pool(1) for _ in tasks],
        "pipe lanes (ProcessLane)": [ProcessLane() for _ in tasks],
    }
    for pools in lanes.values():  # start every worker before timing
        for lane in pools:
            lane.submit(ping, 0).result()
    found: dict[str, list[tuple[float, float, float]]] = {name: [] for name in lanes}
    try:
        for round_ in range(args.rounds + 2):
            for name in rotated(list(lanes), round_):
                start = time.monotonic()
                futures = [
                    lane.submit(timed, recipe, task) for lane, task in zip(lanes[name], tasks)
                ]
                answers = [future.result() for future in futures]
                end = time.monotonic()
                if round_ >= 2:  # the first two build the workers' models and warm starts
                    found[name].append(
                        (
                            max(a[0] for a in answers) - start,
                            max(a[1] - a[0] for a in answers),
                            end - max(a[1] for a in answers),
                        )
                    )
    finally:
        for pools in lanes.values():
            for lane in pools:
                if isinstance(lane, ProcessLane):
                    lane.terminate()
                else:
                    terminate_process_pool(lane)
    print(
        f"backend {args.solver!r}, {args.family}, 2 tasks of a B = 256 batch, median of {args.rounds} rounds (ms)"
    )
    for name, rows in found.items():
        to_start, slowest, back = (1e3 * statistics.median(column) for column in np.array(rows).T)
        print(
            f"{name:<26} until the last task starts {to_start:5.2f}  slowest solve {slowest:6.1f}  "
            f"last answer back {back:5.2f}  lane's share {to_start + back:5.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
