"""OR-Tools CP-SAT, which accepts integer coefficients only.

Float data are scaled by ``scale`` (default 1e6) and rounded, and every answer is checked
against the float problem:

* Constraints: row j becomes ``round(s a_j)·y <= floor(s (b_j + tol) + E_j)``, where
  ``E_j = sum_i |round(s a_ij) - s a_ij| max(|lb_i|, |ub_i|)`` bounds the rounding error of the
  row over the box. Every point feasible for the float problem (within ``tol = 1e-6``) is
  feasible for the scaled one, so "infeasible" is exact. A point the scaled model admits but
  the float one does not is removed with a forbidden-assignment cut (valid for every instance
  of that ``(A, b)``, so it stays in the model) and the instance is solved again.
  The answer is always feasible for the float constraints.
* Objective: ``round(s c)``. The answer's cost exceeds the float optimum by at most
  ``sum_i |round(s c_i)/s - c_i| (ub_i - lb_i) <= 0.5 sum_i (ub_i - lb_i) / s``
  (8e-6 for a binary box with n = 16 at the default scale); zero when ``s c`` is integral.
* Integer data (``s A``, ``s b`` and ``s c`` integral) are represented exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ilplayer.plugin_api import (
    Capability,
    ILPBatch,
    Multipliers,
    PersistentModelSolver,
    ProblemTensors,
    Status,
    block_diagonal,
    dense,
    import_solver_library,
    is_sparse,
    multipliers_in_blocks,
)

# Exact (CP-SAT proves optimality of its integer objective by default), one worker. Each
# setting below is the faster one on the small programs of training, measured in
# docs/records/defaults.md ("CP-SAT"). Override with params=...
DEFAULT_PARAMS: dict[str, Any] = {
    "num_workers": 1,
    "cp_model_presolve": False,
    "symmetry_level": 0,
    "cut_level": 0,  # cuts cost more than they prune at n <= 64
    # The LP relaxation, on every box: without it the search explodes on wide boxes and on
    # binary ones from n = 32; it costs a little on small binary ones.
    "linearization_level": 1,
    # SAT inprocessing and probing between restarts pay on large models, not on these.
    "use_sat_inprocessing": False,
    "cp_model_probing_level": 0,
}
FEASIBILITY_TOL = 1e-6
MAX_SAFE_INTEGER = 2**53  # keep every scaled activity exactly representable
CLASH_FIX = (
    "ortools and highspy 1.13-1.15 each ship a libhighs.so.1; highspy 1.16 links HiGHS "
    "into its own module and lives beside ortools: pip install 'ilplayer[all]' "
    "(highspy>=1.16 with ortools 9.15)."
)


def _sat_parameters(params: dict[str, Any]) -> str:
    """``params`` checked field by field against CP-SAT's ``SatParameters`` and written in the
    text format that ``SatParameters.merge_text_format`` reads. Protobuf's JSON mapping does
    the checking: enum fields take a member's name ("LP_SEARCH") or number, repeated fields a
    list (``restart_algorithms``, ``subsolvers``), integer fields no bool and no fraction;
    ``None`` leaves a field at CP-SAT's own default."""
    from google.protobuf import json_format, text_format
    from ortools.sat import sat_parameters_pb2

    message = sat_parameters_pb2.SatParameters()
    for key, value in params.items():  # one at a time, so that an error names its parameter
        if key not in message.DESCRIPTOR.fields_by_name:
            raise ValueError(f"params: CP-SAT has no parameter {key!r}")
        try:
            json_format.ParseDict({key: value}, message)
        except json_format.ParseError as exc:
            raise ValueError(f"params: CP-SAT rejected {key}={value!r}: {exc}") from None
    return text_format.MessageToString(message)


# The LP relaxations go to GLOP through OR-Tools' model builder, several instances per call
# as one block-diagonal LP: one call sets a block's costs, one solves it, two read the duals and
# the optimum. The model builder solves each call from scratch (no warm basis), and a cold
# solve grows faster than the rows, so a block holds about LP_BLOCK_ROWS rows: 8 instances of
# m = 4, 4 of m = 8, 16 of m <= 2; faster on every family than one warm-started pywraplp LP per
# instance, whose Python calls per variable cost more than the LP (docs/records/solvers.md).
# GLOP's presolve only costs at this size.
LP_BLOCK_ROWS = 32
MAX_LP_BLOCK = 16
GLOP_PARAMETERS = "use_preprocessing: false"


def _lp_block(rows: int) -> int:
    """Instances per block LP for a constraint set of ``rows`` rows."""
    return max(1, min(MAX_LP_BLOCK, LP_BLOCK_ROWS // max(rows, 1)))


def _block_lp(model_builder_helper: Any, batch: ILPBatch, size: int) -> tuple[Any, Any, list[int]]:
    """``size`` copies of ``batch``'s float rows side by side (inequalities, then equalities
    with both sides ``b_eq``), as a model-builder LP and a GLOP solver for it."""
    rows = np.vstack([batch.A, batch.A_eq]).astype(np.float64)
    n = rows.shape[1]
    lower = np.concatenate([np.full(batch.num_constraints, -np.inf), batch.b_eq])
    upper = np.concatenate([batch.b, batch.b_eq])
    matrix = block_diagonal(rows, size)
    helper = model_builder_helper.ModelBuilderHelper()
    helper.fill_model_from_sparse_data(
        np.tile(batch.lb.astype(np.float64), size),
        np.tile(batch.ub.astype(np.float64), size),
        np.zeros(size * n),
        np.tile(lower, size),
        np.tile(upper, size),
        matrix,
    )
    solver = model_builder_helper.ModelSolverHelper("glop")
    solver.set_solver_specific_parameters(GLOP_PARAMETERS)
    return helper, solver, list(range(size * n))


class _Model:
    """A constraint set's CP-SAT model, and what checking an answer against the float rows needs."""

    __slots__ = ("A", "A_eq", "b_eq", "b_high", "batch", "cp_model", "indices", "lp", "proto", "y")

    def __init__(self, cp_model: Any, y: list[Any], batch: ILPBatch, indices: list[int]) -> None:
        if indices != list(range(len(y))):  # solve_instance reads y's values by position
            raise RuntimeError("CP-SAT numbered the model's variables out of order")
        self.cp_model, self.proto, self.y, self.indices, self.batch = (
            cp_model,
            cp_model.proto,
            y,
            indices,
            batch,
        )
        self.A, self.b_high = batch.A, batch.b + FEASIBILITY_TOL
        self.A_eq: np.ndarray | None = batch.A_eq if len(batch.A_eq) else None
        self.b_eq: np.ndarray | None = batch.b_eq if len(batch.A_eq) else None
        self.lp: dict[int, tuple[Any, ...]] = {}  # block size -> GLOP's block LP, made on first use

    def feasible(self, point: np.ndarray) -> bool:
        """Whether ``point`` meets the float rows (within FEASIBILITY_TOL)."""
        if not (self.A @ point <= self.b_high).all():
            return False
        return self.A_eq is None or bool(
            (np.abs(self.A_eq @ point - self.b_eq) <= FEASIBILITY_TOL).all()
        )


class CpSatSolver(PersistentModelSolver):
    """OR-Tools CP-SAT with verified integer scaling (see the module docstring).

    Args:
        time_limit: seconds per instance (``Status.TIME_LIMIT`` when reached).
        params: CP-SAT ``SatParameters`` fields by name; override ``DEFAULT_PARAMS``.
        scale: multiplier applied to ``A``, ``b`` and ``c`` before rounding to integers.
        max_repairs: cuts allowed per instance before it is reported as ``Status.ERROR``.
    """

    name = "cpsat"
    solves_relaxations = False
    gives_multipliers = True
    capabilities = frozenset(
        {
            Capability.INTEGER_COEFFICIENTS_ONLY,
            Capability.RELEASES_GIL,
            Capability.EQUALITY_CONSTRAINTS,
            Capability.IN_PLACE_UPDATES,
            Capability.TIME_LIMIT,
        }
    )
    accepts_start = True

    def __init__(
        self,
        time_limit: float | None = None,
        params: dict[str, Any] | None = None,
        scale: float = 1e6,
        max_repairs: int = 100,
        warm_start: bool | None = None,
    ) -> None:
        super().__init__(time_limit, params, warm_start)
        if not (isinstance(scale, (int, float)) and scale >= 1):
            raise ValueError(f"scale must be a number >= 1, got {scale!r}")
        if isinstance(max_repairs, bool) or not isinstance(max_repairs, int) or max_repairs < 0:
            raise ValueError(
                f"max_repairs must be an integer >= 0 (cuts allowed per instance), "
                f"got {max_repairs!r}"
            )
        self.scale = float(scale)
        self.max_repairs = max_repairs
        ortools_sat = import_solver_library(
            "ortools.sat.python.cp_model", clashes_with=("highspy",), fix=CLASH_FIX
        )
        self._cp = ortools_sat
        self._solver = ortools_sat.CpSolver()
        self._solver.parameters.merge_text_format(
            _sat_parameters({**DEFAULT_PARAMS, **self.params})
        )
        if self.time_limit is not None:
            self._solver.parameters.max_time_in_seconds = self.time_limit
        self.repairs = 0  # cuts added so far (a measure of how often scaling misled CP-SAT)
        # Imported here, not on the first relaxation: the search's gate times its first tries.
        from ortools.linear_solver.python import model_builder_helper

        self._model_builder = model_builder_helper

    def check(self, problem: ProblemTensors) -> None:
        reach = np.maximum(np.abs(problem.lb), np.abs(problem.ub)).astype(np.float64)
        matrices: tuple[tuple[str, Any], ...] = (
            ("A", problem.A),
            ("c", problem.c),
            ("A_eq", problem.A_eq),
        )
        for name, tensor in matrices:
            if tensor is None:
                continue
            if is_sparse(tensor):
                largest = float(abs(tensor).max()) * self.scale if tensor.nnz else 0.0
            else:
                largest = float(tensor.abs().amax()) * self.scale if tensor.numel() else 0.0
            if largest * float(reach.sum()) >= MAX_SAFE_INTEGER:
                raise ValueError(
                    f"{name}: coefficients up to {largest / self.scale:.3g} times scale={self.scale:g} "
                    "over this box overflow CP-SAT's exact integer range; pass a smaller scale "
                    "in solver_options"
                )

    def solve(self, batch: ILPBatch) -> Any:
        # CP-SAT's models here are small integer programs: sparse rows are read densely.
        if batch.sparse:
            batch = batch.with_rows(A=dense(batch.A), A_eq=dense(batch.A_eq))
        return super().solve(batch)

    def build_model(self, batch: ILPBatch) -> _Model:
        cp = self._cp
        model = cp.CpModel()
        y = [
            model.new_int_var(int(l), int(u), f"y{i}")
            for i, (l, u) in enumerate(zip(batch.lb, batch.ub))
        ]
        scaled = batch.A * self.scale
        coefficients = np.round(scaled)
        reach = np.maximum(np.abs(batch.lb), np.abs(batch.ub)).astype(np.float64)
        rounding_error = np.abs(coefficients - scaled) @ reach
        rhs = np.floor(self.scale * (batch.b + FEASIBILITY_TOL) + rounding_error + 1e-9)
        for row, bound in zip(coefficients.astype(np.int64), rhs.astype(np.int64)):
            model.add(cp.LinearExpr.weighted_sum(y, row.tolist()) <= int(bound))
        # Equalities: the scaled row within [s (b_eq - tol) - E, s (b_eq + tol) + E], which every
        # point satisfying the float equality (within tol) meets; answers are checked below.
        scaled_eq = batch.A_eq * self.scale
        coefficients_eq = np.round(scaled_eq)
        error_eq = np.abs(coefficients_eq - scaled_eq) @ reach
        low = np.ceil(self.scale * (batch.b_eq - FEASIBILITY_TOL) - error_eq - 1e-9)
        high = np.floor(self.scale * (batch.b_eq + FEASIBILITY_TOL) + error_eq + 1e-9)
        for row, lo, hi in zip(
            coefficients_eq.astype(np.int64), low.astype(np.int64), high.astype(np.int64)
        ):
            expression = cp.LinearExpr.weighted_sum(y, row.tolist())
            model.add(expression >= int(lo))
            model.add(expression <= int(hi))
        indices = [var.index for var in y]
        model.proto.objective.vars.extend(indices)  # min sum(coeffs * vars): zero costs are allowed
        return _Model(model, y, batch, indices)

    def relaxation_multipliers(self, model: _Model, c: np.ndarray) -> list[Multipliers | None]:
        # A CP-SAT solve has a fixed cost far above an LP's; OR-Tools' GLOP solves the float LP
        # relaxations of several instances as one block-diagonal LP (a block-diagonal LP's duals
        # and optimum are each block's). With their duals and optima the core's search answers
        # most instances exactly (for the float costs) without CP-SAT.
        size = min(_lp_block(model.batch.num_constraints + len(model.batch.A_eq)), len(c))
        if size not in model.lp:
            model.lp[size] = _block_lp(self._model_builder, model.batch, size)
        helper, solver, columns = model.lp[size]
        optimal = self._model_builder.SolveStatus.OPTIMAL

        def solve_block(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
            helper.set_objective_coefficients(columns, costs.tolist())
            solver.solve(helper)
            if solver.status() != optimal:
                return None
            # GLOP's duals are the objective's sensitivity to the row bounds: <= 0 on a binding
            # "<=" row of a minimisation, so the multipliers are their negatives.
            return -solver.dual_values().reshape(size, -1), solver.variable_values()

        return multipliers_in_blocks(c, size, model.batch.num_constraints, solve_block)

    # Hints and costs are written into the model's proto directly: ``add_hint`` per variable
    # and ``minimize`` over a new expression cost several times more Python per instance, a
    # large share of a small solve. The variables of both are written once per model; each
    # instance rewrites the numbers only.
    def solve_instance(
        self, model: _Model, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        cp = self._cp
        if start is not None:  # a hint; it stays set for the solves after it
            hint = model.proto.solution_hint
            if not len(hint.vars):
                hint.vars.extend(model.indices)
            hint.values.clear()
            hint.values.extend(start.astype(np.int64).tolist())
        coeffs = model.proto.objective.coeffs
        coeffs.clear()
        coeffs.extend(np.round(c * self.scale).astype(np.int64).tolist())
        for _ in range(self.max_repairs + 1):
            code = self._solver.solve(model.cp_model)
            if code == cp.INFEASIBLE:
                return Status.INFEASIBLE, None
            if code not in (cp.OPTIMAL, cp.FEASIBLE):
                if code == cp.UNKNOWN and self.time_limit is not None:
                    return Status.TIME_LIMIT_NO_SOLUTION, None
                raise RuntimeError(f"CP-SAT ended with status {self._solver.status_name(code)}")
            # y are the model's first variables: the response lists their values in order (one
            # pass, not a call per variable; fromiter stops after y's values and builds no list
            # on the way: half the time, all of it holding the GIL).
            point = np.fromiter(
                self._solver.response_proto.solution, dtype=np.float64, count=len(model.y)
            )
            if model.feasible(point):
                return (Status.OPTIMAL if code == cp.OPTIMAL else Status.TIME_LIMIT), point
            # Admitted only by the rounding: cut exactly this point off and solve again.
            model.cp_model.add_forbidden_assignments(model.y, [tuple(int(v) for v in point)])
            self.repairs += 1
        raise RuntimeError(
            f"CP-SAT answers still violated A y <= b after {self.max_repairs} "
            "repairs; raise scale or max_repairs"
        )
