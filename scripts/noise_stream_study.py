"""Does PyEPO's fixed noise stream explain a sampling method's regret gap? For each training
seed, on PyEPO's shortest path 5 x 5 (its settings, Gurobi both sides): ilplayer's method (noise
from the training seed), PyEPO's with its default stream (seed 135 in every run) and PyEPO's
with a stream per training seed. One JSON line per run in --out, a summary at the end.

    python scripts/noise_stream_study.py --method dpomul --seeds 0-23 --epochs 5 --out results/dpomul-noise
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from ilplayer.commands import parse_int_list
from ilplayer.experiments import decision_focused as dfl
from ilplayer.seeding import derive_seed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="dpomul", choices=["pfyl", "pfymul", "dpomul"])
    parser.add_argument("--seeds", default="0-15")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--solver", default="gurobi")
    parser.add_argument("--out", type=Path, default=Path("results/noise-stream"))
    parser.add_argument("--runs", nargs="*", default=["ilplayer", "pyepo-135", "pyepo-per-seed"],
                        choices=["ilplayer", "pyepo-135", "pyepo-per-seed"], help="which runs per seed")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small tensors; the solver takes the cores
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / f"{args.method}.jsonl"
    task = dfl.make_task("shortest-path")
    rows: dict[str, list[float]] = {"ilplayer": [], "pyepo-135": [], "pyepo-per-seed": []}
    for seed in parse_int_list(args.seeds):
        runs = {"ilplayer": lambda s=seed: dfl.run_method(task, args.method, args.solver, epochs=args.epochs, seed=s),
                "pyepo-135": lambda s=seed: dfl.run_pyepo(task, args.method, epochs=args.epochs, seed=s,
                                                          solver=args.solver),
                "pyepo-per-seed": lambda s=seed: dfl.run_pyepo(task, args.method, epochs=args.epochs, seed=s,
                                                               solver=args.solver, noise_seed=derive_seed(s, 5))}
        for name, run in runs.items():
            if name not in args.runs:
                continue
            record = run()
            rows[name].append(100 * record["regret"])
            with log.open("a") as handle:
                handle.write(json.dumps({"run": name, "seed": seed, "regret": record["regret"],
                                         "seconds_per_epoch": record["seconds_per_epoch"]}) + "\n")
            print(f"seed {seed} {name}: {100 * record['regret']:.2f} %", flush=True)
    for name, values in rows.items():
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        if values:
            print(f"{name}: mean {statistics.mean(values):.2f} % (sd {spread:.2f}, {len(values)} seeds)")
    for other in ("pyepo-135", "pyepo-per-seed"):
        if not rows[other] or not rows["ilplayer"]:
            continue
        differences = [a - b for a, b in zip(rows["ilplayer"], rows[other])]
        if len(differences) > 1:
            se = statistics.stdev(differences) / len(differences) ** 0.5
            print(f"ilplayer - {other}: {statistics.mean(differences):+.2f} points (standard error {se:.2f})")


if __name__ == "__main__":
    main()
