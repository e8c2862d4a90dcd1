"""Runs a validated batch through a backend and checks what comes back.

A device-native backend (``Capability.DEVICE_TENSORS``) gets the tensors as they are. Any
other backend gets one float64 host copy, split into groups sharing ``(A, b)``. A failing
group becomes ``Status.ERROR`` rows with a warning naming the instances; it never sinks the
batch. A returned solution that is not integral on the integer variables, leaves the box or
violates ``A y <= b`` is demoted to ``Status.ERROR`` too: a backend's bug must not become a silent wrong answer.
Instances whose box optimum already meets the rows are answered here, without a backend.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.matrices import nonzero_rows
from ilplayer.core.records import (
    VERIFY_TOL,
    Capability,
    ILPBatch,
    SolveResult,
    Status,
    TaskFailure,
    has_solution,
)
from ilplayer.core.threads import library_threads, one_blas_thread
from ilplayer.errors import SolverFailureWarning
from ilplayer.parallel.backend import Backend
from ilplayer.solvers.contract import Solver
from ilplayer.solvers.paths import network_of, shortest_paths

__all__ = [
    "backend_groups",
    "box_optima",
    "check_capabilities",
    "placeholder_solution",
    "solve_problem",
]


def placeholder_solution(
    lb: np.ndarray, ub: np.ndarray, integrality: np.ndarray | None = None
) -> np.ndarray:
    """The ``y`` given to rows without a solution: the box centre, rounded down on the integer
    variables; where a bound is infinite, the point of the box closest to 0.

    For the usual boxes ([0, 1] and [-5, 5]) this is the zero vector the reference
    implementation uses. The backward treats it as the point to move away from.
    """
    with np.errstate(invalid="ignore"):
        centre = np.where(np.isfinite(lb) & np.isfinite(ub), (lb + ub) / 2, np.clip(0.0, lb, ub))
    integer = (
        np.ones(len(lb), bool)
        if integrality is None
        else np.asarray(integrality).reshape(-1, len(lb)).all(0)
    )
    return np.where(integer, np.floor(centre), centre).astype(np.float64)


def _verify(batch: ILPBatch, result: SolveResult, rows: np.ndarray, solver: str) -> SolveResult:
    y, status = result.y.copy(), result.status.copy()
    solved = has_solution(status)
    rounded, valid = batch.checked_points(y)
    bad = solved & ~valid
    if bad.any():
        warnings.warn(
            f"solver {solver!r} returned an invalid solution (not integral where asked, outside "
            f"the box or violating A y <= b or A_eq y = b_eq) for instances {rows[bad].tolist()}; they "
            "are marked Status.ERROR",
            SolverFailureWarning,
            stacklevel=4,
        )
        status[bad] = Status.ERROR
    objective = np.where(solved & ~bad, np.einsum("kn,kn->k", batch.c, rounded), np.nan)
    return SolveResult(y=rounded, status=status, objective=objective)


def times(matrix: Any, y: np.ndarray) -> np.ndarray:
    """``y @ matrix.T`` for rows ``y`` (k, n), with ``matrix`` dense or sparse."""
    return np.asarray(matrix @ y.T).T


def without_zero_rows(batch: ILPBatch) -> ILPBatch | None:
    """``batch`` without its all-zero rows, or None when one of them makes it infeasible.

    A row ``0·y <= b_j`` holds for every ``y`` or for none, so the core decides it (with the
    tolerance of the answer check) and backends never see it: some refuse a constant
    constraint (Pyomo), and none needs it.
    """
    zero = ~nonzero_rows(batch.A)
    zero_eq = ~nonzero_rows(batch.A_eq)  # 0 = b_eq: holds for every y or for none
    if not zero.any() and not zero_eq.any():
        return batch
    if (batch.b[zero] < -VERIFY_TOL * (1.0 + np.abs(batch.b[zero]))).any():
        return None
    if (np.abs(batch.b_eq[zero_eq]) > VERIFY_TOL * (1.0 + np.abs(batch.b_eq[zero_eq]))).any():
        return None
    return batch.with_rows(
        A=batch.A[~zero], b=batch.b[~zero], A_eq=batch.A_eq[~zero_eq], b_eq=batch.b_eq[~zero_eq]
    )


BOX_TOL = 1e-9  # the rows a box optimum must meet: strictly, not within the solvers' band


def box_optima(batch: ILPBatch) -> tuple[np.ndarray, np.ndarray]:
    """Each instance's optimum over the box alone, and which of them meet the rows.

    The box's optimum (each variable at ``lb`` where its cost is >= 0, else at ``ub``) is at
    least as good as every point of the box; when it also meets the rows strictly, it is the
    instance's optimum and no backend is asked. Training meets this all the time: early in
    training an SPO+ or maximisation batch has costs of one sign (an empty knapsack), and such
    instances then cost nothing on every backend and executor.
    """
    y = np.where(
        batch.c < 0, batch.ub, np.where(batch.c > 0, batch.lb, batch.finite_lower())
    ).astype(np.float64)
    # An infinite bound under its cost: the instance is unbounded, or its rows decide.
    decided = np.isfinite(y).all(axis=1)
    y = np.where(np.isfinite(y), y, 0.0)
    if batch.A.shape[0]:
        decided = decided & (times(batch.A, y) <= batch.b + BOX_TOL).all(axis=1)
    if batch.A_eq.shape[0]:
        decided = decided & (np.abs(times(batch.A_eq, y) - batch.b_eq) <= BOX_TOL).all(axis=1)
    return y, np.asarray(decided)


def backend_groups(
    problem: ProblemTensors, capabilities: frozenset[Capability] | set[Capability]
) -> tuple[list[tuple[np.ndarray, ILPBatch]], np.ndarray, np.ndarray, np.ndarray]:
    """What of ``problem`` a backend with ``capabilities`` is asked: its groups sharing
    ``(A, b)`` (each ``(rows, batch)``), without the instances decided here (all-zero rows that
    make one infeasible, a box optimum that meets the rows, a shortest path on an acyclic graph:
    `ilplayer.solvers.paths`); and ``(y, status, objective)`` for
    the whole batch, filled in for those decided instances (``Status.ERROR`` elsewhere)."""
    B, n = problem.batch_size, problem.num_variables
    y = np.zeros((B, n))
    status = np.full(B, int(Status.ERROR), dtype=np.int8)
    objective = np.full(B, np.nan)
    groups = []
    native_equalities = Capability.EQUALITY_CONSTRAINTS in capabilities
    for rows, batch in problem.host_groups():
        reduced = without_zero_rows(batch)
        if reduced is None:
            status[rows] = Status.INFEASIBLE
            continue
        box, decided = box_optima(reduced)
        if decided.any():
            done = rows[decided]
            y[done], status[done] = box[decided], Status.OPTIMAL
            objective[done] = np.einsum("kn,kn->k", reduced.c[decided], box[decided])
            if decided.all():
                continue
            rows, reduced = rows[~decided], reduced.with_rows(c=reduced.c[~decided])
        network = network_of(reduced)
        if network is not None:  # a shortest path on an acyclic graph: no backend needed
            y[rows], status[rows], objective[rows] = shortest_paths(reduced, network)
            continue
        groups.append((rows, reduced if native_equalities else reduced.equalities_as_rows()))
    return groups, y, status, objective


def _solve_host(problem: ProblemTensors, backend: Backend) -> tuple[np.ndarray, ...]:
    n, solver = problem.num_variables, backend.solver
    groups, y, status, objective = backend_groups(problem, solver.capabilities)
    failed: list[int] = []
    first_error = ""
    for rows, batch, result in backend.solve_groups(groups):
        if not isinstance(result, TaskFailure) and result.y.shape != (len(rows), n):
            result = TaskFailure(f"returned y of shape {result.y.shape}, expected {(len(rows), n)}")
        if isinstance(result, TaskFailure):  # one failing group must not sink the batch
            failed.extend(rows.tolist())
            first_error = first_error or result.message
            continue
        result = _verify(batch, result, rows, solver.name)
        y[rows], status[rows], objective[rows] = result.y, result.status, result.objective
    if failed:
        warnings.warn(
            f"solver {solver.name!r} failed on instances {sorted(failed)} (marked "
            f"Status.ERROR); first error: {first_error}",
            SolverFailureWarning,
            stacklevel=3,
        )
    return y, status, objective


MILP_BACKENDS_HINT = (
    "a mixed-integer backend: highs, gurobi, scip or pyomo:<solver> (ilplayer solvers lists them)"
)


def check_capabilities(problem: ProblemTensors, solver: Solver) -> None:
    """Refuse a mixed-integer program, or an infinite bound, on a backend that does not
    declare it can solve one: never round a continuous variable silently."""
    if problem.has_continuous and Capability.CONTINUOUS_VARIABLES not in solver.capabilities:
        j = int(np.flatnonzero(~problem.integrality.reshape(-1, problem.num_variables).all(0))[0])
        raise ValueError(
            f"integrality: variable {j} is continuous (integrality[{j}] = 0), and solver "
            f"{solver.name!r} solves pure-integer programs only; use {MILP_BACKENDS_HINT}"
        )
    if problem.has_infinite_bounds and Capability.INFINITE_BOUNDS not in solver.capabilities:
        infinite = ~(np.isfinite(problem.lb) & np.isfinite(problem.ub))
        j = int(np.flatnonzero(infinite)[0])
        raise ValueError(
            f"lb/ub: variable {j} has an infinite bound (lb={problem.lb[j]:g}, ub={problem.ub[j]:g}), "
            f"and solver {solver.name!r} needs a finite box; give finite bounds or use "
            f"{MILP_BACKENDS_HINT}"
        )


def solve_problem(
    problem: ProblemTensors, backend: Backend | Solver
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Solve ``problem`` with ``backend``'s solver, in this thread or on its executor's workers
    (which build their own solvers from its recipe). A bare
    [`Solver`][ilplayer.parallel.dispatch.Solver] solves serially.

    Returns ``(y, status, objective)`` on ``problem.device``: ``y`` float64 (B, n) with the
    placeholder where there is no solution, ``status`` int8 (B,), ``objective`` float64 (B,).
    With a cost map, the program is solved in its own variables and ``y`` is read through the
    map: (B, d), ``y @ cost_map``.
    """
    if problem.cost_map is not None:
        y, status, objective = solve_problem(problem.unmapped(), backend)
        return y @ problem.cost_map, status, objective
    if isinstance(backend, Solver):
        backend = Backend(recipe=None, solver=backend)
    solver = backend.solver
    check_capabilities(problem, solver)
    solver.check(problem)  # refuse what the backend cannot do, before solving anything
    device = problem.device
    if device.type == "meta":
        raise ValueError(
            f"c: the inputs are on the meta device, which holds shapes but no values, and solver "
            f"{solver.name!r} needs the values; solve on cpu or an accelerator (a gradient method's "
            "backward runs on meta by itself, given solutions)"
        )
    if Capability.DEVICE_TENSORS not in solver.capabilities:
        # The host-side products (box optima, the answer check; n x m x B) run on one BLAS
        # thread: OpenBLAS' two threads made each one many times slower on a busy machine
        # (docs/records/defaults.md, "Threads and processes").
        with one_blas_thread():
            y_np, status_np, objective_np = _solve_host(problem, backend)
        # The placeholder goes in on the host: a few NumPy operations, where the same on
        # tensors costs a dispatch each.
        unsolved = ~has_solution(status_np)
        if unsolved.any():
            y_np[unsolved] = placeholder_solution(problem.lb, problem.ub, problem.integrality)
        return (
            torch.from_numpy(y_np).to(device),
            torch.from_numpy(status_np).to(device),
            torch.from_numpy(objective_np).to(device),
        )
    try:
        with (
            library_threads()
        ):  # torch's enumeration: as many threads as the machine has cores free
            y, status, objective = solver.solve_tensors(problem)
    except Exception as exc:
        warnings.warn(
            f"solver {solver.name!r} failed on the whole batch: {type(exc).__name__}: {exc}",
            SolverFailureWarning,
            stacklevel=2,
        )
        y = torch.zeros(problem.c.shape, dtype=torch.float64, device=device)
        status = torch.full(
            (problem.batch_size,), int(Status.ERROR), dtype=torch.int8, device=device
        )
        objective = torch.full(
            (problem.batch_size,), float("nan"), dtype=torch.float64, device=device
        )
    solved = has_solution(status)
    placeholder = torch.from_numpy(
        placeholder_solution(problem.lb, problem.ub, problem.integrality)
    ).to(device)
    y = torch.where(solved[:, None], y.to(torch.float64), placeholder)
    return y, status, objective
