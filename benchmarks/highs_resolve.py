"""What one ``Highs.run`` of an LP costs when (almost) nothing changed: the floor under any tree
search that ilplayer could run itself over HiGHS' LP.

The LPs are the HiGHS plugin's own: the relaxation of one instance, and its block-diagonal LP
of 16 instances (``ilplayer_highs.solver.BLOCK``). Each is re-solved with nothing changed, with
new costs (what the relaxations and the search around a start do), and with one column's bound
moved to the floor of its LP value and back (what a branch-and-bound node does). Compare the
last row with HiGHS' own cost per MIP node (``python benchmarks/node_cost.py``: 0.09-0.14 ms on
dense m=8).

    python benchmarks/highs_resolve.py
    python benchmarks/highs_resolve.py --family "binary m=8" --runs 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import ilplayer
from ilplayer_experiments.bench import family_batch
from ilplayer_highs.solver import BLOCK


def timed_runs(highs, runs: int, change) -> tuple[float, float]:
    """(us per run, simplex iterations per run) over ``runs`` calls of ``change(i)`` then run()."""
    iterations = 0
    began = time.perf_counter()
    for i in range(runs):
        change(i)
        highs.run()
        iterations += highs.getInfo().simplex_iteration_count
    return 1e6 * (time.perf_counter() - began) / runs, iterations / runs


def measure(highs, size: int, batch, runs: int, rng: np.random.Generator) -> list[str]:
    """The three re-solves of one LP holding ``size`` instances' blocks."""
    n = batch.num_variables
    columns = np.arange(size * n, dtype=np.int32)
    costs = batch.c[:size].ravel()
    highs.changeColsCost(len(columns), columns, costs)
    highs.run()
    x = np.asarray(highs.getSolution().col_value)
    lower, upper = np.asarray(highs.getLp().col_lower_), np.asarray(highs.getLp().col_upper_)
    one = np.array([int(np.argmax(np.abs(x - np.rint(x))))], dtype=np.int32)  # the most fractional
    branched = np.minimum(np.floor(x[one]), upper[one] - 1)

    def nothing(i: int) -> None:
        pass

    def new_costs(i: int) -> None:
        highs.changeColsCost(
            len(columns), columns, batch.c[rng.integers(0, len(batch.c), size)].ravel()
        )

    def bound_moved(i: int) -> None:
        highs.changeColsBounds(1, one, lower[one], branched if i % 2 == 0 else upper[one])

    rows = []
    for name, change in (
        ("nothing changed", nothing),
        ("new costs", new_costs),
        ("one bound moved and back", bound_moved),
    ):
        highs.changeColsCost(len(columns), columns, costs)
        highs.changeColsBounds(1, one, lower[one], upper[one])
        highs.run()
        micros, iterations = timed_runs(highs, runs, change)
        rows.append(f"{name} {micros:.0f} ({iterations:.1f})")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="dense m=8")
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    batch = family_batch(args.family, 256)
    solver = ilplayer.get_solver("highs")
    _, _, relaxation, _, state = solver.model_for(batch)
    block, _ = solver._block_lp(state)
    rng = np.random.default_rng(0)
    print(
        f"HiGHS LP re-solves, {args.family}, n = {batch.num_variables}: us per run (simplex iterations "
        f"per run), {args.runs} runs"
    )
    for label, highs, size in (
        ("one instance", relaxation, 1),
        ("16-instance block", block, BLOCK),
    ):
        print(f"{label:<18} | " + " | ".join(measure(highs, size, batch, args.runs, rng)))
    solver.close()


if __name__ == "__main__":
    main()
