"""Where does knapsack-from-text lose its 17 points against the paper? Two measurements that
separate the sentence model from the rest of the pipeline (data, network, settings, gradients):

* ``legible``: the same training (KnapsackNet, CombOptNet, the paper's settings) on inputs that
  state each item's numbers exactly (one-hot price and weight, padded to 384 dimensions) instead
  of its sentence embedding. If this reaches the paper's figure, the pipeline is not the gap.
* ``probe``: how well the KnapsackNet architecture can read prices and weights out of the
  MiniLM embeddings when it is *told* them (supervised regression, which CombOptNet never gets):
  the held-out RMSE and the exact-match accuracy of knapsacks solved with its numbers, a
  ceiling for a readout of this embedding.

    python scripts/knapsack_gap.py --seeds 0 --out experiments/results/knapsack-gap/knapsack-gap.json
    python scripts/knapsack_gap.py --seeds 0 --sentence-model mpnet --no-legible \
        --out experiments/results/knapsack-gap/knapsack-gap-mpnet.json
    python scripts/knapsack_gap.py --seeds 0 --sentence-model minilm-layers --standardise --no-legible \
        --no-mlp-probe --out experiments/results/knapsack-gap/knapsack-gap-minilm-layers-standardised.json
    python scripts/knapsack_gap.py --seeds 0 --items 20 --no-legible \
        --out experiments/results/knapsack-gap/knapsack-gap-20items.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.layer import solve
from ilplayer_experiments import knapsack, sentences
from ilplayer_experiments.paper import ILPLOSS_KNAPSACK


def legible_inputs(data: knapsack.KnapsackData, width: int = 384) -> torch.Tensor:
    """(N, 10, width): one-hot price, then one-hot weight, then zeros."""
    prices = knapsack.PRICE_RANGE[1] - knapsack.PRICE_RANGE[0] + 1
    weights = knapsack.WEIGHT_RANGE[1] - knapsack.WEIGHT_RANGE[0] + 1
    out = torch.zeros(*data.prices.shape, width)
    out.scatter_(-1, (data.prices.long() - knapsack.PRICE_RANGE[0])[..., None], 1.0)
    out.scatter_(-1, (prices + data.weights.long() - knapsack.WEIGHT_RANGE[0])[..., None], 1.0)
    assert prices + weights <= width
    return out


def numbers(net: knapsack.KnapsackNet, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The prices and weights a KnapsackNet reads from ``x`` (before the cost's normalisation)."""
    out = net.outputs(x)
    low, high = knapsack.PRICE_RANGE
    price = low + (high - low) * out[..., 0]
    low, high = knapsack.WEIGHT_RANGE
    return price, low + (high - low) * out[..., 1]


def supervised_probe(
    train: knapsack.KnapsackData,
    test: knapsack.KnapsackData,
    seed: int,
    epochs: int = 100,
    model: str = "minilm",
    standardise: bool = False,
) -> dict[str, float]:
    items = train.y.shape[1]
    torch.manual_seed(derive_seed(seed, 7))
    x_train, x_test = (
        sentences.embed_items(train.sentences, model),
        sentences.embed_items(test.sentences, model),
    )
    net = knapsack.KnapsackNet(x_train.shape[-1])
    if standardise:
        net.standardise(x_train)
    optimizer = torch.optim.Adam(net.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(derive_seed(seed, 8))
    for _ in range(epochs):
        for rows in torch.randperm(len(train.y), generator=g).split(64):
            price, weight = numbers(net, x_train[rows])
            loss = ((price - train.prices[rows]) ** 2 + (weight - train.weights[rows]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        price, weight = numbers(net, x_test)
    result = {
        "prices_rmse": float(((price - test.prices) ** 2).mean().sqrt()),
        "weights_rmse": float(((weight - test.weights) ** 2).mean().sqrt()),
    }
    capacity = torch.full((len(test.y), 1), knapsack.capacity(items), dtype=torch.float64)
    y, _ = solve(
        -price.double(),
        weight.double()[:, None, :],
        capacity,
        0,
        1,
        solver=knapsack.exact_solver(items),
    )
    result["exact_match_with_probe_numbers"] = float((y == test.y).all(-1).double().mean())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0", help="restarts, e.g. 0 or 0,1")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument(
        "--sentence-model",
        choices=sorted(sentences.SENTENCE_MODELS),
        default="minilm",
        help="the sentence model the probes read (default minilm)",
    )
    parser.add_argument(
        "--legible",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also train on the legible inputs (they do not depend on the sentence model)",
    )
    parser.add_argument("--items", type=int, default=10, help="items per knapsack (the paper's 10)")
    parser.add_argument(
        "--standardise",
        action="store_true",
        help="standardise the embeddings first, as KnapsackNet.standardise does",
    )
    parser.add_argument(
        "--mlp-probe",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also train the supervised KnapsackNet probe (else the ridge probe only)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("experiments/results/knapsack-gap/knapsack-gap.json")
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    train, test = knapsack.make_dataset(
        seed=0, train_size=4500, test_size=500, cache=True, items=args.items
    )
    model = args.sentence_model
    results: dict[str, object] = {
        "what": __doc__.split("\n")[0],
        "epochs": args.epochs,
        "sentence_model": sentences.SENTENCE_MODELS[model],
        "items": args.items,
        "paper_accuracy": 64.7 if args.items == 10 else None,
        "ilploss_reported": {
            method: figures.get(args.items) for method, figures in ILPLOSS_KNAPSACK.items()
        },
        "legible": [],
        "probe": [],
        "standardised": args.standardise,
        "linear_probe": knapsack.embedding_probe(
            model=model, items=args.items, standardise=args.standardise
        ),
    }
    for seed in (int(s) for s in args.seeds.split(",")):
        start = time.perf_counter()
        if args.legible:
            _, history = knapsack.train_knapsack(
                train,
                test,
                legible_inputs(train),
                legible_inputs(test),
                seed=seed,
                epochs=args.epochs,
            )
            results["legible"].append(
                {
                    "seed": seed,
                    "accuracy": history[-1]["accuracy"],
                    "best_accuracy": max(h["accuracy"] for h in history),
                    "wall_time_s": time.perf_counter() - start,
                }
            )
        if args.mlp_probe:
            results["probe"].append(
                {
                    "seed": seed,
                    **supervised_probe(train, test, seed, args.epochs, model, args.standardise),
                }
            )
        print(json.dumps(results, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
