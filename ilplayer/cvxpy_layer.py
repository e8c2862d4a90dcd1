"""cvxpylayers' shape for mixed-integer programs: a ``cvxpy.Problem`` with parameters becomes
an ``nn.Module`` whose inputs are the parameters and whose outputs are the chosen variables;
gradients reach every parameter through cvxpy's affine map from parameters to ``(c, A, b)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ilplayer.gradients import GradientMethod
from ilplayer.layer import ILPLayer
from ilplayer.oracle import Oracle
from ilplayer.program import Program
from ilplayer.readers.cvxpy_problem import AffineMap, affine_map
from ilplayer.solvers.contract import Solver

__all__ = ["CvxpyILPLayer", "from_cvxpy"]


def _sparse(matrix: Any) -> torch.Tensor:
    """A scipy sparse matrix as a float64 torch COO tensor."""
    coo = matrix.tocoo()
    index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    return torch.sparse_coo_tensor(
        index, torch.from_numpy(coo.data.astype(np.float64)), coo.shape, check_invariants=True
    ).coalesce()


def _flatten(value: torch.Tensor, batch: int) -> torch.Tensor:
    """(B, *shape) -> (B, size) in cvxpy's column-major order."""
    dims = value.dim() - 1
    return (
        value.permute(0, *range(dims, 0, -1)).reshape(batch, -1)
        if dims
        else value.reshape(batch, 1)
    )


def _unflatten(value: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """(B, size) in column-major order -> (B, *shape)."""
    if not shape:
        return value[:, 0]
    return value.reshape(value.shape[0], *shape[::-1]).permute(0, *range(len(shape), 0, -1))


class CvxpyILPLayer(torch.nn.Module):
    """A mixed-integer ``cvxpy.Problem`` as a layer: ``layer(*parameter_tensors)`` returns the
    values of ``variables`` at an optimum, and ``backward`` gives every parameter a gradient.

    Build it with [from_cvxpy][ilplayer.from_cvxpy]. The problem is canonicalised once by
    cvxpy into ``min c·y, A_eq y = b_eq, A y <= b, lb <= y <= ub`` whose data are affine in the
    parameters (DPP); each call evaluates that map in torch (a sparse matmul) and solves the
    batch with an [ILPLayer][ilplayer.ILPLayer], so the gradient method's ``dc`` (and, with
    CombOptNet, ``dA`` and ``db``) flow back to the parameters by autograd.

    Attributes:
        layer: the [ILPLayer][ilplayer.ILPLayer] that solves the canonical program.
        program: its [Program][ilplayer.Program] (box, integrality, the constant rows, names).
        last_status: the status of each instance of the last call.
    """

    def __init__(
        self,
        problem: Any,
        parameters: Sequence[Any],
        variables: Sequence[Any],
        solver: str | Solver = "highs",
        method: GradientMethod | str | None = None,
        **oracle_options: Any,
    ) -> None:
        super().__init__()
        canonical = affine_map(problem)
        self.parameters_ = _check_parameters(problem, parameters)
        self.variables_ = _check_variables(problem, variables)
        parts = {p.name(): _parts_of(canonical, p) for p in self.parameters_}
        self._parametric_rows = any(
            "rows" in found or "equalities" in found for found in parts.values()
        )
        fields = dict(canonical.fields)
        if not self._parametric_rows:
            fields.update(canonical.rows_at(canonical.theta({})))
        self.program = Program(**fields)
        self.layer = ILPLayer(Oracle(self.program, solver=solver, **oracle_options), method)
        _refuse_missing_gradients(parts, self.layer, self.program)
        # Positions, not cvxpy ids: a deep copy of the layer gives its cvxpy objects new ids.
        self._inputs = [
            (p.name(), tuple(p.shape), canonical.offsets[p.id]) for p in self.parameters_
        ]
        self._outputs = [
            (canonical.variables[v.id][0], tuple(v.shape), v.size) for v in self.variables_
        ]
        self._map = canonical
        self._cost = _sparse(canonical.cost)
        self._rows = _sparse(canonical.rows)
        self._index = (torch.from_numpy(canonical.row), torch.from_numpy(canonical.column))

    @property
    def last_status(self) -> torch.Tensor | None:
        return self.layer.last_status

    def _theta(self, values: Sequence[Any]) -> tuple[torch.Tensor, bool]:
        if len(values) != len(self._inputs):
            raise ValueError(
                f"parameters: the layer takes {len(self._inputs)} tensors "
                f"({', '.join(name for name, _, _ in self._inputs)}), got {len(values)}"
            )
        tensors = [
            torch.as_tensor(v, dtype=torch.float64) if not isinstance(v, torch.Tensor) else v
            for v in values
        ]
        sizes = set()
        for tensor, (name, shape, _) in zip(tensors, self._inputs):
            if tuple(tensor.shape) == shape:
                continue
            if tuple(tensor.shape[1:]) != shape:
                raise ValueError(
                    f"{name}: expected shape {shape} or (batch, *{shape}), got "
                    f"{tuple(tensor.shape)}"
                )
            sizes.add(tensor.shape[0])
        if len(sizes) > 1:
            raise ValueError(
                f"parameters: batched parameters must share one batch size, got {sorted(sizes)}"
            )
        batched = bool(sizes)
        batch = sizes.pop() if sizes else 1
        device = tensors[0].device
        pieces = [
            torch.zeros(batch, self._map.size, dtype=torch.float64, device=device),
            torch.ones(batch, 1, dtype=torch.float64, device=device),
        ]
        theta = torch.cat(pieces, dim=1)
        for tensor, (_, shape, start) in zip(tensors, self._inputs):
            if tuple(tensor.shape) == shape:
                tensor = tensor.unsqueeze(0).expand(batch, *tensor.shape)
            flat = _flatten(tensor.to(torch.float64), batch)
            theta = torch.cat([theta[:, :start], flat, theta[:, start + flat.shape[1] :]], dim=1)
        return theta, batched

    def forward(self, *values: Any) -> tuple[torch.Tensor, ...]:
        """The variables' values for the parameters' tensors (each of the parameter's shape,
        or with a leading batch dimension)."""
        theta, batched = self._theta(values)
        device = theta.device
        c = torch.sparse.mm(self._cost.to(device), theta.T).T
        if self._parametric_rows:
            y = self.layer(c, *self._rows_of(theta))
        else:
            y = self.layer(c)
        outputs = []
        for start, shape, size in self._outputs:
            value = _unflatten(y[:, start : start + size], shape)
            outputs.append(value if batched else value[0])
        return tuple(outputs)

    def _rows_of(self, theta: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """``A, b, A_eq, b_eq`` (B, ...) at ``theta``, differentiable."""
        batch, device = theta.shape[0], theta.device
        (m, width), k = self._map.shape, self._map.num_equalities
        entries = torch.sparse.mm(self._rows.to(device), theta.T).T  # (B, nnz)
        full = torch.zeros(batch, m, width, dtype=theta.dtype, device=device)
        row, column = (index.to(device) for index in self._index)
        full = full.index_put(
            (torch.arange(batch, device=device)[:, None], row[None], column[None]), entries
        )
        A_all, b_all = -full[..., :-1], full[..., -1]
        rows = (A_all[:, k:], b_all[:, k:]) if m > k else (None, None)
        equalities = (A_all[:, :k], b_all[:, :k]) if k else (None, None)
        return (*rows, *equalities)


def _check_parameters(problem: Any, parameters: Sequence[Any]) -> list[Any]:
    given, known = list(parameters), problem.parameters()
    for parameter in given:
        if not any(parameter is p for p in known):
            raise ValueError(f"parameters: {parameter} is not a parameter of the problem")
    missing = [p.name() for p in known if not any(p is q for q in given)]
    if missing:
        raise ValueError(
            f"parameters: the problem's parameter {missing[0]!r} is not among them; every parameter "
            "of the problem is an input of the layer (as in cvxpylayers)"
        )
    return given


def _check_variables(problem: Any, variables: Sequence[Any]) -> list[Any]:
    known = problem.variables()
    for variable in variables:
        if not any(variable is v for v in known):
            raise ValueError(f"variables: {variable} is not a variable of the problem")
    return list(variables)


def _parts_of(canonical: AffineMap, parameter: Any) -> set[str]:
    """Where a parameter enters: the costs, the inequality rows, the equality rows."""
    start = canonical.offsets[parameter.id]
    columns = slice(start, start + parameter.size)
    found = set()
    if canonical.cost[:, columns].nnz:
        found.add("costs")
    touched = np.unique(canonical.rows[:, columns].tocoo().row)
    rows = canonical.row[touched]
    if (rows < canonical.num_equalities).any():
        found.add("equalities")
    if (rows >= canonical.num_equalities).any():
        found.add("rows")
    return found


def _refuse_missing_gradients(
    parts: dict[str, set[str]], layer: ILPLayer, program: Program
) -> None:
    """A parameter whose gradient the method cannot give is refused by name, never left at zero."""
    for name, found in parts.items():
        if "equalities" in found:
            raise ValueError(
                f"parameters: {name!r} enters equality constraints, and no gradient method gives "
                "gradients for equality rows; write them as two inequalities (<= and >=) to learn "
                "them with method='combopt', or make the parameter a constant"
            )
        if "rows" in found and not layer.method.constraint_gradients:
            raise ValueError(
                f"parameters: {name!r} enters the constraints, and method={layer.gradient!r} gives "
                "cost gradients only; use method='combopt' (CombOptNet's A and b gradient)"
            )
        if (
            "rows" in found
            and program.integrality is not None
            and not np.all(np.asarray(program.integrality))
        ):
            raise ValueError(
                f"parameters: {name!r} enters the constraints of a mixed-integer program; "
                "CombOptNet's A and b gradient holds for pure-integer programs only"
            )


def from_cvxpy(
    problem: Any,
    parameters: Sequence[Any],
    variables: Sequence[Any],
    solver: str | Solver = "highs",
    method: GradientMethod | str | None = None,
    **oracle_options: Any,
) -> CvxpyILPLayer:
    """A layer from a mixed-integer ``cvxpy.Problem``, shaped as cvxpylayers' ``CvxpyLayer``.

    Args:
        problem: a DPP ``cvxpy.Problem`` with integer or boolean variables, linear (or
            piecewise-linear) objective and constraints.
        parameters: every ``cvxpy.Parameter`` of the problem, in the order the layer takes
            their tensors.
        variables: the ``cvxpy.Variable`` s whose values the layer returns, in that order.
        solver: the backend ([list_solvers][ilplayer.list_solvers]).
        method: the gradient method (default CombOptNet's); a parameter whose gradient it
            cannot give is refused at construction.
        **oracle_options: for the [Oracle][ilplayer.Oracle] (``solver_options``,
            ``executor``, ``workers``, ...).

    Example:
        >>> x = cp.Variable(3, boolean=True)
        >>> c = cp.Parameter(3)
        >>> problem = cp.Problem(cp.Maximize(c @ x), [cp.sum(x) <= 2])
        >>> layer = ilplayer.from_cvxpy(problem, parameters=[c], variables=[x])
        >>> (x_star,) = layer(torch.tensor([1.0, -1.0, 2.0]))
        >>> x_star.tolist()
        [1.0, 0.0, 1.0]
    """
    return CvxpyILPLayer(
        problem, parameters, variables, solver=solver, method=method, **oracle_options
    )
