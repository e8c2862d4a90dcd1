"""The separating start polished, with no training: what ``ilplayer learn``'s defaults would
return if the start won the comparison with the trained epoch. For each dataset folder (made by
``learn_reference_study.py``): learn's split (10 % validation, ``--seed``), learn's start (2 x m
rows, ``TrainingConfig(k=2, init="separating")``) and learn's polish, and the validation and
held-out accuracies before and after.

    python scripts/start_polish.py experiments/results/learn-reference/data/rc-dense-4-data{0,1,2,3,4} [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from ilplayer.layer import ILPLayer
from ilplayer.learning.defaults import LEARN_K
from ilplayer.learning.learn import load_solutions, split_holdout
from ilplayer.learning.loop import initial_constraints
from ilplayer.learning.selection import polish_model
from ilplayer.learning.settings import SolutionData, TrainingConfig
from ilplayer.metrics import exact_match


def scores(layer: ILPLayer, model, pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[float]:
    return [100 * exact_match(layer(c, *model()), y) for c, y in pairs]


def measure(folder: Path, seed: int, solver: str) -> str:
    tensor = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    c, y, lb, ub = load_solutions(folder / "train.npz")
    c_test, y_test, _, _ = load_solutions(folder / "test.npz")
    m = len(np.load(folder / "hidden.npz")["A"])
    c, y, c_val, y_val = split_holdout(np.asarray(c, float), np.asarray(y, float), 0.1, seed)
    data = SolutionData(tensor(c), tensor(y), tensor(c_test), tensor(y_test), lb, ub)
    validation = (tensor(c_val), tensor(y_val))
    pairs = [validation, (data.c_test, data.y_test)]
    config = TrainingConfig(k=LEARN_K, init="separating")
    start = time.perf_counter()
    model = initial_constraints(config, LEARN_K * m, data.c_train, data.y_train, lb, ub, seed)
    layer = ILPLayer(lb, ub, solver=solver)
    try:
        with torch.no_grad():
            before = scores(layer, model, pairs)
            polished, summary = polish_model(model, data, validation, layer, config.origin)
            after = scores(layer, polished, pairs)
    finally:
        layer.close()
    kept = "kept" if summary["kept"] else "not kept"
    return (
        f"{folder.name}: start: validation {before[0]:.1f} %, held out {before[1]:.1f} %; polished "
        f"({summary['rows_before']} -> {summary['rows_after']} rows, {kept}): validation {after[0]:.1f} %, "
        f"held out {after[1]:.1f} % ({time.perf_counter() - start:.0f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument(
        "--seed", type=int, default=0, help="learn's --seed: the split and the start"
    )
    parser.add_argument("--solver", default="gurobi")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for folder in args.datasets:
        print(measure(folder, args.seed, args.solver), flush=True)


if __name__ == "__main__":
    main()
