"""cvxpy problems, read through cvxpy's own canonicalisation: the affine (DPP) map from the
problem's parameters to ``(c, A, b)`` that cvxpylayers differentiates through, and the
problem at its parameters' current values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ilplayer.errors import UnreadableModelError
from ilplayer.readers.rows import program_fields

__all__ = ["AffineMap", "affine_map", "read_cvxpy"]

# Variable attributes that cvxpy reduces to fewer columns or to cones: not a linear program's.
_REFUSED_ATTRIBUTES = (
    "PSD",
    "NSD",
    "symmetric",
    "diag",
    "hermitian",
    "complex",
    "imag",
    "sparsity",
)


@dataclass(frozen=True)
class AffineMap:
    """The canonical program ``min c·y, A_eq y = b_eq, A y <= b, lb <= y <= ub`` as affine
    functions of ``theta``, the parameters stacked (each flattened in cvxpy's column-major
    order, at ``offsets``) with a trailing 1.

    Attributes:
        cost: (n, p+1) CSR: ``c = cost @ theta`` (minimisation form: negated for Maximize).
        rows: (nnz, p+1) CSR: the non-zeros of ``[A_all | b_all]`` in the order of ``row``
            and ``column``, where ``A_all y + s = b_all`` with ``s`` zero on the first
            ``num_equalities`` rows and non-negative on the others (cvxpy's cone form).
        row, column: the position of each non-zero in the (m, n+1) matrix ``[A_all | b_all]``.
        num_equalities: the leading rows that are equalities.
        shape: (m, n+1), the shape of ``[A_all | b_all]``.
        offsets: for each parameter id, its first position in ``theta``.
        size: p, the length of ``theta`` without the trailing 1.
        variables: for each problem variable id, its first column and shape.
        maximize: whether the problem maximises (``cost`` is then the negated objective).
        fields: the ``Program`` fields other than the rows and the objective (box,
            integrality, names).
    """

    cost: Any
    rows: Any
    row: np.ndarray
    column: np.ndarray
    shape: tuple[int, int]
    num_equalities: int
    offsets: dict[int, int]
    size: int
    variables: dict[int, tuple[int, tuple[int, ...]]]
    maximize: bool
    fields: dict[str, Any]

    def theta(self, values: dict[int, Any]) -> np.ndarray:
        """``theta`` for parameter values by id (each an array of the parameter's shape)."""
        theta = np.zeros(self.size + 1)
        theta[-1] = 1.0
        for key, value in values.items():
            flat = np.asarray(value, dtype=np.float64).flatten(order="F")
            theta[self.offsets[key] : self.offsets[key] + flat.size] = flat
        return theta

    def rows_at(self, theta: np.ndarray) -> dict[str, Any]:
        """``A, b, A_eq, b_eq`` (CSR) at ``theta``."""
        import scipy.sparse as sparse

        m, n = self.shape[0], self.shape[1] - 1
        full = sparse.csr_array((self.rows @ theta, (self.row, self.column)), shape=self.shape)
        A_all, b_all = -full[:, :n], full[:, [n]].toarray().ravel()
        k = self.num_equalities
        return {
            "A": A_all[k:] if m > k else None,
            "b": b_all[k:] if m > k else None,
            "A_eq": A_all[:k] if k else None,
            "b_eq": b_all[:k] if k else None,
        }


def _check_linear(problem: Any) -> None:
    """Name the first part of the problem that is not (piecewise) linear or not DCP."""
    import cvxpy as cp

    for variable in problem.variables():
        refused = [name for name in _REFUSED_ATTRIBUTES if variable.attributes.get(name)]
        if refused:
            raise UnreadableModelError(
                f"problem: variable {variable.name()!r} is {refused[0]}; ilplayer reads "
                "real variables (continuous, integer or boolean) only"
            )
    if not problem.objective.expr.is_pwl():
        raise UnreadableModelError(
            f"problem: the objective {problem.objective.expr} is not linear (quadratic or "
            "nonlinear); ilplayer reads linear and piecewise-linear objectives"
        )
    linear = (
        cp.constraints.Inequality,
        cp.constraints.Equality,
        cp.constraints.Zero,
        cp.constraints.NonPos,
        cp.constraints.NonNeg,
    )
    for constraint in problem.constraints:
        if not isinstance(constraint, linear) or not all(arg.is_pwl() for arg in constraint.args):
            raise UnreadableModelError(
                f"problem: constraint {constraint} is not linear (a cone, quadratic or "
                "nonlinear); ilplayer reads linear and piecewise-linear constraints"
            )
    if not problem.is_dcp():
        raise UnreadableModelError(
            "problem: it is not DCP (a piecewise-linear term of the wrong curvature, "
            "e.g. maximising abs(x)); write it with integer variables and linear rows"
        )


def _first_non_dpp(expression: Any) -> Any:
    """The innermost part of ``expression`` that is not DPP (its arguments all are)."""
    for arg in expression.args:
        if not arg.is_dpp():
            return _first_non_dpp(arg)
    return expression


def _check_dpp(problem: Any) -> None:
    """Name the expression that makes the problem not DPP: the layer's map from parameters to
    ``(c, A, b)`` must be affine (a product of two parameters is not)."""
    if problem.is_dpp():
        return
    parts = [("the objective", problem.objective.expr)]
    parts += [(f"constraint {constraint}", constraint) for constraint in problem.constraints]
    for where, part in parts:
        if not part.is_dpp():
            culprit = _first_non_dpp(part)
            raise UnreadableModelError(
                f"problem: {where} is not DPP: {culprit} is not affine in the parameters (a product of two "
                "parameters, or a parameter inside a nonlinear atom); make one factor a constant or a new "
                "parameter holding the product, as cvxpylayers requires"
            )
    raise UnreadableModelError(
        "problem: it is not DPP (cvxpy's disciplined parametrized programming)"
    )


def _names(
    variables: list[Any], columns: dict[int, tuple[int, tuple[int, ...]]], n: int
) -> list[str]:
    """One name per column: ``x``, ``x[i]``, ``x[i,j]`` (cvxpy's column-major order), and
    ``_aux{j}`` for the columns cvxpy's canonicalisation added."""
    names = [f"_aux{j}" for j in range(n)]
    for variable in variables:
        start, shape = columns[variable.id]
        base = variable.name()
        if not shape:
            labels = [base]
        elif len(shape) == 1:
            labels = [f"{base}[{k}]" for k in range(shape[0])]
        else:
            indices = np.unravel_index(np.arange(variable.size), shape, order="F")
            labels = [
                f"{base}[{','.join(map(str, index))}]"
                for index in zip(*(i.tolist() for i in indices))
            ]
        names[start : start + len(labels)] = labels
    return names


def _id_maps(chain: Any) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """The solving chain's maps from the problem's variable and parameter ids to its own."""
    var_ids = (
        {k: v[0] for k, v in chain.compose_var_id_map().items()}
        if hasattr(chain, "compose_var_id_map")
        else {}
    )
    par_ids = (
        {k: v[0] for k, v in chain.compose_param_id_map().items()}
        if hasattr(chain, "compose_param_id_map")
        else {}
    )
    return var_ids, par_ids


def _parametrised_rows(param_prob: Any, n: int, size: int) -> tuple[Any, Any, Any, Any]:
    """The rows' entries as an affine map of the parameters: ``(rows, row, column, shape)``."""
    import scipy.sparse as sparse

    param_prob.reduced_A.cache()
    index = param_prob.reduced_A.problem_data_index
    if index is None:  # no rows
        return sparse.csr_array((0, size + 1)), np.zeros(0, int), np.zeros(0, int), (0, n + 1)
    indices, indptr, shape = index
    rows = sparse.csr_array(param_prob.reduced_A.reduced_mat)
    row = np.asarray(indices, dtype=np.int64)
    column = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return rows, row, column, (int(shape[0]), int(shape[1]))


def affine_map(problem: Any) -> AffineMap:
    """The problem's canonical form as an affine map of its parameters (cvxpy's DPP
    canonicalisation, through its HiGHS interface, which keeps integrality and bounds)."""
    try:
        import cvxpy as cp
    except ImportError as error:
        raise ImportError(
            "Program.from_cvxpy needs cvxpy: pip install 'ilplayer[cvxpy]'"
        ) from error
    if not isinstance(problem, cp.Problem):
        raise TypeError(f"problem must be a cvxpy.Problem, got {type(problem).__name__}")
    _check_linear(problem)
    _check_dpp(problem)
    data, chain, _ = problem.get_problem_data(cp.HIGHS)
    dims = data["dims"]
    if dims.soc or dims.exp or dims.psd or dims.p3d:
        raise UnreadableModelError("problem: its canonical form has cones beyond linear rows")
    param_prob = data[cp.settings.PARAM_PROB]
    var_ids, par_ids = _id_maps(chain)
    import scipy.sparse as sparse

    n = int(param_prob.x.size)
    size = int(param_prob.total_param_size)
    cost = sparse.csr_array(param_prob.q)[:n]
    rows, row, column, shape = _parametrised_rows(param_prob, n, size)
    offsets = {
        p.id: int(param_prob.param_id_to_col[par_ids.get(p.id, p.id)]) for p in problem.parameters()
    }
    columns = {
        v.id: (int(param_prob.var_id_to_col[var_ids.get(v.id, v.id)]), tuple(v.shape))
        for v in problem.variables()
    }
    integer, binary = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    integer[list(data.get("int_vars_idx", []))] = True
    binary[list(data.get("bool_vars_idx", []))] = True
    lb = np.full(n, -np.inf) if data.get("lower_bounds") is None else data["lower_bounds"]
    ub = np.full(n, np.inf) if data.get("upper_bounds") is None else data["upper_bounds"]
    fields = program_fields(
        A=None,
        lower=None,
        upper=None,
        lb=lb,
        ub=ub,
        integer=integer,
        binary=binary,
        c=np.zeros(n),
        sense="min",
        names=_names(problem.variables(), columns, n),
    )
    return AffineMap(
        cost=cost,
        rows=rows,
        row=row,
        column=column,
        shape=shape,
        num_equalities=int(dims.zero),
        offsets=offsets,
        size=size,
        variables=columns,
        maximize=isinstance(problem.objective, cp.Maximize),
        fields=fields,
    )


def read_cvxpy(problem: Any) -> dict[str, Any]:
    """The fields of a ``Program`` from a cvxpy problem, its parameters at their values."""
    missing = [p.name() for p in problem.parameters() if p.value is None]
    if missing:
        raise UnreadableModelError(
            f"problem: parameter {missing[0]!r} has no value; give it one, or make a "
            "layer with ilplayer.from_cvxpy(problem, parameters=[...]) whose inputs they are"
        )
    if problem.parameters() and not problem.is_dpp():
        from cvxpy.reductions.eval_params import EvalParams

        problem = EvalParams().apply(problem)[
            0
        ]  # the parameters' values as constants: nothing left to map
    canonical = affine_map(problem)
    theta = canonical.theta({p.id: p.value for p in problem.parameters()})
    fields = dict(canonical.fields)
    fields.update(canonical.rows_at(theta))
    c = canonical.cost @ theta
    fields.update(c=-c if canonical.maximize else c, sense="max" if canonical.maximize else "min")
    return fields
