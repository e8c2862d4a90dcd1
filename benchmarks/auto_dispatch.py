"""executor="serial", "threads" and "auto" side by side: ms per warm batch, as a ratio to serial.

Three layers (one per executor, 2 workers) see the same batches, interleaved, so the machine's
noise falls on all three: B instances drawn from 512 of one family, costs moved by 5 % each
time (training revisits its instances). torch uses one thread.

    python benchmarks/auto_dispatch.py "pyepo knapsack" knapsack "binary m=8" "dense m=4"
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from search_around import pyepo_knapsack

import ilplayer
from ilplayer_experiments.bench import family_batch

EXECUTORS = ("serial", "threads", "auto")


def batch_times(family: str, size: int, batches: int, backend: str) -> dict[str, float]:
    pool = (
        pyepo_knapsack(512, 0) if family == "pyepo knapsack" else family_batch(family, 512, seed=0)
    )
    layers = {
        name: ilplayer.ILPLayer(
            lb=torch.tensor(pool.lb),
            ub=torch.tensor(pool.ub),
            solver=backend,
            executor=name,
            workers=2,
        )
        for name in EXECUTORS
    }
    rng = np.random.default_rng(1)
    A, b = torch.tensor(pool.A), torch.tensor(pool.b)
    times: dict[str, list[float]] = {name: [] for name in EXECUTORS}
    try:
        for _ in range(batches):
            rows = rng.choice(len(pool.c), size, replace=False)
            c = torch.tensor(
                pool.c[rows] * (1 + 0.05 * rng.standard_normal((size, pool.c.shape[1])))
            )
            for name, layer in layers.items():
                start = time.perf_counter()
                layer(c, A, b)
                times[name].append(time.perf_counter() - start)
    finally:
        for layer in layers.values():
            layer.close()
    return {
        name: 1e3 * float(np.mean(values[5:])) for name, values in times.items()
    }  # 5 warm-up batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "families", nargs="*", default=["pyepo knapsack", "knapsack", "binary m=8", "dense m=4"]
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--backend", default="highs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{args.backend}, 2 workers: ms per batch (serial) and ratio to serial")
    for family in args.families:
        for size in args.sizes:
            t = batch_times(family, size, args.batches, args.backend)
            print(
                f"{family:<16} B={size:<4d} serial {t['serial']:8.2f} ms  threads {t['threads'] / t['serial']:.2f}x"
                f"  auto {t['auto'] / t['serial']:.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
