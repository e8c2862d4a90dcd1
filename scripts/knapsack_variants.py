"""Does CombOptNet's knapsack from text gain from a schedule or from regularisation? The paper's
training (KnapsackNet, CombOptNet gradients, MSE on the selections) with one change at a time,
and the training set's exact matches printed beside the held-out ones, to tell a network that
cannot fit its data from one that fits it and does not generalise.

    python scripts/knapsack_variants.py --variants paper,cosine,dropout,standardised --seed 0 \
        --out results/knapsack-variants/knapsack-variants-seed0.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from ilplayer.apps.experiments import knapsack, sentences
from ilplayer.layer import ILPLayer
from ilplayer.metrics import exact_match
from ilplayer.seeding import derive_seed

VARIANTS = {  # name: what changes from the paper's settings (100 epochs, Adam 5e-4, batches of 8)
    "paper": {},
    "cosine": {"cosine": True},                                   # the rate falls to 0 by a cosine
    "dropout": {"cosine": True, "dropout": 0.3},                  # dropout on the hidden layer
    "standardised": {"cosine": True, "standardise": True},        # inputs to zero mean, unit spread
    "standardised+dropout": {"cosine": True, "standardise": True, "dropout": 0.3},
}


def embeddings(data: knapsack.KnapsackData, model: str) -> torch.Tensor:
    flat = [s for row in data.sentences for s in row]
    vectors = torch.from_numpy(sentences.embed_sentences(flat, model=model))
    return vectors.reshape(len(data.sentences), -1, vectors.shape[-1]).double()


def train(variant: dict, seed: int, items: int, model_name: str, epochs: int) -> list[dict[str, float]]:
    """One run; per epoch the training loss and the exact matches on the test set and on the
    first 500 training instances."""
    train_set, test_set = knapsack.make_dataset(seed=0, train_size=4500, test_size=500, cache=True, items=items)
    x_train, x_test = embeddings(train_set, model_name), embeddings(test_set, model_name)
    if variant.get("standardise"):
        flat = x_train.reshape(-1, x_train.shape[-1])
        mean, spread = flat.mean(0), flat.std(0)
        x_train, x_test = (x_train - mean) / spread, (x_test - mean) / spread
    torch.manual_seed(derive_seed(seed, 1))
    net = knapsack.KnapsackNet(x_train.shape[-1], capacity=knapsack.capacity(items)).double()
    if variant.get("dropout"):
        net.mlp.insert(2, torch.nn.Dropout(variant["dropout"]))
    layer = ILPLayer(0, 1, solver=knapsack.training_solver(items), tau=0.5)
    optimizer = torch.optim.Adam(net.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(derive_seed(seed, 2))
    batches = epochs * math.ceil(len(train_set.y) / 8)
    step, history = 0, []
    for epoch in range(epochs):
        net.train()
        total = 0.0
        for rows in torch.randperm(len(train_set.y), generator=g).split(8):
            if variant.get("cosine"):
                optimizer.param_groups[0]["lr"] = 5e-4 * 0.5 * (1 + math.cos(math.pi * step / batches))
            y = layer(*net(x_train[rows]))
            loss = torch.nn.functional.mse_loss(y - 0.5, train_set.y[rows] - 0.5)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step, total = step + 1, total + loss.item() * len(rows)
        net.eval()
        with torch.no_grad():
            held_out = exact_match(layer(*net(x_test)).double(), test_set.y)
            fitted = exact_match(layer(*net(x_train[:500])).double(), train_set.y[:500])
        history.append({"epoch": epoch + 1, "loss": total / len(train_set.y), "accuracy": held_out,
                        "train_accuracy": fitted})
    layer.close()
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="paper,cosine,dropout,standardised",
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--sentence-model", choices=sorted(sentences.SENTENCE_MODELS), default="minilm")
    parser.add_argument("--out", type=Path, default=Path("results/knapsack-variants/knapsack-variants.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {"what": __doc__.split("\n")[0], "seed": args.seed, "items": args.items,
               "sentence_model": sentences.SENTENCE_MODELS[args.sentence_model], "runs": {}}
    for name in args.variants.split(","):
        start = time.perf_counter()
        history = train(VARIANTS[name], args.seed, args.items, args.sentence_model, args.epochs)
        results["runs"][name] = {"changes": VARIANTS[name], "accuracy": history[-1]["accuracy"],
                                 "train_accuracy": history[-1]["train_accuracy"],
                                 "wall_time_s": time.perf_counter() - start, "history": history}
        print(f"{name}: held out {100 * history[-1]['accuracy']:.1f} %, training set "
              f"{100 * history[-1]['train_accuracy']:.1f} %", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
