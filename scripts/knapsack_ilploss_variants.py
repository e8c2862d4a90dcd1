"""Why does ILP-Loss trail its authors' figures on the knapsack from text? Their settings, one at a
time, against ours: the network's head (their identity output against the paper's sigmoid ranges),
their batches, rate and neighbours per size (their ``num_samples``: the item count).

    python scripts/knapsack_ilploss_variants.py --variants ours,identity,identity+authors --items 10 \
        --seed 0 --epochs 100 --out results/knapsack-ilploss-variants/knapsack-ilploss-variants-10items-seed0.json
    python scripts/knapsack_ilploss_variants.py --variants samples=items --items 20 --seed 0 --epochs 100 \
        --out results/knapsack-ilploss-variants/knapsack-ilploss-variants-20items-seed0.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from ilplayer.apps.experiments import knapsack, sentences
from ilplayer.selection import selected_record

AUTHORS = {"batch_size": 40, "lr": 5e-4}  # their conf/knapsack/ilploss: batches of 40, peak rate 5e-4
VARIANTS = {  # name: (KnapsackNet's output, config overrides; "items" stands for the item count)
    "ours": ("ranges", {}),
    "identity": ("identity", {}),
    "identity+authors": ("identity", {**AUTHORS, "samples_per_hop": "items"}),
    "samples=items": ("ranges", {"samples_per_hop": "items"}),
}


def embeddings(data: knapsack.KnapsackData, model: str) -> torch.Tensor:
    flat = [s for row in data.sentences for s in row]
    vectors = torch.from_numpy(sentences.embed_sentences(flat, model=model))
    return vectors.reshape(len(data.sentences), -1, vectors.shape[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="ours,identity", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--sentence-model", choices=sorted(sentences.SENTENCE_MODELS), default="minilm")
    parser.add_argument("--out", type=Path, default=Path("results/knapsack-ilploss-variants/variants.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    train, test = knapsack.make_dataset(seed=0, cache=True, items=args.items)
    x_train, x_test = embeddings(train, args.sentence_model), embeddings(test, args.sentence_model)
    results = {"what": __doc__.split("\n")[0], "seed": args.seed, "items": args.items, "epochs": args.epochs,
               "sentence_model": sentences.SENTENCE_MODELS[args.sentence_model], "runs": {}}
    for name in args.variants.split(","):
        output, changes = VARIANTS[name]
        changes = {k: args.items if v == "items" else v for k, v in changes.items()}
        config = knapsack.knapsack_ilploss_config(epochs=args.epochs, **changes)
        start = time.perf_counter()
        _, history = knapsack.train_knapsack_ilploss(train, test, x_train, x_test, seed=args.seed, config=config,
                                                     solver=knapsack.training_solver(args.items, config.k),
                                                     output=output)
        kept = selected_record(history)
        results["runs"][name] = {"output": output, "changes": changes, "accuracy": kept["accuracy"],
                                 "epoch_kept": kept["epoch"], "wall_time_s": time.perf_counter() - start,
                                 "history": history}
        print(f"{name}: held out {100 * kept['accuracy']:.1f} % (epoch {kept['epoch']})", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
