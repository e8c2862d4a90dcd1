"""A worker process's malloc: glibc's defaults against ``ilplayer.parallel.malloc.keep_freed_memory()``.

Fresh processes, one at a time (nothing else running beside them), each build a solver, solve
one task of the pool's plan (half of a B = 256 batch, the dispatcher's own groups) once to warm
up, then time it ``--loops`` times; the page faults per solve come from ``getrusage``. The two
settings alternate, ``--processes`` of each, so the machine's slow minutes fall on both.

    python benchmarks/worker_memory.py --solver cpsat --family "dense m=4"
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import time
from typing import Any


def measure(solver_name: str, family: str, loops: int, keep: bool, results: Any) -> None:
    from ilplayer.core.threads import one_blas_thread
    from ilplayer.parallel.executors import plan_tasks
    from ilplayer.parallel.malloc import keep_freed_memory
    from ilplayer.parallel.workers import SolverRecipe, solve_task
    from ilplayer.testing.instances import family_batch
    from ilplayer_experiments.bench.parallel import dispatched_groups

    if keep:
        keep_freed_memory()
    solver = SolverRecipe.from_name(solver_name).create()
    task = plan_tasks(dispatched_groups(family_batch(family, 256), solver.capabilities), 2)[0]
    seconds, faults = [], []
    with one_blas_thread():
        solve_task(solver, task)
        for _ in range(loops):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            solve_task(solver, task)
            seconds.append(time.perf_counter() - start)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    solver.close()
    results.put((1e3 * statistics.median(seconds), statistics.median(faults)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solver", default="cpsat")
    parser.add_argument("--family", default="dense m=4")
    parser.add_argument("--processes", type=int, default=6, help="fresh processes per setting")
    parser.add_argument("--loops", type=int, default=15)
    args = parser.parse_args()
    context = multiprocessing.get_context("forkserver")
    results = context.Queue()
    found: dict[str, list[tuple[float, float]]] = {"glibc defaults": [], "keep_freed_memory": []}
    print(
        f"backend {args.solver!r}, {args.family}, one task of 2 (B = 256), median of {args.loops} solves "
        "per fresh process"
    )
    for index in range(args.processes):
        for setting in list(found) if index % 2 == 0 else list(found)[::-1]:
            process = context.Process(
                target=measure,
                args=(
                    args.solver,
                    args.family,
                    args.loops,
                    setting == "keep_freed_memory",
                    results,
                ),
            )
            process.start()
            ms, faults = results.get(timeout=600)
            process.join()
            found[setting].append((ms, faults))
            print(
                f"process {index}  {setting:<18} {ms:6.1f} ms per task  {faults:6.0f} page faults per task",
                flush=True,
            )
    for setting, rows in found.items():
        times = sorted(ms for ms, _ in rows)
        print(
            f"{setting:<18} median {statistics.median(times):6.1f} ms (processes {times[0]:.1f}-{times[-1]:.1f}), "
            f"{statistics.median(faults for _, faults in rows):.0f} page faults per task"
        )


if __name__ == "__main__":
    main()
