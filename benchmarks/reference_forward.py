"""ilplayer's forward against what the CombOptNet reference does per instance, on the paper's
shapes: a fresh Gurobi model built for every instance on Gurobi's defaults and one thread
(martius-lab/CombOptNet ``models/comboptnet.py``; ``ReferenceLayerSolver`` here).

Each step draws a new constraint set (as a learned ``A, b`` moves every step) and a batch of
cost vectors; the reference and ilplayer's ``Oracle`` on each backend solve the same batch,
interleaved, the order rotated step by step. Printed per shape: the median ms per instance of
each, and the speed-up (reference / ilplayer). The figure issue 66 asks to watch:

    python benchmarks/reference_forward.py            # training: A, b move every step
    python benchmarks/reference_forward.py --fixed    # evaluation: one constraint set
    python benchmarks/reference_forward.py --shapes "dense m=8" --steps 60 --backends gurobi highs scip
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import ilplayer
from ilplayer.testing.instances import family_batch
from ilplayer_experiments.bench.solvers import ReferenceLayerSolver, installed_backends, rotated

SHAPES = ("binary m=1", "binary m=8", "dense m=1", "dense m=8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=SHAPES)
    parser.add_argument("--backends", nargs="*", default=["gurobi", "highs"])
    parser.add_argument("--steps", type=int, default=30, help="constraint sets per shape")
    parser.add_argument(
        "--batch", type=int, default=8, help="cost vectors per step (the paper's batch size)"
    )
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument(
        "--fixed",
        action="store_true",
        help="one (A, b) for every step (a frozen constraint set), not a new one each step",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    backends = installed_backends(args.backends)
    rows = "one (A, b) for all steps" if args.fixed else "a new (A, b) each step"
    print(
        f"ms per instance, median over {args.steps} steps of {args.batch} instances ({rows}), "
        "interleaved; speed-up = reference / ilplayer",
        flush=True,
    )
    for shape in args.shapes:
        reference = ReferenceLayerSolver()
        oracles = {}
        for name in backends:
            first = family_batch(shape, 1, seed=0, n=args.n)
            program = ilplayer.Program(lb=float(first.lb[0]), ub=float(first.ub[0]))
            oracles[name] = ilplayer.Oracle(program, solver=name, executor="serial")
        names = ["reference", *oracles]
        samples: dict[str, list[float]] = {name: [] for name in names}
        for step in range(args.steps + 1):  # step 0 warms every side up, untimed
            if args.fixed:  # the same (A, b), new costs
                batch = family_batch(shape, args.batch * (step + 1), seed=1000, n=args.n)
                batch = batch.with_rows(c=batch.c[-args.batch :])
            else:
                batch = family_batch(shape, args.batch, seed=1000 + step, n=args.n)
            c, A, b = (torch.tensor(x) for x in (batch.c, batch.A, batch.b))
            for name in rotated(names, step):
                began = time.perf_counter()
                if name == "reference":
                    reference.solve(batch)
                else:
                    oracles[name](c, A, b)
                if step:
                    samples[name].append(1e3 * (time.perf_counter() - began) / args.batch)
        reference.close()
        for oracle in oracles.values():
            oracle.close()
        base = statistics.median(samples["reference"])
        cells = [f"reference {base:.2f}"] + [
            f"{name} {statistics.median(samples[name]):.2f} "
            f"({base / statistics.median(samples[name]):.2f}x)"
            for name in oracles
        ]
        print(f"{shape:10s}  " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
