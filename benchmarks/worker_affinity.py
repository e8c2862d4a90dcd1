"""Task-to-worker affinity: ilplayer's worker lanes against one shared pool, same batches.

A layer's pool runs task ``j`` of every batch on worker ``j`` (one single-worker pool per
worker, "lanes"), so a worker meets the same instances again and starts from their previous
answers. One shared pool gives a task to whichever worker is free; this benchmark runs that
too (a ``concurrent.futures`` pool of 2 handed to the layer) beside serial and the lanes, on
the same batches, interleaved and rotated so the machine's noise falls on all of them.

Each round solves a batch of B instances of one ``(A, b)``, either the same costs again
(``--revisit same``, as ``ilplayer bench parallel`` does) or costs moved by 1 % (``moved``, a
training epoch). ms per batch is the median over the rounds after two warm-up rounds; the
speed-up is serial's median over the executor's.

    python benchmarks/worker_affinity.py --solver cpsat --families "dense m=4" "binary m=4"
"""

from __future__ import annotations

import argparse
import concurrent.futures
import statistics
import time

import numpy as np
import torch

import ilplayer
from ilplayer.parallel.executors import FuturesExecutor
from ilplayer.parallel.workers import start_process_pool
from ilplayer_experiments.bench import family_batch, rotated


def layers_for(
    kind: str, solver: str, lb: torch.Tensor, ub: torch.Tensor, shared: concurrent.futures.Executor
) -> dict[str, ilplayer.ILPLayer]:
    return {
        "serial": ilplayer.ILPLayer(lb=lb, ub=ub, solver=solver, executor="serial"),
        f"{kind}, one shared pool": ilplayer.ILPLayer(
            lb=lb, ub=ub, solver=solver, executor=FuturesExecutor(shared, kind=kind, workers=2)
        ),
        f"{kind}, lanes": ilplayer.ILPLayer(lb=lb, ub=ub, solver=solver, executor=kind, workers=2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solver", default="highs")
    parser.add_argument("--families", nargs="+", default=["dense m=4", "binary m=4", "set cover"])
    parser.add_argument(
        "--kinds", nargs="+", default=["processes", "threads"], choices=["processes", "threads"]
    )
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--revisit", choices=["same", "moved"], default="same")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"backend {args.solver!r}, B = {args.batch}, 2 workers, costs {args.revisit} each round; "
        f"median ms per batch over {args.rounds} rounds after 2 warm-up rounds"
    )
    for family in args.families:
        data = family_batch(family, args.batch)
        A, b = torch.tensor(data.A), torch.tensor(data.b)
        rng = np.random.default_rng(0)
        for kind in args.kinds:
            shared = (
                concurrent.futures.ThreadPoolExecutor(2)
                if kind == "threads"
                else start_process_pool(2)
            )
            layers = layers_for(
                kind, args.solver, torch.tensor(data.lb), torch.tensor(data.ub), shared
            )
            times: dict[str, list[float]] = {name: [] for name in layers}
            c = data.c.copy()
            try:
                for round_ in range(args.rounds + 2):
                    if args.revisit == "moved":
                        c = c * (1 + 0.01 * rng.standard_normal(c.shape))
                    for name in rotated(list(layers), round_):
                        start = time.perf_counter()
                        layers[name](torch.tensor(c), A, b)
                        if round_ >= 2:
                            times[name].append(time.perf_counter() - start)
                        assert (layers[name].last_status == ilplayer.Status.OPTIMAL).all(), name
            finally:
                for layer in layers.values():
                    layer.close()
                shared.shutdown(wait=True, cancel_futures=True)  # the layers leave a pool passed in
            serial = statistics.median(times["serial"])
            for name, seconds in times.items():
                ms = 1e3 * statistics.median(seconds)
                print(
                    f"{family:<11} {name:<26} {ms:8.1f} ms  {serial / statistics.median(seconds):5.2f}x",
                    flush=True,
                )


if __name__ == "__main__":
    main()
