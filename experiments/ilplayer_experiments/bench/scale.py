"""``ilplayer bench scale``: time per instance and peak memory against problem size, each
beside a direct call of the same backend on a persistent model (built once; only the objective
changes between instances), with the fitted growth exponent and a log-log plot.

Families: ``shortest-path`` (a k x k grid given as scipy.sparse: the network's equalities, an
LP that is integral), ``tsp`` (PyEPO's GG formulation: binary arcs, continuous flows) and
``knapsack`` (two weight rows, capacity 20 per 32 items). Each (family, size) runs in a fresh
process, so that its peak resident memory measures that size alone: the growth is the peak
minus the resident memory once the data are built.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np

__all__ = ["SCALE_FAMILIES", "SCALE_SIZES", "fit_exponent", "scale_benchmark", "scale_problem"]

SCALE_FAMILIES = ("shortest-path", "tsp", "knapsack")
SCALE_SIZES = {
    "shortest-path": (5, 10, 20, 40, 80),
    "tsp": (5, 8, 10, 15, 20),
    "knapsack": (32, 64, 128, 256, 512),
}
SIZE_NAMES = {"shortest-path": "grid side", "tsp": "nodes", "knapsack": "items"}


def scale_problem(family: str, size: int, instances: int, seed: int = 0) -> dict[str, Any]:
    """The keyword arguments of [`ilplayer.solve`][ilplayer.solve] for ``instances`` cost vectors."""
    from ilplayer.testing.formulations import grid_network, tsp_program

    rng = np.random.default_rng([seed, size])
    if family == "shortest-path":
        A_eq, b_eq = grid_network(size)
        n = A_eq.shape[1]
        return {
            "c": rng.uniform(0.1, 1.0, (instances, n)),
            "A": None,
            "b": None,
            "A_eq": A_eq,
            "b_eq": b_eq,
            "lb": 0,
            "ub": 1,
            "integrality": None,
        }
    if family == "tsp":
        program = tsp_program(size, "gg")
        c = rng.uniform(1.0, 10.0, (instances, len(program.edges))) @ program.embed.T
        return {
            "c": c,
            "A": program.A,
            "b": program.b,
            "A_eq": program.A_eq,
            "b_eq": program.b_eq,
            "lb": program.lb,
            "ub": program.ub,
            "integrality": program.integrality,
        }
    if family == "knapsack":
        weights = rng.integers(300, 800, (2, size)) / 100
        return {
            "c": -rng.uniform(1.0, 10.0, (instances, size)),
            "A": weights,
            "b": np.full(2, 20.0 * size / 32),
            "A_eq": None,
            "b_eq": None,
            "lb": 0,
            "ub": 1,
            "integrality": None,
        }
    raise ValueError(f"family must be one of {SCALE_FAMILIES}, got {family!r}")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _direct_highs(problem: dict[str, Any], n: int) -> Any:
    """One HiGHS model with the program's rows (exact, one thread); returns ``solve(c)``."""
    import highspy
    import scipy.sparse as sparse

    from ilplayer.core.matrices import stack_rows

    parts = [
        (x, lo, hi)
        for x, lo, hi in (
            (problem["A"], None, problem["b"]),
            (problem["A_eq"], problem["b_eq"], problem["b_eq"]),
        )
        if x is not None
    ]
    matrix = sparse.csc_matrix(stack_rows(*[x for x, _, _ in parts]))
    highs = highspy.Highs()
    for key, value in {"output_flag": False, "threads": 1, "mip_rel_gap": 0.0}.items():
        highs.setOptionValue(key, value)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, matrix.shape[0]
    lp.col_cost_ = np.zeros(n)
    lp.col_lower_ = np.broadcast_to(np.asarray(problem["lb"], float), (n,)).copy()
    lp.col_upper_ = np.broadcast_to(np.asarray(problem["ub"], float), (n,)).copy()
    lp.row_lower_ = np.concatenate(
        [np.full(len(hi), -highspy.kHighsInf) if lo is None else lo for _, lo, hi in parts]
    )
    lp.row_upper_ = np.concatenate([hi for _, _, hi in parts])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = (
        matrix.indptr,
        matrix.indices,
        matrix.data,
    )
    integer = (
        np.ones(n, bool)
        if problem["integrality"] is None
        else np.asarray(problem["integrality"], bool)
    )
    lp.integrality_ = [
        highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integer
    ]
    highs.passModel(lp)
    columns = np.arange(n, dtype=np.int32)

    def solve(c: np.ndarray) -> float:
        highs.changeColsCost(n, columns, c)
        highs.run()
        return float(highs.getInfo().objective_function_value)

    return solve


def _direct_gurobi(problem: dict[str, Any], n: int) -> Any:
    """One Gurobi model with the program's rows (exact gap, one thread); returns ``solve(c)``."""
    import gurobipy as gp

    env = gp.Env(params={"OutputFlag": 0, "Threads": 1, "MIPGap": 0.0})
    model = gp.Model(env=env)
    integer = (
        np.ones(n, bool)
        if problem["integrality"] is None
        else np.asarray(problem["integrality"], bool)
    )
    x = model.addMVar(
        n,
        lb=np.broadcast_to(np.asarray(problem["lb"], float), (n,)),
        ub=np.broadcast_to(np.asarray(problem["ub"], float), (n,)),
        vtype=np.where(integer, gp.GRB.INTEGER, gp.GRB.CONTINUOUS),
    )
    if problem["A"] is not None and len(problem["b"]):
        model.addConstr(problem["A"] @ x <= problem["b"])
    if problem["A_eq"] is not None:
        model.addConstr(problem["A_eq"] @ x == problem["b_eq"])

    def solve(c: np.ndarray) -> float:
        x.setAttr("Obj", c)
        model.optimize()
        return float(model.ObjVal)

    return solve


def measure_one(family: str, size: int, backend: str, instances: int) -> dict[str, Any]:
    """One (family, size) in this process: ilplayer, then the direct model, on the same costs."""
    import torch

    from ilplayer.layer import solve

    torch.set_num_threads(1)
    problem = scale_problem(family, size, instances + 1)
    c = problem.pop("c")
    n = c.shape[1]
    base = _rss_mb()
    solve(c[:1], solver=backend, executor="serial", **problem)  # builds the model
    start = time.perf_counter()
    y, status = solve(c[1:], solver=backend, executor="serial", **problem)
    ours = (time.perf_counter() - start) / instances
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
    direct_solve = (_direct_highs if backend == "highs" else _direct_gurobi)(problem, n)
    direct_solve(c[0])  # the direct model's first solve, like ilplayer's
    start = time.perf_counter()
    direct_objective = np.array([direct_solve(row) for row in c[1:]])
    direct = (time.perf_counter() - start) / instances
    objective = (c[1:] * np.asarray(y)).sum(1)
    rows = sum(x.shape[0] for x in (problem["A"], problem["A_eq"]) if x is not None)
    return {
        "benchmark": "scale",
        "family": family,
        "size": size,
        "backend": backend,
        "variables": n,
        "rows": rows,
        "instances": instances,
        "optimal": int((np.asarray(status) == 0).sum()),
        "objective_gap": float(np.abs(objective - direct_objective).max()),
        "ms_per_instance": 1000 * ours,
        "direct_ms": 1000 * direct,
        "ratio": ours / direct,
        "memory_growth_mb": growth,
    }


def fit_exponent(sizes: list[float], seconds: list[float]) -> float:
    """The slope of log(time) against log(size): time grows like size ** exponent."""
    if len(sizes) < 2:
        return float("nan")
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def scale_benchmark(
    families: tuple[str, ...],
    backend: str = "highs",
    sizes: dict[str, tuple[int, ...]] | None = None,
    instances: int = 8,
    report: Any = print,
) -> list[dict[str, Any]]:
    """Every (family, size) in its own process; a row each, then one fit row per family."""
    rows: list[dict[str, Any]] = []
    for family in families:
        done = []
        for size in (sizes or SCALE_SIZES)[family]:
            command = [
                sys.executable,
                "-m",
                "ilplayer_experiments.bench.scale",
                family,
                str(size),
                backend,
                str(instances),
            ]
            out = subprocess.run(command, capture_output=True, text=True)
            if out.returncode != 0:
                report(f"{family} {size}: failed ({out.stderr.strip().splitlines()[-1:]})")
                continue
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            done.append(row)
            report(
                f"{family:>13} {SIZE_NAMES[family]} {size:>3}: {row['variables']:>6} variables, "
                f"{row['optimal']}/{instances} optimal, {row['ms_per_instance']:9.2f} ms per instance = "
                f"{row['ratio']:.2f}x the direct {backend} model ({row['direct_ms']:.2f} ms); memory "
                f"+{row['memory_growth_mb']:.0f} MB; objectives within {row['objective_gap']:.1e}"
            )
        if done:
            variables = [r["variables"] for r in done]
            exponent = fit_exponent(variables, [r["ms_per_instance"] for r in done])
            direct_exponent = fit_exponent(variables, [r["direct_ms"] for r in done])
            rows.append(
                {
                    "benchmark": "scale-fit",
                    "family": family,
                    "backend": backend,
                    "exponent": exponent,
                    "direct_exponent": direct_exponent,
                }
            )
            report(
                f"{family:>13}: time per instance grows like variables^{exponent:.2f} "
                f"(the direct model: ^{direct_exponent:.2f})"
            )
    return rows


def plot_scale(rows: list[dict[str, Any]], path: str) -> None:
    """Time per instance against variables, log-log, ilplayer solid and the direct model dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.4, 4.2))
    for family in dict.fromkeys(r["family"] for r in rows if r["benchmark"] == "scale"):
        part = [r for r in rows if r["benchmark"] == "scale" and r["family"] == family]
        (line,) = axis.loglog(
            [r["variables"] for r in part], [r["ms_per_instance"] for r in part], "o-", label=family
        )
        axis.loglog(
            [r["variables"] for r in part],
            [r["direct_ms"] for r in part],
            "x--",
            color=line.get_color(),
            label=f"{family}, direct",
        )
    axis.set_xlabel("variables")
    axis.set_ylabel("ms per instance")
    axis.legend(fontsize=7)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if (
    __name__ == "__main__"
):  # one (family, size, backend, instances) per process: its own peak memory
    print(json.dumps(measure_one(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))))
