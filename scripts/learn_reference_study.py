"""``ilplayer learn`` with its defaults on datasets made the reference code's way
(``scripts/reference_datasets.py``): does every training seed reach the paper's mean minus its
standard deviation, and the mean over seeds the paper's mean?

Each run is the command a user types (``python -m ilplayer learn ... --json``); a finished
record is never recomputed, so the study resumes where it stopped.

    python scripts/learn_reference_study.py --cells rc-binary-4,wsc-8 --seeds 0-4 \\
        --out experiments/results/learn-reference
    python scripts/learn_reference_study.py --summary --out experiments/results/learn-reference

A variant of the defaults goes to its own folder, on the same datasets:

    python scripts/learn_reference_study.py --cells rc-dense-4 --seeds 0-4 \
        --learn-args="--lr 2e-3" --out experiments/results/learn-reference-lr2e-3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from ilplayer_experiments.paper import PAPER as PAPER_MEAN
from ilplayer_experiments.paper import PAPER_STD

HERE = Path(__file__).resolve().parent
# The paper's mean and standard deviation of each cell (1 x m constraints, 20 runs).
PAPER = {
    f"{task}-{box}-{m}" if task == "rc" else f"{task}-{m}": (mean, PAPER_STD[(task, box)][m])
    for (task, box), means in PAPER_MEAN.items()
    if task in ("rc", "wsc")
    for m, mean in means.items()
}
BOXES = {"binary": (0, 1), "dense": (-5, 5)}


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def make_data(cell: str, dataset_seed: int, data_dir: Path) -> tuple[Path, int, int, int]:
    """The cell's dataset (made once), its box and its number of hidden constraints."""
    parts = cell.split("-")
    out = data_dir / f"{cell}-data{dataset_seed}"
    if parts[0] == "rc":
        box, m = parts[1], int(parts[2])
        lb, ub = BOXES[box]
        args = ["rc", "--box", box, "--m", str(m)]
    else:
        m, lb, ub = int(parts[1]), 0, 1
        args = ["wsc", "--m", str(m)]
    if not (out / "test.npz").exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "reference_datasets.py"),
                *args,
                "--seed",
                str(dataset_seed),
                "--out",
                str(out),
            ],
            check=True,
        )
    return out, lb, ub, m


def run(
    cells: list[str],
    dataset_seeds: list[int],
    seeds: list[int],
    out: Path,
    data_dir: Path,
    learn_args: list[str],
) -> None:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    out.mkdir(parents=True, exist_ok=True)
    for cell in cells:
        for dataset_seed in dataset_seeds:
            data, lb, ub, m = make_data(cell, dataset_seed, data_dir)
            for seed in seeds:
                record = out / f"{cell}-data{dataset_seed}-seed{seed}.json"
                if record.exists():
                    continue
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "ilplayer",
                        "learn",
                        str(data / "train.npz"),
                        "--test",
                        str(data / "test.npz"),
                        "--lb",
                        str(lb),
                        "--ub",
                        str(ub),
                        "--num-constraints",
                        str(m),
                        "--seed",
                        str(seed),
                        "--json",
                        str(record),
                        *learn_args,
                    ],
                    check=True,
                    env=env,
                )


def cell_records(out: Path, cell: str) -> list[dict]:
    """The finished records of one cell in ``out``, in file-name order."""
    return [json.loads(p.read_text()) for p in sorted(out.glob(f"{cell}-data*-seed*.json"))]


def mean_std(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:.1f}"


def verdicts(accuracy: list[float], mean: float, std: float) -> str:
    """The tables' last two columns: every run >= the paper's mean - std; the mean >= the paper's."""
    return (
        f"{'yes' if min(accuracy) >= mean - std else 'no'} | "
        f"{'yes' if statistics.mean(accuracy) >= mean else 'no'}"
    )


def summary(out: Path) -> str:
    rows = [
        "| cell | dataset seeds | training seeds | held out (mean ± std) | min | paper | "
        "paper − std | every seed ≥ paper − std | mean ≥ paper |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell, (mean, std) in PAPER.items():
        records = cell_records(out, cell)
        if not records:
            continue
        accuracy = [100 * r["test_accuracy"] for r in records]
        data_seeds = sorted(
            {p.name.split("-data")[1].split("-")[0] for p in out.glob(f"{cell}-data*-seed*.json")}
        )
        rows.append(
            f"| {cell} | {','.join(data_seeds)} | {len(records)} | {mean_std(accuracy)} | "
            f"{min(accuracy):.1f} | {mean} | {mean - std:.1f} | {verdicts(accuracy, mean, std)} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default=",".join(PAPER), help="e.g. rc-binary-4,wsc-8")
    parser.add_argument("--dataset-seeds", default="0")
    parser.add_argument("--seeds", default="0-4", help="training seeds")
    parser.add_argument("--out", type=Path, default=Path("experiments/results/learn-reference"))
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="where the datasets are made once (default: OUT/data)",
    )
    parser.add_argument(
        "--learn-args", default="", help='more options for ilplayer learn, e.g. "--lr 2e-3"'
    )
    parser.add_argument(
        "--summary", action="store_true", help="print the table of finished records"
    )
    args = parser.parse_args()
    if not args.summary:
        cells = args.cells.split(",")
        unknown = sorted(set(cells) - set(PAPER))
        if unknown:
            parser.error(f"--cells: unknown {unknown}; known: {list(PAPER)}")
        run(
            cells,
            parse_seeds(args.dataset_seeds),
            parse_seeds(args.seeds),
            args.out,
            args.data or args.out / "data",
            args.learn_args.split(),
        )
    print(summary(args.out))


if __name__ == "__main__":
    main()
