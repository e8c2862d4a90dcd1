"""How good is the separating start before any training? For each dataset folder (made by
``learn_reference_study.py``): the rows ``ilplayer.learning.separation`` finds on the training pairs, each
hidden constraint's best cosine among them, and the held-out accuracy of those rows alone.

    python scripts/separating_start.py experiments/results/learn-reference/data/rc-dense-4-data{0,1,2,3,4} \\
        [--rows 1440] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from ilplayer.layer import ILPLayer
from ilplayer.learning.separation import separating_hyperplanes
from ilplayer.metrics import exact_match


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument(
        "--rows", type=int, default=None, help="use the first ROWS training pairs (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the sample of box optima")
    parser.add_argument("--solver", default="gurobi")
    args = parser.parse_args()
    for folder in args.datasets:
        train, test, hidden = (
            np.load(folder / f"{name}.npz") for name in ("train", "test", "hidden")
        )
        lb, ub, m = int(train["lb"]), int(train["ub"]), len(hidden["A"])
        start = time.perf_counter()
        normals, offsets = separating_hyperplanes(
            train["c"][: args.rows], train["y"][: args.rows], lb, ub, 2 * m, seed=args.seed
        )
        seconds = time.perf_counter() - start
        unit = hidden["A"] / np.linalg.norm(hidden["A"], axis=1, keepdims=True)
        cosines = (unit @ normals.T).max(axis=1) if len(normals) else np.zeros(m)
        layer = ILPLayer(lb, ub, solver=args.solver)
        try:
            tensor = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
            accuracy = exact_match(
                layer(tensor(test["c"]), tensor(normals), tensor(offsets)), tensor(test["y"])
            )
        finally:
            layer.close()
        print(
            f"{folder.name}: {len(normals)} rows in {seconds:.1f} s; hidden constraints' best cosines "
            f"{np.round(cosines, 3).tolist()}; held out before training {100 * accuracy:.1f} %",
            flush=True,
        )


if __name__ == "__main__":
    main()
