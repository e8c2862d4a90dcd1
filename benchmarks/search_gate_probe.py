"""The search gate's probe: what it costs where the search around a start does not pay.

A closed search gate searches (and times) one whole chunk again after ``PROBE_FIRST`` closed
chunks, then ever further apart (``ilplayer.solvers.gates.SearchGate``). Two serial layers, one with
the probe and one without (``PROBE_FIRST`` set past any run), solve the same training-like
batches (B = 64, every cost moved by 30 % each batch, so the pooled starts rarely answer),
interleaved; the mean ms per batch of each is printed.

    python benchmarks/search_gate_probe.py --solvers highs gurobi cpsat
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import ilplayer
import ilplayer.solvers.shortcuts as engine
from ilplayer.testing.instances import family_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solvers", nargs="+", default=["highs"])
    parser.add_argument(
        "--families", nargs="+", default=["dense m=4", "binary m=8", "knapsack", "set cover"]
    )
    parser.add_argument("--batches", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    default = engine.PROBE_FIRST
    for solver in args.solvers:
        for family in args.families:
            data = family_batch(family, 64)
            A, b = torch.tensor(data.A), torch.tensor(data.b)
            layers = {}
            for mode, first in (("with the probe", default), ("without", 10**9)):
                engine.PROBE_FIRST = first  # read when the layer's first batch makes its gate
                layers[mode] = ilplayer.ILPLayer(
                    lb=torch.tensor(data.lb),
                    ub=torch.tensor(data.ub),
                    solver=solver,
                    executor="serial",
                )
                layers[mode](torch.tensor(data.c), A, b)
            engine.PROBE_FIRST = default
            rng = np.random.default_rng(0)
            times: dict[str, list[float]] = {mode: [] for mode in layers}
            for step in range(args.batches):
                c = torch.tensor(data.c * (1 + 0.3 * rng.standard_normal(data.c.shape)))
                for mode in list(layers) if step % 2 else list(layers)[::-1]:
                    start = time.perf_counter()
                    layers[mode](c, A, b)
                    times[mode].append(time.perf_counter() - start)
            for layer in layers.values():
                layer.close()
            print(
                f"{solver:<7} {family:<11} "
                + ", ".join(
                    f"{mode} {1e3 * statistics.mean(seconds):6.1f} ms/batch"
                    for mode, seconds in times.items()
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
