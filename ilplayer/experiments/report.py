"""``ilplayer report``: a results folder of JSON records -> a markdown report.

One table per (task, box, variant): a row per m with the mean ± standard deviation of the
held-out accuracy over the runs found, their seeds, the box-constrained baseline, the paper's
figure and the mean wall time per run.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

TASK_TITLES = {"rc": "Random Constraints", "wsc": "Weighted set cover", "knapsack": "Knapsack from text"}
METHOD_TITLES = {"combopt": "CombOptNet", "mlp": "MLP baseline"}


def load_records(folder: str | Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(Path(folder).rglob("*.json"))]


def _mean_std(values: list[float]) -> str:
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.1f} ± {std:.1f}"


def _variant_label(variant: dict[str, Any]) -> str:
    shown = {k: v for k, v in variant.items() if k != "epochs"}
    return ", ".join(f"{k}={v}" for k, v in sorted(shown.items())) or "paper's settings"


def build_report(records: list[dict[str, Any]], title: str = "Results") -> str:
    """The markdown text for ``records`` (accuracies in percent)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        key = (record["task"], record["box"], record.get("method", "combopt"),
               json.dumps(record["variant"], sort_keys=True))
        groups[key].append(record)
    lines = [f"# {title}", "",
             "Held-out exact-match accuracy (%), mean ± standard deviation over the runs listed; "
             "the paper reports the mean over 10 datasets. Produced by `ilplayer report` from the "
             "JSON records of `ilplayer experiment`.", ""]
    for (task, box, method, variant_json), runs in sorted(groups.items()):
        variant = json.loads(variant_json)
        epochs = sorted({r["hyperparameters"]["epochs"] for r in runs})
        solvers = sorted({r["solver"] for r in runs if r["solver"]}) or ["none"]
        lines += [f"## {TASK_TITLES.get(task, task)}, {box} box — {METHOD_TITLES.get(method, method)}, "
                  f"{_variant_label(variant)}", "",
                  f"Epochs: {', '.join(map(str, epochs))}; solver: {', '.join(solvers)}.", "",
                  "| m | ilplayer | seeds | box-constrained | paper | ilplayer − paper | wall time per run |",
                  "|---|---|---|---|---|---|---|"]
        by_m: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for run in runs:
            by_m[run["m"]].append(run)
        for m, cell in sorted(by_m.items()):
            accuracy = [100 * r["accuracy"] for r in cell]
            baseline = [100 * r["box_baseline_accuracy"] for r in cell]
            paper = cell[0].get("paper_accuracy")
            gap = f"{statistics.fmean(accuracy) - paper:+.1f}" if paper is not None else "–"
            seeds = ",".join(str(r["seed"]) for r in sorted(cell, key=lambda r: r["seed"]))
            wall = statistics.fmean(r["wall_time_s"] for r in cell)
            lines.append(f"| {m} | {_mean_std(accuracy)} | {seeds} | {_mean_std(baseline)} | "
                         f"{paper if paper is not None else '–'} | {gap} | {wall:.0f} s |")
        lines.append("")
    return "\n".join(lines)


def write_report(folder: str | Path, out: str | Path, title: str = "Results") -> Path:
    records = load_records(folder)
    if not records:
        raise ValueError(f"folder: no JSON records under {folder}")
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_report(records, title))
    return path
