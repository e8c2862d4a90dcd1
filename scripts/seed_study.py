"""A method's regret gap to PyEPO's over many training seeds. For each seed, on PyEPO's
shortest path 5 x 5 (its settings, Gurobi both sides): ilplayer's method, PyEPO's on the same
weights, batches and noise (``pyepo-paired``: the two runs differ only by the libraries' code,
and by rounding where a method amplifies it) and, for the noise methods, PyEPO's with its default
stream (``pyepo-135``: seed 135 in every run). One JSON line per run in --out, a summary at the end.

    python scripts/seed_study.py --method dpomul --seeds 0-47 --out experiments/results/paired-seeds
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from ilplayer_experiments import decision_focused as dfl
from ilplayer_experiments.commands import parse_int_list
from ilplayer_experiments.pyepo_runs import run_pyepo

NOISE_METHODS = ("pfyl", "pfymul", "dpomul")  # those whose PyEPO noise stream a seed can set
RUNS = ("ilplayer", "pyepo-paired", "pyepo-135")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--method",
        default="dpomul",
        choices=dfl.PYEPO_METHODS,
        help="a PyEPO method (pyepo-135 only for the noise methods: pfyl, pfymul, dpomul)",
    )
    parser.add_argument("--seeds", default="0-15")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--solver", default="gurobi")
    parser.add_argument("--out", type=Path, default=Path("experiments/results/paired-seeds"))
    parser.add_argument(
        "--runs",
        nargs="*",
        default=["ilplayer", "pyepo-paired"],
        choices=RUNS,
        help="which runs per seed",
    )
    args = parser.parse_args()
    if args.method not in NOISE_METHODS and "pyepo-135" in args.runs:
        args.runs.remove("pyepo-135")  # no noise stream to set
    torch.set_num_threads(1)  # small tensors; the solver takes the cores
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / f"{args.method}.jsonl"
    task = dfl.make_task("shortest-path")
    rows: dict[str, list[float]] = {name: [] for name in RUNS}
    for seed in parse_int_list(args.seeds):
        runs = {
            "ilplayer": lambda s=seed: dfl.run_method(
                task, args.method, args.solver, epochs=args.epochs, seed=s
            ),
            "pyepo-paired": lambda s=seed: run_pyepo(
                task, args.method, epochs=args.epochs, seed=s, solver=args.solver
            ),
            "pyepo-135": lambda s=seed: run_pyepo(
                task,
                args.method,
                epochs=args.epochs,
                seed=s,
                solver=args.solver,
                noise_seed=dfl.PYEPO_NOISE,
            ),
        }
        for name, run in runs.items():
            if name not in args.runs:
                continue
            record = run()
            rows[name].append(100 * record["regret"])
            with log.open("a") as handle:
                handle.write(
                    json.dumps(
                        {
                            "run": name,
                            "seed": seed,
                            "regret": record["regret"],
                            "seconds_per_epoch": record["seconds_per_epoch"],
                        }
                    )
                    + "\n"
                )
            print(f"seed {seed} {name}: {100 * record['regret']:.2f} %", flush=True)
    for name, values in rows.items():
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        if values:
            print(
                f"{name}: mean {statistics.mean(values):.2f} % (sd {spread:.2f}, {len(values)} seeds)"
            )
    for other in RUNS[1:]:
        if not rows[other] or not rows["ilplayer"]:
            continue
        differences = [a - b for a, b in zip(rows["ilplayer"], rows[other])]
        if len(differences) > 1:
            se = statistics.stdev(differences) / len(differences) ** 0.5
            print(
                f"ilplayer - {other}: {statistics.mean(differences):+.2f} points (standard error {se:.2f})"
            )


if __name__ == "__main__":
    main()
