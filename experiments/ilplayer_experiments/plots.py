"""Training curves as PNG files (matplotlib, from the ``ilplayer-experiments[demo]`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _save(figure: Any, path: str | Path) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_training(
    history: Sequence[dict[str, float]],
    path: str | Path,
    title: str,
    references: dict[str, float] | None = None,
) -> Path:
    """Held-out accuracy and training loss per epoch; ``references`` are horizontal lines
    on the accuracy panel (e.g. a baseline and the paper's figure, in percent)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    tested = [r for r in history if "accuracy" in r]  # ILP-Loss measures it every few epochs
    trained = [r for r in history if "loss" in r]
    figure, (accuracy_axis, loss_axis) = plt.subplots(1, 2, figsize=(10, 4))
    accuracy_axis.plot(
        [int(r["epoch"]) for r in tested], [100 * r["accuracy"] for r in tested], label="held out"
    )
    for (label, value), style in zip((references or {}).items(), ("--", ":", "-.")):
        accuracy_axis.axhline(value, linestyle=style, color="grey", label=label)
    accuracy_axis.set(xlabel="epoch", ylabel="exact-match accuracy (%)", ylim=(0, 100))
    accuracy_axis.legend(loc="lower right")
    loss_axis.plot(
        [int(r["epoch"]) for r in trained], [r["loss"] for r in trained], color="tab:red"
    )
    loss_axis.set(xlabel="epoch", ylabel="training loss", yscale="log")
    figure.suptitle(title)
    return _save(figure, path)


def plot_regret(records: Sequence[dict], path: str | Path, title: str) -> Path:
    """Normalised test regret per (method, library, backend): one bar each, PyEPO's hatched."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells: dict[tuple, list[float]] = {}
    for record in records:
        cells.setdefault((record["method"], record["library"], record["solver"]), []).append(
            100 * record["regret"]
        )
    keys = sorted(cells)
    figure, axis = plt.subplots(figsize=(max(6, 0.45 * len(keys)), 4))
    means = [sum(cells[k]) / len(cells[k]) for k in keys]
    bars = axis.bar(
        range(len(keys)),
        means,
        color=["tab:orange" if k[1] == "pyepo" else "tab:blue" for k in keys],
    )
    for bar, key in zip(bars, keys):
        if key[1] == "pyepo":
            bar.set_hatch("//")
    axis.set_xticks(
        range(len(keys)),
        [f"{m}\n{'pyepo ' if lib == 'pyepo' else ''}{s}" for m, lib, s in keys],
        fontsize=7,
        rotation=90,
    )
    axis.set(ylabel="normalised test regret (%)", title=title)
    return _save(figure, path)


def plot_protocol(cells: Sequence[dict], path: str | Path, title: str) -> Path:
    """ilplayer's mean ± std beside the paper's, one pair of bars per cell; each cell is a dict
    with ``label``, ``mean``, ``std``, ``paper`` and ``paper_std`` (percent)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    longest = max(len(c["label"]) for c in cells)  # the labels stand under the bars, turned upright
    figure, axis = plt.subplots(figsize=(max(6, 0.6 * len(cells)), 3 + 0.07 * longest))
    where = range(len(cells))
    axis.bar(
        [i - 0.2 for i in where],
        [c["mean"] for c in cells],
        0.4,
        yerr=[c["std"] for c in cells],
        capsize=2,
        label="ilplayer (mean ± std over its runs)",
        color="tab:blue",
    )
    axis.bar(
        [i + 0.2 for i in where],
        [c["paper"] for c in cells],
        0.4,
        yerr=[c["paper_std"] for c in cells],
        capsize=2,
        label="paper (mean ± std, 20 runs)",
        color="tab:grey",
        hatch="//",
    )
    axis.set_xticks(list(where), [c["label"] for c in cells], fontsize=7, rotation=90)
    axis.set(ylabel="held-out exact-match accuracy (%)", ylim=(0, 125), title=title)
    axis.set_yticks(range(0, 101, 20))
    axis.legend(fontsize=7, loc="upper center", ncol=2)
    return _save(figure, path)


def plot_post_hoc(record: dict, path: str | Path, title: str | None = None) -> Path:
    """Post-hoc regret against the penalty factor, one line per method (the std as bars: over
    penalty draws, or over splits), the published figures dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    methods = dict.fromkeys(row["method"] for row in record["rows"])
    for method in methods:
        rows = sorted(
            (row for row in record["rows"] if row["method"] == method),
            key=lambda row: row["factor"],
        )
        axis.errorbar(
            [row["factor"] for row in rows],
            [row["post_hoc_regret"] for row in rows],
            yerr=[row["std"] for row in rows],
            marker="o",
            capsize=3,
            label=method,
        )
    for name, values in record.get("published", {}).items():
        axis.plot(
            [0.25, 0.5, 1, 2, 4, 8][: len(values)], values, linestyle="--", color="grey", alpha=0.7
        )
        axis.annotate(f"{name} (published)", (8, values[-1]), fontsize=7, color="grey")
    axis.set(
        xscale="log",
        yscale="log",
        xlabel="penalty factor f",
        ylabel="post-hoc regret (test mean)",
        title=title or f"Nurse scheduling, setting {record['setting']}, {record['solver']}",
    )
    factors = [0.25, 0.5, 1, 2, 4, 8]
    axis.set_xticks(factors, [f"{f:g}" for f in factors])
    axis.minorticks_off()
    axis.legend(fontsize=7)
    return _save(figure, path)


def plot_matching(records: Sequence[dict], path: str | Path, title: str) -> Path:
    """Matching accuracy against p: each trained method (its label: method and variant) and the
    untrained baselines, the mean over seeds with their standard deviation as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    series: dict[str, dict[int, list[float]]] = {}
    baselines: dict[
        str, dict[tuple[int, int], float]
    ] = {}  # one value per (p, seed): every method has it
    for record in records:
        variant = ", ".join(
            f"{key}={value}"
            for key, value in sorted(record.get("variant", {}).items())
            if key not in ("epochs", "test_time_limit")  # neither changes the training
        )
        label = record["method"] + (f" ({variant})" if variant else "")
        series.setdefault(label, {}).setdefault(record["p"], []).append(100 * record["accuracy"])
        for name, key in (
            ("zero-shot VGG16 + assignment", "zero_shot_assignment_accuracy"),
            ("coordinates + assignment", "coordinates_accuracy"),
        ):
            if key in record:
                baselines.setdefault(name, {})[record["p"], record["seed"]] = 100 * record[key]
    for name, values in baselines.items():
        for (p, _), value in sorted(values.items()):
            series.setdefault(name, {}).setdefault(p, []).append(value)
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for label, by_p in series.items():
        ps = sorted(by_p)
        dashed = "assignment" in label
        axis.errorbar(
            ps,
            [np.mean(by_p[p]) for p in ps],
            yerr=[np.std(by_p[p]) for p in ps],
            marker="o",
            capsize=3,
            linestyle="--" if dashed else "-",
            label=f"{label} (seeds per p: {', '.join(str(len(by_p[p])) for p in ps)})",
        )
    axis.set_xticks(sorted({p for by_p in series.values() for p in by_p}))
    axis.set(
        xlabel="keypoints per image p",
        ylabel="matching accuracy on held-out test pairs (%)",
        title=title,
    )
    axis.legend(fontsize=7)
    return _save(figure, path)
