"""Seconds per epoch and regret of a cost loss with ``solve_ratio`` < 1 (a share of the batches
answered from a pool of known decisions, seeded with the training set's) against every batch
solved, interleaved in one run on PyEPO's shortest path. torch uses one intra-op thread.

    python benchmarks/solve_ratio.py --ratios 1 0.3 --method spo+ --backend highs --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

import torch

from ilplayer_experiments import decision_focused as dfl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", default="spo+", choices=["spo+", "pfyl", "pfymul", "pg", "rfy"])
    parser.add_argument("--backend", default="highs")
    parser.add_argument("--ratios", nargs="*", type=float, default=[1.0, 0.3])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    task = dfl.make_task("shortest-path", 1000, 1000, grid=args.grid)
    seconds, regrets = defaultdict(list), defaultdict(list)
    for _ in range(args.repeats):
        for ratio in args.ratios:
            record = dfl.run_method(
                task,
                args.method,
                args.backend,
                epochs=args.epochs,
                solve_ratio=None if ratio == 1.0 else ratio,
            )
            seconds[ratio].append(record["seconds_per_epoch"])
            regrets[ratio].append(record["regret"])
    base = statistics.median(seconds[args.ratios[0]])
    print(
        f"{args.method} on {args.backend}, shortest path {args.grid} x {args.grid}, 1 000 instances, "
        f"median of {args.repeats} repeats x {args.epochs} epochs"
    )
    print(f"{'solve_ratio':>11} {'s/epoch':>8} {'ratio':>6} {'regret %':>9}")
    for ratio in args.ratios:
        median = statistics.median(seconds[ratio])
        print(
            f"{ratio:>11.2f} {median:>8.3f} {median / base:>6.2f} {100 * statistics.median(regrets[ratio]):>9.2f}"
        )


if __name__ == "__main__":
    main()
