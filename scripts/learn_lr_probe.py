"""Probe: is dense Random Constraints m = 4 slow because its constraints move too little per step?

Runs ``ilplayer learn`` with its defaults on a dataset of ``learn_reference_study.py`` but with
Adam's step for the position parameters (offsets and origins, in the units of y) scaled by
``--scale`` (the dense box is 10 times wider than the binary one), optionally with a cosine
decay of every step size to zero over training (``--cosine``), or with every step size cut
by ``--decay-factor`` once ``--decay-at`` of the steps are done. At ``--scale 1`` it keeps
learn's single parameter group, so the step schedule is the only difference (a run made with
two groups left the defaults' path at epoch 23 on dataset 0, seed 2). A measurement, not an
option of the library: see docs/records/learn.md for what it found.

    python scripts/learn_lr_probe.py --scale 10 --seed 0 \\
        --out experiments/results/learn-reference-probes/scale10-seed0.json
    python scripts/learn_lr_probe.py --scale 1 --decay-at 0.7 --seed 2 \\
        --out experiments/results/learn-reference-probes/decay07-seed2.json
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "experiments" / "results" / "learn-reference" / "data" / "rc-dense-4-data0"


def adam_factory(
    scale: float,
    cosine: bool,
    total_steps: int,
    decay_at: float | None = None,
    decay_factor: float = 0.1,
) -> type:
    class ProbeAdam(torch.optim.Adam):
        """Adam on StaticConstraints' parameters (normals, offsets, origins, in that order)."""

        def __init__(self, params, lr: float) -> None:
            params = list(params)
            # one group at scale 1: the step schedule alone differs from learn's own Adam
            groups = (
                [{"params": params, "lr": lr}]
                if scale == 1
                else [{"params": params[:1], "lr": lr}, {"params": params[1:], "lr": lr * scale}]
            )
            super().__init__(groups, lr=lr)
            for group in self.param_groups:
                group["base_lr"] = group["lr"]
            self.steps = 0

        def step(self, closure=None):
            self.steps += 1
            if cosine:
                factor = 0.5 * (1 + math.cos(math.pi * min(self.steps, total_steps) / total_steps))
                for group in self.param_groups:
                    group["lr"] = group["base_lr"] * factor
            if decay_at is not None and self.steps == math.ceil(decay_at * total_steps) + 1:
                for group in self.param_groups:
                    group["lr"] = group["base_lr"] * decay_factor
            return super().step(closure)

    return ProbeAdam


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--cosine", action="store_true")
    parser.add_argument("--decay-at", type=float, default=None, help="share of the steps, e.g. 0.7")
    parser.add_argument("--decay-factor", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps = 100 * math.ceil(1440 / 8)  # learn's defaults: 100 epochs, batch 8, 1 440 training pairs
    # this process only
    torch.optim.Adam = adam_factory(
        args.scale, args.cosine, steps, args.decay_at, args.decay_factor
    )
    from ilplayer.cli.main import main as ilplayer_main

    args.out.parent.mkdir(parents=True, exist_ok=True)
    ilplayer_main(
        [
            "learn",
            str(args.data / "train.npz"),
            "--test",
            str(args.data / "test.npz"),
            "--lb",
            "-5",
            "--ub",
            "5",
            "--num-constraints",
            "4",
            "--seed",
            str(args.seed),
            "--json",
            str(args.out),
        ]
    )


if __name__ == "__main__":
    main()
