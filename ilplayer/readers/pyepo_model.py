"""PyEPO ``optModel``s, read through the gurobipy or Pyomo model inside them; the cost map
from PyEPO's cost vector to the model's columns is read from the model's own ``setObj``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilplayer.errors import UnreadableModelError
from ilplayer.readers.gurobi import read_gurobipy
from ilplayer.readers.pyomo_model import read_pyomo

__all__ = ["read_pyepo"]


def _objective(optmodel: Any, kind: str, columns: dict[str, int], n: int) -> np.ndarray:
    """The model's objective coefficients per column after ``setObj`` (as the solver sees them)."""
    coefficients = np.zeros(n)
    if kind == "gurobipy":
        optmodel._model.update()
        return np.asarray(
            optmodel._model.getAttr("Obj", optmodel._model.getVars()), dtype=np.float64
        )
    from pyomo.environ import Objective
    from pyomo.repn import generate_standard_repn

    objective = next(optmodel._model.component_data_objects(Objective, active=True))
    repn = generate_standard_repn(objective.expr, compute_values=True)
    if repn.nonlinear_expr is not None or repn.quadratic_vars:
        raise UnreadableModelError(
            f"optmodel: {type(optmodel).__name__}'s objective is not linear in the costs"
        )
    for var, coefficient in zip(repn.linear_vars, repn.linear_coefs):
        coefficients[columns[var.name]] += float(coefficient)
    return coefficients


def read_pyepo(optmodel: Any) -> dict[str, Any]:
    """The fields of a ``Program`` from a PyEPO ``optModel`` (gurobipy or Pyomo inside), with
    its ``cost_map`` (n, num_cost): column ``k`` is what ``setObj`` puts on each variable for
    the unit cost ``e_k``, so PyEPO's costs (B, num_cost) are the program's costs and its
    solutions come back as ``y @ cost_map``, PyEPO's solution vector."""
    model = getattr(optmodel, "_model", None)
    num_cost = getattr(optmodel, "num_cost", None)
    if model is None or num_cost is None or not callable(getattr(optmodel, "setObj", None)):
        raise TypeError(
            f"optmodel must be a PyEPO optModel (with _model, num_cost, setObj), got "
            f"{type(optmodel).__name__}"
        )
    kind = type(model).__module__.split(".")[0]
    if kind == "gurobipy":
        fields = read_gurobipy(model)
    elif kind == "pyomo":
        fields = read_pyomo(model)
    else:
        raise UnreadableModelError(
            f"optmodel: {type(optmodel).__name__} holds a {type(model).__name__}; "
            "ilplayer reads the PyEPO models built on gurobipy or Pyomo"
        )
    names = fields["variable_names"]
    columns = {name: j for j, name in enumerate(names)}
    n = len(names)
    optmodel.setObj(np.zeros(num_cost))
    base = _objective(optmodel, kind, columns, n)
    cost_map = np.zeros((n, num_cost))
    for k in range(num_cost):  # setObj is linear in the costs: its columns are its answers to e_k
        unit = np.zeros(num_cost)
        unit[k] = 1.0
        optmodel.setObj(unit)
        cost_map[:, k] = _objective(optmodel, kind, columns, n) - base
    if np.any(base):
        raise UnreadableModelError(
            f"optmodel: {type(optmodel).__name__}.setObj adds a fixed objective part "
            "besides the costs; ilplayer's programs are linear in the costs"
        )
    identity = cost_map.shape[0] == cost_map.shape[1] and np.array_equal(cost_map, np.eye(num_cost))
    fields.update(cost_map=None if identity else cost_map, c=None)
    return fields
