"""The speed targets checked against one run of ``ilplayer bench``, and its table and plot."""

from __future__ import annotations

from typing import Any

# Issue 11's targets, checked against the rows of one run. Dense m=8 at n=16 against Gurobi:
DENSE_M8_LIMITS = {"cpsat": 1.5, "scip": 3.0, "highs": 3.0}
WARM_LIMITS = {"highs": 0.8, "cpsat": 0.9}  # warm / cold; any other backend: not slower (1.0)
REUSE_LIMIT = 1.3  # solve() / a reused layer
BACKWARD_LIMIT = 1.5  # one thread beside a busy neighbour / quiet
PARALLEL_LIMIT = 1.8  # speed-up of threads and processes on 2 workers ...
TWO_CORES = 1.8  # ... where the ideal split's cores factor shows the machine gives two cores
OF_IDEAL_LIMIT = 0.95  # a process pool's throughput / the ideal split's of the same run (issue 36)


def target_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each speed target that ``rows`` (one run of ``ilplayer bench``) can check: what was
    measured against its limit, and whether it was met. A parallel target is "no two cores"
    when the ideal split of the same run found the machine giving less than ``TWO_CORES``."""
    checks: list[tuple[str, float, str, bool | None]] = []  # target, measured, limit, met

    def check(
        target: str, measured: float, limit: float, at_most: bool = True, two_cores: bool = True
    ) -> None:
        met: bool | None = measured <= limit if at_most else measured >= limit
        if not met and not two_cores:
            met = None  # missed where the machine did not give two cores
        checks.append((target, measured, f"{'<=' if at_most else '>='} {limit:.2f}", met))

    solvers = [row for row in rows if row["benchmark"] == "solvers"]
    for row in solvers:
        if (
            row["family"] == "dense m=8"
            and row["n"] == 16
            and row["reference"] == "gurobi"
            and row["backend"] in DENSE_M8_LIMITS
        ):
            check(
                f"dense m=8 {row['backend']} / gurobi",
                row["ratio"],
                DENSE_M8_LIMITS[row["backend"]],
            )
    reference = {
        (row["family"], row["n"]): row["ms_per_instance"]
        for row in solvers
        if row["backend"] == "reference"
    }
    for (family, n), reference_ms in reference.items():  # every backend: the slowest decides
        ours = [
            row
            for row in solvers
            if (row["family"], row["n"]) == (family, n) and row["backend"] != "reference"
        ]
        if ours:
            slowest = max(ours, key=lambda row: row["ms_per_instance"])
            check(
                f"{family} slowest backend ({slowest['backend']}) / reference layer",
                slowest["ms_per_instance"] / reference_ms,
                1.0,
            )
    for row in rows:
        if row["benchmark"] == "warm":
            check(
                f"{row['family']} {row['backend']} warm / cold",
                row["ratio"],
                WARM_LIMITS.get(row["backend"], 1.0),
            )
        elif row["benchmark"] == "reuse":
            check(f"{row['backend']} solve() / reused layer", row["ratio"], REUSE_LIMIT)
        elif row["benchmark"] == "backward" and (row["threads"], row["load"]) == (
            "layer (1 thread)",
            "busy neighbour",
        ):
            check("backward beside a busy neighbour / quiet", row["ratio"], BACKWARD_LIMIT)
    parallel = [row for row in rows if row["benchmark"] == "parallel"]
    if any(row.get("run") == "median" for row in parallel):  # several runs: their medians decide
        parallel = [row for row in parallel if row.get("run") == "median"]
    cores = {
        (row["backend"], row["family"]): row["cores"]
        for row in parallel
        if row["executor"] == "ideal"
    }
    for row in parallel:
        if row["executor"] in ("threads", "processes") and row["ratio"] is not None:
            machine = cores.get((row["backend"], row["family"]))
            check(
                f"{row['family']} {row['backend']} {row['executor']} / serial",
                row["ratio"],
                PARALLEL_LIMIT,
                at_most=False,
                two_cores=machine is None or machine >= TWO_CORES,
            )
        if row["executor"] == "processes" and row.get("of_ideal") is not None:
            check(
                f"{row['family']} {row['backend']} processes / ideal split",
                row["of_ideal"],
                OF_IDEAL_LIMIT,
                at_most=False,
            )
    return [
        {
            "benchmark": "targets",
            "target": target,
            "measured": measured,
            "limit": limit,
            "verdict": {True: "met", False: "missed", None: "no two cores"}[met],
        }
        for target, measured, limit, met in checks
    ]


def print_rows(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("(nothing measured: no backend installed?)")
        return
    keys = list(rows[0])
    table = [keys] + [
        [f"{row[k]:.3f}" if isinstance(row[k], float) else str(row[k]) for k in keys]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(keys))]
    for index, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))


def plot_rows(rows: list[dict[str, Any]], path: str) -> str:
    """Bar charts of the ratios, one panel per benchmark (matplotlib, the [demo] extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in rows if row["benchmark"] != "targets"]  # a verdict is no ratio
    kinds = list(dict.fromkeys(row["benchmark"] for row in rows))
    # Each panel as tall as its rows need (a label per bar stays readable) and never squat.
    heights = [
        max(2.4, 0.8 + 0.17 * sum(row["benchmark"] == kind for row in rows)) for kind in kinds
    ]
    fig, axes = plt.subplots(
        len(kinds),
        1,
        figsize=(9, sum(heights)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for axis, kind in zip(axes[:, 0], kinds):
        chosen = [row for row in rows if row["benchmark"] == kind]
        labels = [
            " ".join(
                str(row[k])
                for k in ("family", "backend", "executor", "threads", "load")
                if k in row
            )
            for row in chosen
        ]
        ratios = [row["ratio"] or 0.0 for row in chosen]
        axis.barh(range(len(chosen)), ratios)
        positive = [ratio for ratio in ratios if ratio > 0]
        if positive and max(positive) > 10 * min(positive):
            axis.set_xscale("log")  # the reference layer's 70x would flatten the backends' bars
        axis.set_yticks(range(len(chosen)), labels, fontsize=7)
        axis.axvline(1.0, color="black", linewidth=0.8)
        axis.set_title(
            {
                "solvers": "ms per instance / first backend's",
                "warm": "warm start / cold",
                "reuse": "solve() / reused ILPLayer",
                "backward": "backward / quiet, 1 thread",
                "parallel": "speed-up over serial (ideal: bare processes, the machine's ceiling)",
            }.get(kind, kind),
            fontsize=9,
        )
        axis.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
