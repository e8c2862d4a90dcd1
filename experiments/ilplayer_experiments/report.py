"""``ilplayer report``: a results folder of JSON records -> a markdown report.

First an overview: one row per cell of the paper's main figures (CombOptNet with the paper's
settings) with the baselines found beside it. Then one table per (task, box, method, variant,
and the knapsack's sentence model): a row per m (the knapsack: per item count) with the mean ±
standard deviation of the held-out accuracy over the runs found, their seeds, the
box-constrained baseline, the paper's figure and the mean wall time per run. The paper's figure
comes from `ilplayer_experiments.paper.paper_accuracy`, so records written before a figure
was known still get it. Last, the cost-learning runs: a regret table per task and training length.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from ilplayer_experiments.decision_focused import task_title
from ilplayer_experiments.knapsack_runs import KNAPSACK_RECIPES
from ilplayer_experiments.paper import PAPER_STD, deviations, paper_accuracy, papers_size
from ilplayer_experiments.sentences import SENTENCE_MODEL_TITLES, SENTENCE_MODELS

TASK_TITLES = {
    "rc": "Random Constraints",
    "wsc": "Weighted set cover",
    "knapsack": "Knapsack from text",
    "matching": "Keypoint matching stand-in",
}
METHOD_TITLES = {
    "combopt": "CombOptNet",
    "mlp": "MLP baseline",
    "lp": "LP relaxation (cvxpylayers)",
    "ilploss": "ILP-Loss (no solver while training)",
    "bbgm": "BB-GM, unary (assignment solver + blackbox gradients)",
}
REPRODUCE = """To reproduce every cell with the paper's 10 dataset seeds (two cores; dense and
larger set-cover boxes use a MIP backend):

```bash
ilplayer experiment rc --box binary --m 1,2,4,8 --seeds 0-9 --workers 2 --out experiments/results/rc
ilplayer experiment rc --box dense --m 1,2,4,8 --seeds 0-9 --solver gurobi --executor threads \\
    --workers 2 --out experiments/results/rc
ilplayer experiment wsc --m 4,6,8,10 --seeds 0-9 --workers 2 --out experiments/results/wsc
ilplayer experiment knapsack --recipe paper --seeds 0-9 --out experiments/results/knapsack
ilplayer experiment knapsack --seeds 0-9 --out experiments/results/knapsack  # default recipe; --items 15/20/25
ilplayer experiment matching --p 4,5,6,7 --seeds 0-9 --method combopt --out experiments/results/matching
ilplayer experiment matching --p 4,5,6,7 --seeds 0-9 --method bbgm --out experiments/results/matching
ilplayer experiment rc --box binary --m 4 --seeds 0-9 --ablation basis=canonical --out experiments/results/rc
ilplayer experiment rc --box binary --m 4 --seeds 0-9 --ablation tau=hard --out experiments/results/rc  # tau=1, 2, 5
ilplayer experiment rc --box binary --m 1,2,4,8 --seeds 0-9 --method mlp --out experiments/results/rc   # or --method lp
ilplayer experiment rc --box binary --m 1,2,4,8 --seeds 0-9 --method ilploss --out experiments/results/rc
ilplayer experiment shortest-path --out experiments/results/dfl      # every method x backend, and PyEPO's
ilplayer experiment knapsack-regret --out experiments/results/dfl
ilplayer report experiments/results --out docs/records/results.md
```

Protocol runs are resumable: add `--resume` and a finished record is never recomputed.
"""


def load_records(folder: str | Path) -> list[dict[str, Any]]:
    """Every record under ``folder`` that the report tables: a finished run of the paper's tasks
    (``ilplayer experiment rc|wsc|knapsack|matching``) or of a cost-learning task. Benchmark
    tables, partial runs and the experiments with their own records (sudoku:
    docs/records/sudoku.md) are skipped."""
    records = []
    for path in sorted(Path(folder).rglob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "task" not in data:
            continue
        if "library" in data or (data["task"] in TASK_TITLES and "variant" in data):
            records.append(data)
    return records


def _dfl_title(record: dict[str, Any]) -> str:
    """The task at its size (records before task sizes were recorded: the defaults) and the
    training's length."""
    epochs = record["epochs"]
    return (
        f"{task_title(record['task'], record.get('task_options', {}))} (PyEPO data), "
        f"{epochs} epoch{'' if epochs == 1 else 's'}"
    )


DFL_SETTINGS = ("epochs", "lr", "batch_size", "train_size", "test_size")


def _dfl_tables(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The cost-learning runs by table: one per task and training settings (folders of runs
    with 5 and 10 epochs are not pooled), keyed by the task's label with ``-{epochs}ep`` where a
    task has several. A run found twice (the same seed and settings in two folders) counts once."""
    by_settings: dict[tuple, dict[tuple, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        settings = tuple(record.get(key) for key in DFL_SETTINGS)
        run = (record["method"], record["library"], _where(record), record["seed"])
        by_settings[(record.get("label", record["task"]), settings)].setdefault(run, record)
    labels = [label for label, _ in by_settings]
    return {
        label if labels.count(label) == 1 else f"{label}-{settings[0]}ep": list(runs.values())
        for (label, settings), runs in sorted(by_settings.items(), key=lambda item: str(item[0]))
    }


def _decision_focused(
    records: list[dict[str, Any]], figures: dict[str, str] | None = None
) -> list[str]:
    """Normalised test regret per method and backend, PyEPO's own runs beside ilplayer's."""
    if not records:
        return []
    lines = [
        "## Learning costs: normalised regret on PyEPO's tasks",
        "",
        "Normalised test regret (%, lower is better; mean ± std over the seeds found) and "
        "seconds per training epoch, a linear model from 5 features to the costs, Adam "
        "(lr 1e-2, batch 32). `ilplayer` rows use ilplayer's methods on the backend named; "
        "`pyepo` rows are PyEPO 2.2.7's own implementation with its Gurobi model (backend "
        "gurobi) or its Pyomo model with HiGHS (backend pyomo:highs), on the same data, "
        "splits and initialisation. A sampling method's two rows are one run in two libraries on "
        "the shortest path (the same noise draws); on the knapsack its draws are not aligned (PFYL's "
        "regrets part at the first epoch), so there its two rows are two runs and their gap holds "
        "chance too. Produced by `ilplayer experiment shortest-path`, `knapsack-regret` and `tsp`.",
        "",
    ]
    for table, runs in _dfl_tables(records).items():
        first = runs[0]
        lines += [
            f"### {_dfl_title(first)}",
            "",
            f"{first['train_size']} training and {first['test_size']} test instances; untrained model: "
            f"{100 * first['history'][0]['regret']:.1f} %.",
            "",
            "| method | library | backend | regret (%) | seeds | s / epoch |",
            "|---|---|---|---|---|---|",
        ]
        if figures and table in figures:
            lines[-3:-2] = [lines[-3], f"![normalised regret, {table}]({figures[table]})", ""]
        cells: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
        for run in runs:
            cells[(run["method"], run["library"], _where(run))].append(run)
        for (method, library, solver), cell in sorted(cells.items()):
            seeds = ",".join(str(r["seed"]) for r in sorted(cell, key=lambda r: r["seed"]))
            lines.append(
                f"| {method} | {library} | {solver} | {_mean_std([100 * r['regret'] for r in cell])} "
                f"| {seeds} | {statistics.fmean(r['seconds_per_epoch'] for r in cell):.1f} |"
            )
        lines.append("")
    return lines


def _where(run: dict[str, Any]) -> str:
    """The backend, and where it ran when that was not the default (ilplayer's executor,
    PyEPO's processes): runs on other executors are timed apart."""
    executor, processes = run.get("executor", "auto"), run.get("processes", 1)
    if run["library"] == "ilplayer" and executor not in (None, "auto"):
        return f"{run['solver']} ({executor})"
    if run["library"] == "pyepo" and processes != 1:
        return f"{run['solver']} ({processes} processes)"
    return run["solver"]


def _mean_std(values: list[float]) -> str:
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.1f} ± {std:.1f}"


def _variant_label(
    variant: dict[str, Any], task: str = "", method: str = "combopt", sentence_model: str = ""
) -> str:
    """The table's settings: the overrides, or the paper's settings (ILP-Loss: ilplayer's, see
    docs/records/ilploss.md) and where the task cannot follow the paper (``paper.deviations``:
    the knapsack's sentence model, matching's data and backbone)."""
    shown = {
        k: ("hard" if k == "tau" and v is None else v) for k, v in variant.items() if k != "epochs"
    }
    default = "ilplayer's ILP-Loss settings" if method == "ilploss" else "paper's settings"
    label = ", ".join(f"{k}={v}" for k, v in sorted(shown.items())) or default
    found = deviations(task, SENTENCE_MODEL_TITLES.get(sentence_model, sentence_model))
    return label + " except: " + "; ".join(found) if found else label


def _sentence_model(run: dict[str, Any]) -> str:
    """The knapsack's sentence model as records name it (those written before it was recorded:
    MiniLM); "" for the other tasks."""
    if run["task"] != "knapsack":
        return ""
    return run.get("sentence_model") or SENTENCE_MODELS["minilm"]


def _cell(run: dict[str, Any]) -> int:
    """What a table's rows run over: p for matching, the item count for the knapsack, else m."""
    if run["task"] == "matching":
        return run["p"]
    return run.get("n", 10) if run["task"] == "knapsack" else run["m"]


def _paper(run: dict[str, Any]) -> float | None:
    shown = {k: v for k, v in run["variant"].items() if k != "epochs"}
    if not papers_size(run["task"], run.get("n")):
        return None
    return paper_accuracy(run["task"], run["box"], run.get("method", "combopt"), shown, run["m"])


def _paper_text(run: dict[str, Any]) -> str:
    paper, std = _paper(run), _paper_std(run)
    if paper is None:
        return "–"
    return f"{paper} ± {std}" if std is not None else str(paper)


def _gap(accuracy: list[float], paper: float | None, task: str) -> str:
    """No gap for matching: the paper's figure is on SPair-71k, not on the offline stand-in."""
    if paper is None or task == "matching":
        return "–"
    return f"{statistics.fmean(accuracy) - paper:+.1f}"


def _paper_std(run: dict[str, Any]) -> float | None:
    """The paper's standard deviation for a cell with the paper's settings, else None."""
    if run.get("method", "combopt") != "combopt" or {k for k in run["variant"] if k != "epochs"}:
        return None
    if not papers_size(run["task"], run.get("n")):
        return None
    return PAPER_STD.get((run["task"], run["box"]), {}).get(run["m"])


def protocol_cells(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's main cells (CombOptNet, paper's settings) that have a paper mean and std:
    ilplayer's mean and std over its runs beside them, for the protocol plot."""
    cells: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if "library" not in record and _paper_std(record) is not None:
            cells[(record["task"], record["box"], record["m"], _sentence_model(record))].append(
                record
            )
    rows = []
    for (task, box, m, model), runs in sorted(cells.items()):
        accuracy = [100 * r["accuracy"] for r in runs]
        label = f"{task} {box} m={m}" if task == "rc" else f"{task} m={m}"
        rows.append(
            {
                "label": f"{label}, {model}" if model else label,
                "mean": statistics.fmean(accuracy),
                "std": statistics.stdev(accuracy) if len(accuracy) > 1 else 0.0,
                "paper": _paper(runs[0]),
                "paper_std": _paper_std(runs[0]),
            }
        )
    return rows


def _cell_label(run: dict[str, Any]) -> str:
    if run["task"] == "matching":
        return f"p={run['p']}"
    return f"{_cell(run)} items" if run["task"] == "knapsack" else str(run["m"])


def _longest(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs trained for the most epochs: shorter runs of the same settings (ILP-Loss' knapsack
    at 100 epochs before its default became 400) are not averaged into the overview."""
    most = max((r["hyperparameters"]["epochs"] for r in runs), default=None)
    return [r for r in runs if r["hyperparameters"]["epochs"] == most]


def _overview(groups: dict[tuple, list[dict[str, Any]]]) -> list[str]:
    """One row per (task, box, m; the knapsack: sentence model and item count) of CombOptNet with
    the paper's settings, baselines beside, and the knapsack's best recipe beside the paper's cell."""
    best_model, best_settings = KNAPSACK_RECIPES["best"]
    cells: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for (task, box, method, variant_json, model), runs in groups.items():
        variant = json.loads(variant_json)
        if task == "knapsack" and variant == best_settings and model == SENTENCE_MODELS[best_model]:
            model, runs = (
                f"{model}, best recipe",
                [dict(run, variant={}) for run in runs],
            )  # for the paper's cell
        elif variant:  # ablations and other settings have their own tables
            continue
        for run in runs:
            cells[(task, box, model, _cell(run))].setdefault(method, []).append(run)
    lines = [
        "## Overview",
        "",
        "CombOptNet with the paper's settings (the knapsack also with ilplayer's best recipe) "
        "beside the paper's mean and the baselines "
        "(mean over the seeds listed in the tables below, of the runs with the most epochs; "
        "MLP, LP and BB-GM runs may use fewer seeds or epochs, see their tables). Knapsack "
        "and matching cannot follow the paper offline (another sentence model; stand-in data "
        "and backbone): their tables say how.",
        "",
        "| task | box | m | CombOptNet | seeds | paper | gap | box-constrained | MLP | LP relaxation | BB-GM "
        "| ILP-Loss |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (task, box, model, _), by_method in sorted(cells.items()):
        runs = _longest(by_method.get("combopt") or [])
        if not runs:
            continue
        accuracy = [100 * r["accuracy"] for r in runs]
        paper = _paper(runs[0])
        gap = _gap(accuracy, paper, task)
        baseline = [
            100 * r["box_baseline_accuracy"]
            for r in runs
            if r.get("box_baseline_accuracy") is not None
        ]

        def mean_of(method: str, by_method: dict = by_method) -> str:
            found = _longest(by_method.get(method) or [])
            return f"{statistics.fmean(100 * r['accuracy'] for r in found):.1f}" if found else "–"

        title = TASK_TITLES.get(task, task) + (f", {model}" if model else "")
        lines.append(
            f"| {title} | {box} | {_cell_label(runs[0])} | "
            f"{_mean_std(accuracy)} | {len(runs)} | {_paper_text(runs[0])} | {gap} | "
            f"{f'{statistics.fmean(baseline):.1f}' if baseline else '–'} | {mean_of('mlp')} | "
            f"{mean_of('lp')} | {mean_of('bbgm')} | {mean_of('ilploss')} |"
        )
    return [*lines, ""]


def build_report(
    records: list[dict[str, Any]],
    title: str = "Results",
    preface: str = "",
    figures: dict[str, str] | None = None,
) -> str:
    """The markdown text for ``records`` (accuracies in percent)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    decision_focused = [record for record in records if "library" in record]
    for record in records:
        if "library" in record:
            continue
        key = (
            record["task"],
            record["box"],
            record.get("method", "combopt"),
            json.dumps(
                {k: v for k, v in record["variant"].items() if k != "epochs"}, sort_keys=True
            ),
            _sentence_model(record),
        )
        groups[key].append(record)
    lines = [
        f"# {title}",
        "",
        "Held-out exact-match accuracy (%) — for matching, the per-keypoint matching "
        "accuracy — as mean ± standard deviation over the runs listed; the paper reports the "
        "mean over 10 datasets (ablations: 2 restarts × 10 datasets). Produced by "
        "`ilplayer report` from the JSON records of `ilplayer experiment`.",
        "",
    ]
    if preface:
        lines += [preface.strip(), ""]
    lines += _overview(groups)
    if figures and "protocol" in figures:
        lines += [f"![ilplayer against the paper]({figures['protocol']})", ""]
    for (task, box, method, variant_json, model), runs in sorted(groups.items()):
        variant = json.loads(variant_json)
        epochs = sorted({r["hyperparameters"]["epochs"] for r in runs})
        solvers = sorted({r["solver"] for r in runs if r["solver"]}) or ["none"]
        lines += [
            f"## {TASK_TITLES.get(task, task)}, {box} box — {METHOD_TITLES.get(method, method)}, "
            f"{_variant_label(variant, task, method, model)}",
            "",
            f"Epochs: {', '.join(map(str, epochs))}; solver: {', '.join(solvers)}.",
            "",
            f"| {'items' if task == 'knapsack' else 'm'} | ilplayer | seeds | box-constrained | paper "
            "| ilplayer − paper | wall time per run |",
            "|---|---|---|---|---|---|---|",
        ]
        by_cell: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
        for run in runs:  # runs of other lengths apart
            by_cell[(_cell(run), run["hyperparameters"]["epochs"])].append(run)
        for (_, cell_epochs), cell in sorted(by_cell.items()):
            accuracy = [100 * r["accuracy"] for r in cell]
            baseline = [
                100 * r["box_baseline_accuracy"]
                for r in cell
                if r.get("box_baseline_accuracy") is not None
            ]
            paper = _paper(cell[0])
            gap = _gap(accuracy, paper, task)
            seeds = ",".join(str(seed) for seed in sorted({r["seed"] for r in cell}))
            if len(cell) > len({r["seed"] for r in cell}):  # restarts: more runs than datasets
                seeds += f" ({len(cell)} runs)"
            wall = statistics.fmean(r["wall_time_s"] for r in cell)
            label = _cell_label(cell[0]) + (f", {cell_epochs} epochs" if len(epochs) > 1 else "")
            lines.append(
                f"| {label} | {_mean_std(accuracy)} | {seeds} | "
                f"{_mean_std(baseline) if baseline else '–'} | "
                f"{paper if paper is not None else '–'} | {gap} | {wall:.0f} s |"
            )
        lines.append("")
    lines += _decision_focused(decision_focused, figures)
    return "\n".join(lines)


def write_report(
    folder: str | Path, out: str | Path, title: str = "Results", preface: str = REPRODUCE
) -> Path:
    records = load_records(folder)
    if not records:
        raise ValueError(f"folder: no JSON records under {folder}")
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    figures: dict[str, str] = {}
    if importlib.util.find_spec("matplotlib") is not None:  # plots need the [demo] extra
        from ilplayer_experiments.plots import plot_protocol, plot_regret

        cells = protocol_cells(records)
        if cells:
            image = path.parent / f"{path.stem}-protocol.png"
            plot_protocol(cells, image, "CombOptNet with the paper's settings against the paper")
            figures["protocol"] = image.name
        for table, runs in _dfl_tables([r for r in records if "library" in r]).items():
            image = path.parent / f"{path.stem}-{table}.png"
            plot_regret(runs, image, _dfl_title(runs[0]))
            figures[table] = image.name
    path.write_text(build_report(records, title, preface, figures))
    return path
