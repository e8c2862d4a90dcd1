"""Solve new 9x9 sudoku puzzles with the rules ilplayer learned from 10,000 solved ones
(``experiments/results/sudoku-9x9.pt``, written by ``ilplayer learn --out``; docs/sudoku.md).

    python examples/solve_sudoku.py --puzzles 5 --solver highs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import ilplayer
from ilplayer_experiments.sudoku import decode, make_puzzles

RULES = Path(__file__).resolve().parent.parent / "experiments" / "results" / "sudoku-9x9.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rules", type=Path, default=RULES, help="a file ilplayer learn --out wrote"
    )
    parser.add_argument("--puzzles", type=int, default=5, help="new puzzles to solve")
    parser.add_argument(
        "--seed", type=int, default=2026, help="their seed (the training puzzles used 0)"
    )
    parser.add_argument("--solver", default="highs")
    args = parser.parse_args()
    rules = torch.load(args.rules, weights_only=True)
    print(
        f"learned program: {len(rules['A_eq'])} equalities, {len(rules['A'])} inequalities on "
        f"{rules['A_eq'].shape[1]} binary variables"
    )
    puzzles = make_puzzles(9, args.puzzles, seed=args.seed)
    c = torch.as_tensor(puzzles.costs())  # minus the one-hot of the givens
    start = time.perf_counter()
    y, status = ilplayer.solve(
        c,
        rules["A"],
        rules["b"],
        rules["lb"],
        rules["ub"],
        solver=args.solver,
        A_eq=rules["A_eq"],
        b_eq=rules["b_eq"],
    )
    seconds = time.perf_counter() - start
    grids = decode(y, 9)
    right = (grids == puzzles.solutions).reshape(len(grids), -1).all(1)
    print(
        "puzzle 0:\n"
        + "\n".join(" ".join(str(d) if d else "." for d in row) for row in puzzles.givens[0])
    )
    print("answer 0:\n" + "\n".join(" ".join(map(str, row)) for row in grids[0]))
    print(
        f"{int(right.sum())} of {len(right)} boards right on {args.solver} in {seconds:.2f} s "
        f"({1e3 * seconds / len(right):.1f} ms a puzzle); statuses {sorted(set(ilplayer.Status.names(status)))}"
    )


if __name__ == "__main__":
    main()
