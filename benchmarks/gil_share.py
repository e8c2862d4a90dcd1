"""Which Python holds the GIL while two threads solve the halves of a batch: the part of a
thread's work that the other thread has to wait for.

Two threads, each with its own solver, solve the two halves of one batch (B = 256, the batch
revisited, warm starts on: what a training loop's thread executor does) for ``--seconds``,
while py-spy samples only the threads holding the GIL (``py-spy record --gil``). The table
splits those samples by what the holding thread was doing. py-spy is not one of ilplayer's
dependencies: ``pip install py-spy`` (it needs ptrace, as root or with
``kernel.yama.ptrace_scope = 0``).

    python benchmarks/gil_share.py --solver cpsat --family "dense m=4"
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# (a frame that marks the sample, what it is), the first match wins
PARTS = [
    ("relaxation_multipliers", "the search's LPs (duals and optima)"),
    ("rounded_points", "the search's roundings of the LP optima"),
    ("search_many", "the search itself (search_many)"),
    ("search_chunk", "the search's bookkeeping"),
    ("solve_relaxations", "the LP relaxations"),
    ("feasible", "the answer's float check"),
    ("solve_instance", "the backend's solve_instance (native call, costs, reading the answer)"),
    ("best_for", "the pool's best start"),
    ("WarmStartPool.add", "adding the answer to the pool"),
]


def solve_in_two_threads(solver_name: str, family: str, seconds: float) -> None:
    import numpy as np  # noqa: F401  (imported before the timed part: imports hold the GIL)
    import torch

    import ilplayer
    from ilplayer_experiments.bench import family_batch

    torch.set_num_threads(1)
    batch = family_batch(family, 256)
    halves = [batch.with_rows(c=batch.c[:128]), batch.with_rows(c=batch.c[128:])]
    solvers = [ilplayer.get_solver(solver_name) for _ in halves]
    for solver, half in zip(solvers, halves):  # native models and pools before the timed loop
        solver.solve(half)
    print("timed loop starts", flush=True)

    solved = []

    def loop(solver, half) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            solver.solve(half)
            solved.append(half.num_instances)

    threads = [
        threading.Thread(target=loop, args=pair, name="solve") for pair in zip(solvers, halves)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"instances solved: {sum(solved)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solver", default="cpsat")
    parser.add_argument("--family", default="dense m=4")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=500, help="samples per second")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        solve_in_two_threads(args.solver, args.family, args.seconds)
        return
    if shutil.which("py-spy") is None:
        sys.exit("py-spy is not installed: pip install py-spy")
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "gil.txt"
        child = subprocess.run(
            [
                "py-spy",
                "record",
                "--gil",
                "--nonblocking",
                "-r",
                str(args.rate),
                "-f",
                "raw",
                "-o",
                str(raw),
                "--",
                sys.executable,
                __file__,
                "--child",
                "--solver",
                args.solver,
                "--family",
                args.family,
                "--seconds",
                str(args.seconds),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        instances = int(child.stdout.rpartition("instances solved: ")[2].split()[0])
        stacks = [line.rstrip().rpartition(" ") for line in raw.read_text().splitlines()]
    shares: collections.Counter[str] = collections.Counter()
    for stack, _, count in stacks:
        if "loop (" not in stack:  # start-up and imports
            continue
        part = next((label for key, label in PARTS if key in stack), "the core's loop around them")
        shares[part] += int(count)
    held = sum(shares.values())
    print(
        f"{args.solver}, {args.family}, two threads for {args.seconds:.0f} s: {instances} instances solved, "
        f"the GIL held {held / args.rate:.1f} s ({100 * held / args.rate / args.seconds:.0f} % of the wall "
        f"time), {1e6 * held / args.rate / instances:.0f} us per instance"
    )
    for part, count in shares.most_common():
        print(f"{100 * count / held:5.1f} %  {part}")


if __name__ == "__main__":
    main()
