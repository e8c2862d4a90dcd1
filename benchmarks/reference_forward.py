"""ilplayer's forward against what the CombOptNet reference does per instance, on the paper's
shapes: a fresh Gurobi model built for every instance on Gurobi's defaults and one thread
(martius-lab/CombOptNet ``models/comboptnet.py``; ``ReferenceLayerSolver`` here).

Each step draws a new constraint set (as a learned ``A, b`` moves every step) and a batch of
cost vectors; the reference and ilplayer's ``Oracle`` on each backend solve the same batch,
interleaved: each backend beside its own run of the reference, the pair's order alternating
step by step (whichever side ran right after the reference's Gurobi models measured 30-50 %
slower, and a rotation of all the sides had put one backend there twice as often as another).
Printed per shape and backend: the median over pairs of steps of each side's ms per instance
(`paired_median`) and the speed-up (reference / ilplayer). The figure issue 66 asks to watch:

    python benchmarks/reference_forward.py            # training: A, b move every step
    python benchmarks/reference_forward.py --fixed    # evaluation: one constraint set
    python benchmarks/reference_forward.py --after-network  # each solve after a network step
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
_NETWORK = torch.nn.Sequential(
    torch.nn.Linear(256, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 16),
)
_FEATURES = torch.randn(64, 256, generator=torch.Generator().manual_seed(0))


def network_step() -> None:
    """A network's forward and backward (about 2 ms of torch): with ``--after-network`` every
    timed solve follows it, as a layer's forward does in training, and starts on caches the
    network's weights went through."""
    _NETWORK.zero_grad()
    _NETWORK(_FEATURES).square().sum().backward()


def paired_median(samples: list[float]) -> float:
    """The median over pairs of steps of each pair's mean: a side ran right after the other in
    one step of each pair (30-50 % slower there, cold caches) and before it in the other."""
    pairs = [(a + b) / 2 for a, b in zip(samples[0::2], samples[1::2])]
    return statistics.median(pairs)


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
    parser.add_argument(
        "--after-network",
        action="store_true",
        help="every timed solve after a network's forward and backward, as in training",
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
        # Each backend beside its own run of the reference, one backend after another, the
        # pair's order alternating step by step: R B | B R | R B ... puts each side right after
        # the other in one step of every two (cold caches there) and after itself in the other.
        samples: dict[str, list[float]] = {}
        for backend in oracles:
            for step in range(args.steps + 1):  # step 0 warms both sides up, untimed
                if args.fixed:  # the same (A, b), new costs
                    batch = family_batch(shape, args.batch * (step + 1), seed=1000, n=args.n)
                    batch = batch.with_rows(c=batch.c[-args.batch :])
                else:
                    batch = family_batch(shape, args.batch, seed=1000 + step, n=args.n)
                c, A, b = (torch.tensor(x) for x in (batch.c, batch.A, batch.b))
                for name in rotated(["reference", backend], step):
                    if args.after_network:  # what comes before a layer's forward in training
                        network_step()
                    began = time.perf_counter()
                    if name == "reference":
                        reference.solve(batch)
                    else:
                        oracles[name](c, A, b)
                    if step:
                        key = f"reference beside {backend}" if name == "reference" else name
                        ms = 1e3 * (time.perf_counter() - began) / args.batch
                        samples.setdefault(key, []).append(ms)
        reference.close()
        for oracle in oracles.values():
            oracle.close()
        cells = []
        for name in oracles:
            base = paired_median(samples[f"reference beside {name}"])
            ours = paired_median(samples[name])
            cells.append(f"{name} {ours:.2f} against {base:.2f} ({base / ours:.2f}x)")
        print(f"{shape:10s}  " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
