"""How close are the learned constraints to the hidden ones? For each record of
``learn_reference_study.py``, each hidden constraint's nearest learned one (cosine of the
normals, offsets after scaling both rows to unit normals) and the accuracy curve.

A hidden constraint whose best cosine stays well below 1 was never learned: the run stalled.
A run whose every hidden constraint has a match near 1 but whose accuracy is still climbing is
slow. The two call for different remedies (restarts against stalls, more epochs against slow
runs), and the accuracy alone cannot tell them apart.

    python scripts/constraint_match.py experiments/results/learn-reference/rc-dense-4-data0-seed*.json \\
        --data experiments/results/learn-reference/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def unit_rows(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = np.linalg.norm(A, axis=1)
    return A / scale[:, None], b / scale


def describe(record_path: Path, data_dir: Path) -> str:
    record = json.loads(record_path.read_text())
    dataset = record_path.name.rsplit("-seed", 1)[0]  # e.g. rc-dense-4-data2
    hidden = np.load(data_dir / dataset / "hidden.npz")
    A, b = unit_rows(np.asarray(hidden["A"], float), np.asarray(hidden["b"], float))
    learned_A, learned_b = unit_rows(np.asarray(record["A"], float), np.asarray(record["b"], float))
    cosine = A @ learned_A.T
    nearest = cosine.argmax(axis=1)
    curve = {
        e["epoch"]: 100 * e["accuracy"] for e in record["history"] if "accuracy" in e
    }  # --test-every
    marks = [epoch for epoch in (50, 100, 150, 200, 300) if epoch in curve]
    lines = [
        f"{record_path.name}: held out {100 * record['test_accuracy']:.1f} % "
        f"(epoch {record['selected_epoch']} of {record['epochs']}); accuracy at epochs "
        + ", ".join(f"{e}: {curve[e]:.1f}" for e in marks)
    ]
    for j, k in enumerate(nearest):
        lines.append(
            f"  hidden {j}: best cosine {cosine[j, k]:.3f} (learned {k}), "
            f"offset {b[j]:+.2f} hidden, {learned_b[k]:+.2f} learned"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("experiments/results/learn-reference/data"),
        help="the datasets' folder (made by learn_reference_study.py)",
    )
    args = parser.parse_args()
    for path in args.records:
        print(describe(path, args.data))


if __name__ == "__main__":
    main()
