"""The validation curves of the sudoku runs that learned rows (``ilplayer experiment sudoku
--no-equalities``): board accuracy on the 100 validation puzzles per epoch, one line per run,
the held-out board accuracy of the model kept in the legend.

    python scripts/sudoku_curves.py experiments/results/sudoku --out docs/records/sudoku-alone.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, nargs="?", default=Path("experiments/results/sudoku"))
    parser.add_argument("--out", type=Path, default=Path("docs/records/sudoku-alone.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for path in sorted(args.folder.glob("sudoku-*-no-equalities-*.json")):
        record = json.loads(path.read_text())
        points = [
            (r["epoch"], 100 * r["validation_accuracy"])
            for r in record["history"]
            if "validation_accuracy" in r
        ]
        if not points:
            continue
        size = record["size"]
        label = (
            f"{size}x{size} {record['method']}, {record['data']['sizes'][0]} puzzles: held out "
            f"{100 * record['board_accuracy']:.1f} % ({record['train_s']:.0f} s)"
        )
        ax.plot(*zip(*points), marker="o", label=label)
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation boards right (%)")
    ax.set_ylim(-2, 102)
    ax.set_title("Sudoku rules learned by each method alone (no equalities found first)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
