"""Why does the knapsack from text stay under the published figures? The training with one change
at a time. CombOptNet (``--method combopt``): the paper's training (KnapsackNet, CombOptNet
gradients, MSE on the selections) with a schedule or regularisation, and the training set's exact
matches printed beside the held-out ones, to tell a network that cannot fit its data from one that
fits it and does not generalise. ILP-Loss (``--method ilploss``): the ILP-Loss authors' knapsack
settings one at a time against ours: their head (identity output against the paper's sigmoid
ranges), their batches and rate, their neighbours per size (as many as items).

    python scripts/knapsack_variants.py --variants paper,cosine,dropout,standardised --seed 0 \
        --out experiments/results/knapsack-variants/knapsack-variants-seed0.json
    python scripts/knapsack_variants.py --method ilploss --variants ours,identity,identity+authors --seed 0 \
        --out experiments/results/knapsack-ilploss-variants/knapsack-ilploss-variants-10items-seed0.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.layer import ILPLayer
from ilplayer.learning.selection import selected_record
from ilplayer.metrics import exact_match
from ilplayer_experiments import knapsack, sentences

VARIANTS = {  # name: what changes from the paper's settings (100 epochs, Adam 5e-4, batches of 8)
    "paper": {},
    "cosine": {"cosine": True},  # the rate falls to 0 by a cosine
    "dropout": {"cosine": True, "dropout": 0.3},  # dropout on the hidden layer
    "standardised": {"cosine": True, "standardise": True},  # inputs to zero mean, unit spread
    "standardised+dropout": {"cosine": True, "standardise": True, "dropout": 0.3},
}
AUTHORS = {
    "batch_size": 40,
    "lr": 5e-4,
}  # the ILP-Loss authors' conf/knapsack/ilploss: batches of 40, rate 5e-4
ILPLOSS_VARIANTS = {  # name: (KnapsackNet's output, config changes; "items" stands for the item count)
    "ours": ("ranges", {}),
    "identity": ("identity", {}),
    "identity+authors": ("identity", {**AUTHORS, "samples_per_hop": "items"}),
    "samples=items": ("ranges", {"samples_per_hop": "items"}),
}


def train(
    variant: dict, seed: int, items: int, model_name: str, epochs: int
) -> list[dict[str, float]]:
    """One run; per epoch the training loss and the exact matches on the test set and on the
    first 500 training instances."""
    train_set, test_set = knapsack.make_dataset(
        seed=0, train_size=4500, test_size=500, cache=True, items=items
    )
    x_train, x_test = (
        sentences.embed_items(d.sentences, model_name).double() for d in (train_set, test_set)
    )
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
                optimizer.param_groups[0]["lr"] = (
                    5e-4 * 0.5 * (1 + math.cos(math.pi * step / batches))
                )
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
        history.append(
            {
                "epoch": epoch + 1,
                "loss": total / len(train_set.y),
                "accuracy": held_out,
                "train_accuracy": fitted,
            }
        )
    layer.close()
    return history


def train_ilploss(name: str, seed: int, items: int, model_name: str, epochs: int) -> dict:
    """One ILP-Loss run with variant ``name``; the record of its best validation epoch."""
    output, changes = ILPLOSS_VARIANTS[name]
    changes = {k: items if v == "items" else v for k, v in changes.items()}
    train_set, test_set = knapsack.make_dataset(seed=0, cache=True, items=items)
    x_train, x_test = (
        sentences.embed_items(d.sentences, model_name) for d in (train_set, test_set)
    )
    config = knapsack.knapsack_ilploss_config(epochs=epochs, **changes)
    _, history = knapsack.train_knapsack_ilploss(
        train_set,
        test_set,
        x_train,
        x_test,
        seed=seed,
        config=config,
        solver=knapsack.training_solver(items, config.k),
        output=output,
    )
    kept = selected_record(history)
    return {
        "output": output,
        "changes": changes,
        "accuracy": kept["accuracy"],
        "epoch_kept": kept["epoch"],
        "history": history,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", choices=["combopt", "ilploss"], default="combopt")
    parser.add_argument(
        "--variants",
        default=None,
        help="comma-separated, of "
        f"{', '.join(VARIANTS)} (combopt) or {', '.join(ILPLOSS_VARIANTS)} (ilploss)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument(
        "--sentence-model", choices=sorted(sentences.SENTENCE_MODELS), default="minilm"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("experiments/results/knapsack-variants/knapsack-variants.json"),
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    table = VARIANTS if args.method == "combopt" else ILPLOSS_VARIANTS
    names = (args.variants or ",".join(table)).split(",")
    unknown = sorted(set(names) - set(table))
    if unknown:
        parser.error(
            f"--variants: unknown {unknown} for --method {args.method}; choose from {list(table)}"
        )
    results = {
        "what": __doc__.split("\n")[0],
        "method": args.method,
        "seed": args.seed,
        "items": args.items,
        "epochs": args.epochs,
        "sentence_model": sentences.SENTENCE_MODELS[args.sentence_model],
        "runs": {},
    }
    for name in names:
        start = time.perf_counter()
        if args.method == "ilploss":
            run = train_ilploss(name, args.seed, args.items, args.sentence_model, args.epochs)
            print(
                f"{name}: held out {100 * run['accuracy']:.1f} % (epoch {run['epoch_kept']})",
                flush=True,
            )
        else:
            history = train(VARIANTS[name], args.seed, args.items, args.sentence_model, args.epochs)
            run = {
                "changes": VARIANTS[name],
                "accuracy": history[-1]["accuracy"],
                "train_accuracy": history[-1]["train_accuracy"],
                "history": history,
            }
            print(
                f"{name}: held out {100 * run['accuracy']:.1f} %, training set "
                f"{100 * run['train_accuracy']:.1f} %",
                flush=True,
            )
        results["runs"][name] = {**run, "wall_time_s": time.perf_counter() - start}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
