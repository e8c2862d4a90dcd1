"""Reading is not the bottleneck: the time ``Program.from_*`` takes to read a sparse MILP
beside the source tool's own export of the same model (gurobipy and Pyomo writing an MPS
file, cvxpy canonicalising for HiGHS, HiGHS reading the file), and the reader's peak memory
per non-zero at two sizes (it should not grow with the size).

    python benchmarks/readers.py --variables 10000 --rows 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np


def random_sparse(n: int, m: int, per_column: int, seed: int = 0):
    import scipy.sparse as sparse

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, m, size=n * per_column)
    columns = np.repeat(np.arange(n), per_column)
    A = sparse.csr_array(
        (rng.uniform(1, 9, size=n * per_column).round(2), (rows, columns)), shape=(m, n)
    )
    A.sum_duplicates()
    return A, np.full(m, 0.3 * per_column * n / m * 5), rng.uniform(-1, 1, size=n).round(3)


def gurobipy_model(A, b, c):
    import gurobipy as gp

    model = gp.Model(env=gp.Env(params={"OutputFlag": 0}))
    x = model.addMVar(A.shape[1], lb=0, ub=3, vtype="I", obj=c, name="x")
    model.addMConstr(A, x, "<", b)
    model.update()
    return model


def pyomo_model(A, b, c):
    import pyomo.environ as pe

    model = pe.ConcreteModel()
    model.J = pe.RangeSet(0, A.shape[1] - 1)
    model.x = pe.Var(model.J, domain=pe.Integers, bounds=(0, 3))
    model.rows = pe.ConstraintList()
    for i in range(A.shape[0]):
        start, end = A.indptr[i], A.indptr[i + 1]
        model.rows.add(
            sum(float(v) * model.x[int(j)] for j, v in zip(A.indices[start:end], A.data[start:end]))
            <= float(b[i])
        )
    model.obj = pe.Objective(expr=sum(float(c[j]) * model.x[j] for j in range(A.shape[1])))
    return model


def cvxpy_problem(A, b, c):
    import cvxpy as cp

    x = cp.Variable(A.shape[1], integer=True, bounds=[0, 3], name="x")
    return cp.Problem(cp.Minimize(c @ x), [A @ x <= b])


def seconds(task, repeats: int, fresh=None) -> float:
    """Best of ``repeats``; ``fresh()`` (untimed) makes the task's input anew each time, for
    tools that cache what they computed (cvxpy keeps its canonical form on the problem)."""
    best = np.inf
    for _ in range(repeats):
        made = fresh() if fresh else None
        start = time.perf_counter()
        task(made) if fresh else task()
        best = min(best, time.perf_counter() - start)
    return best


def peak_bytes(task, fresh=None) -> int:
    made = fresh() if fresh else None
    tracemalloc.start()
    task(made) if fresh else task()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variables", type=int, default=10000)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--per-column", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    print(
        "| reader | n | nnz | source tool's export s | ilplayer read s | ratio | peak bytes per nnz |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in (args.variables // 2, args.variables):
        measure(n, max(1, args.rows * n // args.variables), args, folder)


def measure(n: int, m: int, args: argparse.Namespace, folder: Path) -> None:
    """One size: each reader beside its tool's export, and the reader's peak memory."""
    import cvxpy as cp

    from ilplayer import Program

    A, b, c = random_sparse(n, m, args.per_column)
    grb, omo = gurobipy_model(A, b, c), pyomo_model(A, b, c)
    path = folder / f"model{n}.mps"
    grb.write(str(path))

    def highs_read():
        import highspy

        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.readModel(str(path))

    cases = {
        "gurobipy": (
            lambda: grb.write(str(folder / "out.mps")),
            lambda: Program.from_gurobipy(grb),
        ),
        "pyomo": (
            lambda: omo.write(str(folder / "out.lp"), io_options={"symbolic_solver_labels": True}),
            lambda: Program.from_pyomo(omo),
        ),
        "cvxpy": (
            lambda problem: problem.get_problem_data(cp.HIGHS),
            lambda problem: Program.from_cvxpy(problem),
        ),
        "file (MPS)": (highs_read, lambda: Program.from_file(path)),
    }
    for name, (export, read) in cases.items():
        fresh = (lambda: cvxpy_problem(A, b, c)) if name == "cvxpy" else None
        theirs, ours = seconds(export, args.repeats, fresh), seconds(read, args.repeats, fresh)
        peak = peak_bytes(read, fresh)
        print(
            f"| {name} | {n} | {A.nnz} | {theirs:.3f} | {ours:.3f} | {ours / theirs:.2f} | "
            f"{peak / A.nnz:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
