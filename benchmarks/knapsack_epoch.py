"""CombOptNet's knapsack-from-text training per MIP backend: the same epochs on the same data
and seed, one backend after another, in one command (the ratio to the first backend is the
figure; absolute times depend on what else runs).

The untrained network predicts nearly the same price and weight for every item, so its first
epochs solve knapsacks of near-alike items, where branch and bound can go deep; this measures
which backend the experiment should train on past 16 items (the built-in ``knapsack`` backend,
meet in the middle; ``bruteforce`` enumerates up to 20 items).
Needs the text extra (the MiniLM sentence model); the dataset and embeddings are cached.

    OMP_NUM_THREADS=1 python benchmarks/knapsack_epoch.py --items 20 --train 400 --epochs 2
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument(
        "--train", type=int, default=400, help="training instances (of the experiment's 4,500)"
    )
    parser.add_argument(
        "--test", type=int, default=100, help="held-out instances scored after each epoch"
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--solvers", nargs="*", default=["knapsack", "bruteforce", "highs", "gurobi", "scip"]
    )
    args = parser.parse_args()
    torch.set_num_threads(1)  # the backends solve on one thread each; torch must not compete

    from ilplayer.solvers.registry import available_solvers
    from ilplayer_experiments import knapsack, sentences

    train, test = knapsack.make_dataset(seed=0, cache=True, items=args.items)

    def head(data: knapsack.KnapsackData, count: int) -> tuple[knapsack.KnapsackData, torch.Tensor]:
        part = knapsack.KnapsackData(
            data.sentences[:count], data.prices[:count], data.weights[:count], data.y[:count]
        )
        return part, sentences.embed_items(part.sentences)

    (train, embed_train), (test, embed_test) = head(train, args.train), head(test, args.test)
    first = None
    print(f"{args.items} items, {args.train} training instances, {args.epochs} epochs")
    for solver in args.solvers:
        if solver not in available_solvers():
            print(f"{solver:8s} not installed")
            continue
        start = time.perf_counter()
        _, history = knapsack.train_knapsack(
            train, test, embed_train, embed_test, epochs=args.epochs, solver=solver
        )
        wall = time.perf_counter() - start
        first = first or wall
        accuracy = ", ".join(f"{100 * h['accuracy']:.1f}" for h in history)
        print(
            f"{solver:8s} {wall:7.1f} s  x{wall / first:5.1f}  held-out accuracy by epoch: {accuracy} %"
        )


if __name__ == "__main__":
    main()
