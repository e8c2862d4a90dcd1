"""A crew roster from an MPS file (any modelling tool writes one): ``Program.from_file`` reads
it with HiGHS, and a CombOptNet layer learns per-person costs that reproduce rosters a
planner chose, reading the answer by the file's column names.

    python examples/read_mps.py --epochs 30
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

import ilplayer

MPS = Path(__file__).resolve().parent / "data" / "crew.mps"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=MPS)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--solver", default="highs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    program = ilplayer.Program.from_file(args.file)
    print(program)
    print(
        "the file's own costs:",
        dict(zip(program.variable_names[:6], program.c[:6].tolist())),
        "...",
    )
    layer = ilplayer.ILPLayer(
        ilplayer.Oracle(program, solver=args.solver), ilplayer.gradients.CombOptNet(tau=0.5)
    )
    # The planner's rosters: the file's costs, perturbed per day (what the layer has to recover).
    generator = torch.Generator().manual_seed(0)
    hidden = program.c * (
        1 + 0.5 * torch.rand(16, program.num_variables, generator=generator, dtype=torch.float64)
    )
    with torch.no_grad():
        rosters = layer(hidden)
    costs = program.c.repeat(16, 1).clone().requires_grad_()
    optimizer = torch.optim.Adam([costs], lr=0.1)
    for epoch in range(args.epochs):
        roster = layer(costs)
        loss = ((roster - rosters) ** 2).sum(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if epoch % 10 == 0 or epoch == args.epochs - 1:
            print(
                f"epoch {epoch + 1:2d}: shifts differing from the planner's {loss.item():.2f} per roster"
            )
    chosen = [name for name, value in program.values(roster[0]).items() if value > 0.5]
    print("day 0 roster:", ", ".join(chosen))
    layer.close()


if __name__ == "__main__":
    main()
