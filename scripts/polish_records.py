"""Apply ``ilplayer learn``'s polish step to records made without it (``--no-polish``, or before
the step existed): the same training/validation split, the record's constraints, the same rule for
keeping the polished set. Writes one record per input beside the originals' figures.

    python scripts/polish_records.py experiments/results/learn-reference/rc-dense-4-data*-seed*.json \\
        --data experiments/results/learn-reference/data --out experiments/results/learn-reference-polished

A record of this folder is what ``ilplayer learn`` with its defaults gives from the same trained
constraints: training is unchanged by the step, which only runs after it. Where the record's
training started from separating hyperplanes, that start is rebuilt from the record's seed and
split and polished too, and the better of the two on the validation pairs is kept, as ``ilplayer
learn`` does. ``--summary`` prints,
per cell, the held-out accuracy before and after against the paper's:

    python scripts/polish_records.py --summary --out experiments/results/learn-reference-polished
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from ilplayer.layer import ILPLayer
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.learn import split_holdout
from ilplayer.learning.loop import initial_constraints
from ilplayer.learning.selection import polish_with_start
from ilplayer.learning.settings import SolutionData, TrainingConfig, restart_seed
from ilplayer.metrics import exact_match


def polish_record(path: Path, data_dir: Path) -> dict:
    record = json.loads(path.read_text())
    dataset = data_dir / path.name.rsplit("-seed", 1)[0]
    train, test = np.load(dataset / "train.npz"), np.load(dataset / "test.npz")
    lb, ub = record["lb"], record["ub"]
    c, y = train["c"].astype(np.float64), train["y"].astype(np.float64)
    tensor = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    validation = None
    if record["validation_size"]:  # the split learn_constraints made
        c, y, c_val, y_val = split_holdout(c, y, record["validation_size"] / len(c), record["seed"])
        validation = (tensor(c_val), tensor(y_val))
    data = SolutionData(tensor(c), tensor(y), tensor(test["c"]), tensor(test["y"]), lb, ub)
    model = StaticConstraints.from_rows(
        tensor(record["A"]), tensor(record["b"]), lb, ub, origin=record["origin"]
    )
    config = TrainingConfig().replace(
        **{key: record[key] for key in TrainingConfig().as_dict() if key in record}
    )
    initial = None
    if validation is not None and config.init == "separating":
        initial = initial_constraints(
            config,
            config.k * record["num_constraints"],
            data.c_train,
            data.y_train,
            lb,
            ub,
            restart_seed(record["seed"], record["selected_restart"]),
        )
    layer = ILPLayer(lb, ub, solver=record["solver"])
    start = time.perf_counter()
    try:
        with torch.no_grad():
            model, summary = polish_with_start(
                model,
                record["selected_epoch"],
                initial,
                data,
                validation,
                layer,
                record["origin"],
                progress=False,
            )
            A, b = model()
            test_accuracy = exact_match(layer(data.c_test, A, b), data.y_test)
            train_accuracy = exact_match(layer(data.c_train, A, b), data.y_train)
    finally:
        layer.close()
    return {
        **record,
        "polished_from": str(path),
        "unpolished_test_accuracy": record["test_accuracy"],
        "unpolished_train_accuracy": record["train_accuracy"],
        "test_accuracy": test_accuracy,
        "train_accuracy": train_accuracy,
        "polish": summary,
        "selected_epoch": summary["epoch"],
        "polish_wall_time_s": time.perf_counter() - start,
        "A": A.tolist(),
        "b": b.tolist(),
    }


def summary_table(out: Path) -> str:
    from learn_reference_study import PAPER, cell_records, mean_std, verdicts

    rows = [
        "| cell | runs | trained (mean ± std, min) | polished (mean ± std, min) | paper (mean ± std) | "
        "every polished run ≥ paper − std | polished mean ≥ paper |",
        "|---|---|---|---|---|---|---|",
    ]
    for cell, (mean, std) in PAPER.items():
        records = cell_records(out, cell)
        if not records:
            continue
        before = [100 * r["unpolished_test_accuracy"] for r in records]
        after = [100 * r["test_accuracy"] for r in records]
        rows.append(
            f"| {cell} | {len(records)} | {mean_std(before)}, {min(before):.1f} | {mean_std(after)}, "
            f"{min(after):.1f} | {mean} ± {std} | {verdicts(after, mean, std)} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="*", type=Path)
    parser.add_argument(
        "--summary", action="store_true", help="print the before/after table of OUT"
    )
    parser.add_argument(
        "--data", type=Path, default=Path("experiments/results/learn-reference/data")
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.summary:
        print(summary_table(args.out))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.records:
        target = args.out / path.name
        if target.exists():
            continue
        polished = polish_record(path, args.data)
        target.write_text(json.dumps(polished, indent=1))
        summary = polished["polish"]
        print(
            f"{path.name}: held out {100 * polished['unpolished_test_accuracy']:.1f} -> "
            f"{100 * polished['test_accuracy']:.1f} % ({summary['rows_before']} -> {summary['rows_after']} rows, "
            f"validation {100 * summary['accuracy_before']:.1f} -> {100 * summary['accuracy_after']:.1f}, "
            f"{'kept' if summary['kept'] else 'not kept'}, from epoch {summary['epoch']}, "
            f"{polished['polish_wall_time_s']:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
