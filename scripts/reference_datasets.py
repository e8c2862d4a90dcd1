"""Datasets made the way the CombOptNet reference code makes them, as npz files for
``ilplayer learn`` — data that did not come from ilplayer's own generators.

The reference (martius-lab/CombOptNet, ``data.py`` and ``utils/constraint_generation.py``)
draws from numpy's legacy global stream, in this order, which this script follows:

* Random Constraints: ``seed(s)``; normals ``rand(m, n) - 0.5`` scaled to unit length (plus
  1e-8); origins uniform in the centre sub-cube (``rand(m, n)``); bias 0.2 in
  ``a·(y - o) + 0.2 <= 0``; a random corner (``randint(2, size=n)``) and every constraint it
  violates flipped; then per instance a cost ``2 * (rand(n) - 0.5)``, the first 1 000
  instances held out, the next 1 600 for training.
* Weighted set cover: ``n = 2m`` distinct subsets of at most 3 of ``m`` elements, drawn by
  Python's ``random.sample`` until every element lies in at least two of them (the
  reference leaves Python's stream unseeded; here it is seeded with the dataset seed), and
  positive costs ``|2 * (rand(n) - 0.5)|``.

Costs are not normalised (the reference normalises them inside its model; ``argmin`` does not
change). The reference's yaml files say ``positive_costs: flase``, a string YAML reads as
true, so run from those files its Random Constraints costs come out positive too;
``--positive-costs`` makes that variant, the default follows the paper's text ("randomly
sampled normalized vectors", signed).

Example::

    python scripts/reference_datasets.py rc --box binary --m 4 --seed 0 --out data/rc-b4-s0
    python -m ilplayer learn data/rc-b4-s0/train.npz --test data/rc-b4-s0/test.npz \\
        --lb 0 --ub 1 --num-constraints 4
"""

from __future__ import annotations

import argparse
import itertools
import random
from pathlib import Path

import numpy as np

import ilplayer
from ilplayer.solvers.registry import preferred_backend

BOXES = {"binary": (0, 1), "dense": (-5, 5)}
TEST_SIZE, TRAIN_SIZE = 1000, 1600


def random_constraints(
    m: int, n: int, lb: float, ub: float, seed: int, positive_costs: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, b, costs)`` of a Random Constraints dataset, ``A y <= b``."""
    # The reference seeds numpy's global stream twice with the same seed (once for the dataset,
    # once for the constraints): one legacy stream from the seed is the same sequence.
    stream = np.random.RandomState(seed)
    normals = stream.rand(m, n) - 0.5
    normals = normals / (np.linalg.norm(normals, axis=1, keepdims=True) + 1e-8)
    bias = np.full(m, 0.2)
    centre, half = (lb + ub) / 2, 0.5 * (ub - lb) / 2
    origins = stream.rand(m, n) * (2 * half) + (centre - half)
    corner = lb + (ub - lb) * stream.randint(2, size=n)
    violated = (normals * (corner - origins)).sum(axis=1) + bias > 0
    sign = np.where(violated, -1.0, 1.0)
    normals, bias = normals * sign[:, None], bias * sign
    A, b = normals, (normals * origins).sum(axis=1) - bias  # a·y <= a·o - bias
    costs = 2 * (stream.rand(TEST_SIZE + TRAIN_SIZE, n) - 0.5)
    return A, b, np.abs(costs) if positive_costs else costs


def set_cover(m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, b, costs)`` of a weighted set cover dataset over ``m`` elements, ``n = 2m``."""
    n = 2 * m
    stream = np.random.RandomState(seed)
    candidates = [s for size in range(1, 4) for s in itertools.combinations(range(m), size)]
    python_stream = random.Random(seed)
    for _ in range(1000):
        family = python_stream.sample(candidates, n)
        if min(sum(e in s for s in family) for e in range(m)) >= 2:
            break
    else:
        raise RuntimeError(f"no family of {n} subsets covered {m} elements twice in 1000 draws")
    A = np.zeros((m, n))
    for column, subset in enumerate(family):
        A[list(subset), column] = -1.0
    costs = np.abs(2 * (stream.rand(TEST_SIZE + TRAIN_SIZE, n) - 0.5))
    return A, -np.ones(m), costs


def write(
    out: Path, A: np.ndarray, b: np.ndarray, costs: np.ndarray, lb: int, ub: int, solver: str | None
) -> None:
    n = A.shape[1]
    solver = solver or preferred_backend((ub - lb + 1) ** n)
    y, status = ilplayer.solve(costs, A, b, lb, ub, solver=solver)
    if not (status == ilplayer.Status.OPTIMAL).all():
        raise RuntimeError(
            f"{solver} left {(status != ilplayer.Status.OPTIMAL).sum()} instances unsolved"
        )
    y = np.rint(np.asarray(y)).astype(np.int64)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "test.npz", c=costs[:TEST_SIZE], y=y[:TEST_SIZE], lb=lb, ub=ub)
    np.savez(out / "train.npz", c=costs[TEST_SIZE:], y=y[TEST_SIZE:], lb=lb, ub=ub)
    np.savez(out / "hidden.npz", A=A, b=b)
    print(
        f"{out}: {TRAIN_SIZE} train, {TEST_SIZE} test, {len({tuple(r) for r in y})} distinct "
        f"solutions, n = {n}, m = {A.shape[0]}, solved by {solver}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["rc", "wsc"])
    parser.add_argument("--box", choices=sorted(BOXES), default="binary")
    parser.add_argument("--m", type=int, required=True, help="constraints (rc) or elements (wsc)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--positive-costs", action="store_true", help="rc: |c|, as the reference's yaml typo does"
    )
    parser.add_argument(
        "--solver", help="backend for the labels (default: the preferred exact one)"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.task == "rc":
        lb, ub = BOXES[args.box]
        A, b, costs = random_constraints(args.m, 16, lb, ub, args.seed, args.positive_costs)
    else:
        lb, ub = 0, 1
        A, b, costs = set_cover(args.m, args.seed)
    write(args.out, A, b, costs, lb, ub, args.solver)


if __name__ == "__main__":
    main()
