"""Why constraint learning swings from seed to seed, and what steadies it.

For each training seed (the initialisation and the shuffling; the dataset is fixed), train
with the paper's settings and record, per epoch, the held-out accuracy and the accuracy on a
validation share of the training pairs. From one run per seed we read three policies:
"last" (the paper's: the last epoch's model), "best-test" (an oracle, for reference only: the
best held-out epoch, which a user cannot choose) and "best-validation" (the epoch with the
best validation accuracy, which learn_constraints returns). With --k the run learns k x m
constraints (the paper's appendix). One JSON line per run goes to --out.

    python scripts/stability_study.py --task rc --m 4 --seeds 0-9 --out experiments/results/stability/rc-m4.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from ilplayer.learning.learn import split_holdout
from ilplayer.learning.loop import train_static_constraints
from ilplayer.learning.settings import HiddenConstraintsData, TrainingConfig
from ilplayer_experiments import random_constraints, set_cover
from ilplayer_experiments.commands import parse_int_list


def run(data: HiddenConstraintsData, seed: int, k: int, epochs: int) -> dict:
    c, y = data.c_train.numpy(), data.y_train.numpy()
    c_fit, y_fit, c_val, y_val = split_holdout(c, y, 0.1, seed)
    fit = HiddenConstraintsData(
        data.A,
        data.b,
        data.lb,
        data.ub,
        torch.from_numpy(c_fit),
        torch.from_numpy(y_fit),
        data.c_test,
        data.y_test,
    )
    _, history = train_static_constraints(
        fit,
        TrainingConfig(epochs=epochs, k=k),
        seed=seed,
        validation=(torch.from_numpy(c_val), torch.from_numpy(y_val)),
    )
    test = [r["accuracy"] for r in history]
    val = [r["validation_accuracy"] for r in history]
    chosen = max(range(len(val)), key=lambda i: (val[i], -i))
    return {
        "seed": seed,
        "k": k,
        "last": test[-1],
        "best_test": max(test),
        "best_validation": test[chosen],
        "selected_epoch": chosen + 1,
        "test_curve": test,
        "validation_curve": val,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=["rc", "wsc"], default="rc")
    parser.add_argument("--box", default="binary")
    parser.add_argument("--m", type=int, default=4)
    parser.add_argument("--dataset-seed", type=int, default=0)
    parser.add_argument("--seeds", default="0-9", help="training seeds")
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.task == "rc":
        data = random_constraints.make_dataset(
            num_constraints=args.m, box=args.box, seed=args.dataset_seed, cache=True
        )
    else:
        data = set_cover.make_dataset(universe=args.m, seed=args.dataset_seed, cache=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = (
        {json.loads(line)["seed"] for line in out.read_text().splitlines()}
        if out.exists()
        else set()
    )
    for seed in parse_int_list(args.seeds):
        if seed in done:
            continue
        row = run(data, seed, args.k, args.epochs)
        with out.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(
            f"seed {seed}: last {100 * row['last']:.1f}  best-validation "
            f"{100 * row['best_validation']:.1f} (epoch {row['selected_epoch']})  "
            f"best-test {100 * row['best_test']:.1f}",
            flush=True,
        )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for policy in ("last", "best_validation", "best_test"):
        values = [100 * r[policy] for r in rows]
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        print(
            f"{policy:<16} {statistics.fmean(values):5.1f} ± {spread:4.1f}  "
            f"(min {min(values):.1f}, max {max(values):.1f}, {len(values)} seeds)"
        )


if __name__ == "__main__":
    main()
