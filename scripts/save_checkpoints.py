"""Save layers and their answers with this release, for the test that a later release loads
them and answers the same (tests/learning/test_checkpoints.py).

    python scripts/save_checkpoints.py tests/data/layers-v0.1.0.pt
"""

from __future__ import annotations

import argparse
import copy

import torch

import ilplayer


def layers() -> dict[str, ilplayer.ILPLayer]:
    """One layer per kind of setting a checkpoint may hold."""
    return {
        "combopt highs": ilplayer.ILPLayer(0, 1, solver="highs", tau=0.5, executor="serial"),
        "perturbed seeded": ilplayer.ILPLayer(
            0,
            1,
            solver="highs",
            gradient="perturbed",
            sigma=0.5,
            samples=4,
            seed=3,
            executor="serial",
        ),
        "blackbox max": ilplayer.ILPLayer(
            0, 1, solver="bruteforce", gradient="blackbox", sense="max"
        ),
        "mixed integer": ilplayer.ILPLayer(
            0,
            [1, 1, 1, 1, 3, 3, 3, 3],
            solver="highs",
            gradient="identity",
            integrality=[1, 1, 1, 1, 0, 0, 0, 0],
            executor="serial",
        ),
        "threads pool": ilplayer.ILPLayer(-1, 2, solver="highs", executor="threads", workers=2),
        "imle seeded": ilplayer.ILPLayer(
            0, 1, solver="highs", gradient="imle", samples=3, seed=5, executor="serial"
        ),
        "aimle seeded": ilplayer.ILPLayer(
            0, 1, solver="bruteforce", gradient="aimle", samples=3, seed=6
        ),
        "frank-wolfe": ilplayer.ILPLayer(0, 1, solver="bruteforce", gradient="frank-wolfe"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    c = torch.randn(6, 8, generator=generator, dtype=torch.float64)
    A = torch.rand(2, 8, generator=generator, dtype=torch.float64)
    b = torch.full((2,), 2.5, dtype=torch.float64)
    saved = {"inputs": (c, A, b), "layers": {}, "answers": {}}
    for name, layer in layers().items():
        saved["layers"][name] = copy.deepcopy(
            layer
        )  # as built: a seeded noise stream not yet drawn from
        with layer:
            y = layer(c.clone().requires_grad_(), A, b)
            y.sum().backward()
            saved["answers"][name] = (y.detach(), layer.last_status)
    torch.save(saved, args.out)


if __name__ == "__main__":
    main()
