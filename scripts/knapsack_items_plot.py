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

from ilplayer_experiments.paper import ILPLOSS_KNAPSACK

ITEMS = (10, 15, 20, 25, 30)
SERIES = {  # label: record name pattern ({items} part, {seed})
    "ILP-Loss, 400 epochs": "knapsack-ilploss{items}-seed{seed}-default.json",
    "ILP-Loss, 100 epochs": "knapsack-ilploss{items}-seed{seed}-epochs=100.json",
    "CombOptNet": "knapsack{items}-seed{seed}-default.json",
    "CombOptNet, mpnet": "knapsack{items}-mpnet-seed{seed}-default.json",
    "CombOptNet, minilm-layers standardised": "knapsack{items}-minilm-layers-seed{seed}-standardise=True.json",
    "CombOptNet, minilm-layers standardised, cosine rate": (
        "knapsack{items}-minilm-layers-seed{seed}-schedule=cosine-standardise=True.json"
    ),
}
READOUTS = {  # record name (before -{K}items): label, line style, which probe
    "knapsack-gap": ("MiniLM readout", "k--", "probe"),
    "knapsack-gap-mpnet": ("mpnet readout", "k-.", "probe"),
    "knapsack-gap-minilm-layers-standardised": (
        "minilm-layers standardised, linear readout",
        "k:",
        "linear_probe",
    ),
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


def readout(folder: Path, items: int, name: str, probe: str) -> float | None:
    """The supervised readout's exact matches (%) in record ``name``: the mean of the seeds of
    the network's ``probe``, or the ridge's ``linear_probe``."""
    path = folder / (f"{name}.json" if items == 10 else f"{name}-{items}items.json")
    if not path.exists():
        return None
    found = json.loads(path.read_text())[probe]
    runs = found if isinstance(found, list) else [found]  # the network's probe has one run per seed
    return 100 * statistics.mean(run["exact_match_with_probe_numbers"] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=Path, default=Path("experiments/results/knapsack"))
    parser.add_argument("--readout", type=Path, default=Path("experiments/results/knapsack-gap"))
    parser.add_argument("--out", type=Path, default=Path("docs/records/knapsack-items.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.2))
    offsets = [
        0.3 * (i - (len(SERIES) - 1) / 2) for i in range(len(SERIES))
    ]  # side by side at each K
    for offset, (label, pattern) in zip(offsets, SERIES.items()):
        points = [(k, restarts(args.records, pattern, k)) for k in ITEMS]
        points = [(k, runs) for k, runs in points if runs]
        xs = [k + offset for k, _ in points]
        means = [statistics.mean(runs) for _, runs in points]
        spreads = [statistics.stdev(runs) if len(runs) > 1 else 0.0 for _, runs in points]
        ax.errorbar(
            xs,
            means,
            yerr=spreads,
            marker="o",
            capsize=3,
            label=f"{label} (mean ± std of restarts)",
        )
    for name, (label, style, probe) in READOUTS.items():
        marks = [(k, v) for k in ITEMS if (v := readout(args.readout, k, name, probe)) is not None]
        if marks:
            ax.plot(
                *zip(*marks), style, marker="s", label=f"{label}: exact with the numbers it reads"
            )
    for method, style in (("ilploss", "^"), ("combopt", "v")):
        reported = ILPLOSS_KNAPSACK[method]
        ax.plot(
            list(reported),
            list(reported.values()),
            linestyle=":",
            marker=style,
            color="grey",
            label=f"ILP-Loss' authors, {'ILP-Loss' if method == 'ilploss' else 'CombOptNet'} (InferSent)",
        )
    ax.set_xlabel("items per knapsack")
    ax.set_ylabel("held-out knapsacks exactly right (%)")
    ax.set_xticks(ITEMS)
    ax.set_ylim(0, 90)
    ax.set_title("Knapsack from sentences by item count (MiniLM unless marked)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
