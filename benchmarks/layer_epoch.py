"""Time of a training-like loop through a layer and a loss: per batch, a CombOptNet layer's
forward and backward and an SPO+ loss (HiGHS, serial, one torch thread); best of ``--repeats``.
Run it with an old commit first on PYTHONPATH (a git worktree) and without, interleaved, to
compare two versions of the library in fresh processes.

    python benchmarks/layer_epoch.py --batches 40
    PYTHONPATH=/tmp/old python benchmarks/layer_epoch.py --batches 40
"""

from __future__ import annotations

import argparse
import time

import torch

import ilplayer
from ilplayer import losses


def epoch_seconds(batches: int, batch: int, solver: str) -> float:
    generator = torch.Generator().manual_seed(0)
    A = torch.rand(4, 16, generator=generator, dtype=torch.float64)
    b = torch.full((4,), 4.0, dtype=torch.float64)
    costs = [
        torch.randn(batch, 16, generator=generator, dtype=torch.float64) for _ in range(batches)
    ]
    with (
        ilplayer.ILPLayer(0, 1, solver=solver, executor="serial", tau=0.5) as layer,
        ilplayer.ILPLayer(0, 1, solver=solver, executor="serial") as reference,
    ):
        spo = losses.SPOPlus(reference)
        start = time.perf_counter()
        for c in costs:
            x = c.clone().requires_grad_()
            layer(x, A, b).sum().backward()
            spo(x, c.flip(0), A, b).backward()
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--solver", default="highs")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    epoch_seconds(2, args.batch, args.solver)  # builds and loads what the first call needs
    best = min(epoch_seconds(args.batches, args.batch, args.solver) for _ in range(args.repeats))
    print(f"{ilplayer.__file__}: {best:.3f} s for {args.batches} batches of {args.batch}")


if __name__ == "__main__":
    main()
