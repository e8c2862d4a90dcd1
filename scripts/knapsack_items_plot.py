"""Knapsack from text by item count: held-out exact matches of each method's restarts (mean and
spread), the supervised readout of the sentence model (``scripts/knapsack_gap.py``, what the
embedding lets a network read when it is told the numbers) and the ILP-Loss authors' figures.

    python scripts/knapsack_items_plot.py --out docs/records/knapsack-items.png
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from ilplayer.apps.experiments.paper import ILPLOSS_KNAPSACK

ITEMS = (10, 15, 20, 25, 30)
SERIES = {  # label: record name pattern ({items} part, {seed})
    "ILP-Loss, 400 epochs": "knapsack-ilploss{items}-seed{seed}-default.json",
    "ILP-Loss, 100 epochs": "knapsack-ilploss{items}-seed{seed}-epochs=100.json",
    "CombOptNet": "knapsack{items}-seed{seed}-default.json",
}


def restarts(folder: Path, pattern: str, items: int) -> list[float]:
    """Held-out accuracies (%) of the finished restarts 0-9 of one series at ``items``."""
    part = "" if items == 10 else f"-{items}items"
    found = []
    for seed in range(10):
        path = folder / pattern.format(items=part, seed=seed)
        if path.exists():
            found.append(100 * json.loads(path.read_text())["accuracy"])
    return found


def readout(folder: Path, items: int) -> float | None:
    """The supervised readout's exact matches (%), the mean of its seeds."""
    path = folder / ("knapsack-gap.json" if items == 10 else f"knapsack-gap-{items}items.json")
    if not path.exists():
        return None
    return 100 * statistics.mean(p["exact_match_with_probe_numbers"] for p in json.loads(path.read_text())["probe"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=Path, default=Path("results/knapsack"))
    parser.add_argument("--readout", type=Path, default=Path("results/knapsack-gap"))
    parser.add_argument("--out", type=Path, default=Path("docs/records/knapsack-items.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for offset, (label, pattern) in zip((-0.3, 0.0, 0.3), SERIES.items()):
        points = [(k, restarts(args.records, pattern, k)) for k in ITEMS]
        points = [(k, runs) for k, runs in points if runs]
        xs = [k + offset for k, _ in points]
        means = [statistics.mean(runs) for _, runs in points]
        spreads = [statistics.stdev(runs) if len(runs) > 1 else 0.0 for _, runs in points]
        ax.errorbar(xs, means, yerr=spreads, marker="o", capsize=3, label=f"{label} (mean ± std of restarts)")
    marks = [(k, readout(args.readout, k)) for k in ITEMS]
    ax.plot(*zip(*[(k, v) for k, v in marks if v is not None]), "k--", marker="s",
            label="MiniLM readout: exact with the numbers a network reads")
    for method, style in (("ilploss", "^"), ("combopt", "v")):
        reported = ILPLOSS_KNAPSACK[method]
        ax.plot(list(reported), list(reported.values()), linestyle=":", marker=style, color="grey",
                label=f"ILP-Loss' authors, {'ILP-Loss' if method == 'ilploss' else 'CombOptNet'} (InferSent)")
    ax.set_xlabel("items per knapsack")
    ax.set_ylabel("held-out knapsacks exactly right (%)")
    ax.set_xticks(ITEMS)
    ax.set_ylim(0, 70)
    ax.set_title("Knapsack from sentences (all-MiniLM-L6-v2) by item count")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
