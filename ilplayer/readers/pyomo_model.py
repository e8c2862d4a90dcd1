"""Pyomo models, read through Pyomo's own linear standard-form compiler."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilplayer.errors import UnreadableModelError
from ilplayer.readers.rows import program_fields

__all__ = ["read_pyomo"]


def read_pyomo(model: Any) -> dict[str, Any]:
    """The fields of a ``Program`` from a Pyomo model (one active objective, linear rows; the
    columns are the variables the rows or the objective use, in Pyomo's order)."""
    try:
        import pyomo.environ as pe
        from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler
    except ImportError as error:
        raise ImportError(
            "Program.from_pyomo needs Pyomo: pip install 'ilplayer[pyomo]'"
        ) from error
    if not isinstance(model, pe.Block):
        raise TypeError(
            f"model must be a Pyomo model (a ConcreteModel or Block), got {type(model).__name__}"
        )
    sos = next(model.component_data_objects(pe.SOSConstraint, active=True), None)
    if sos is not None:
        raise UnreadableModelError(
            f"model: SOS constraint {sos.name!r}; write it with binaries and linear rows"
        )
    objectives = list(model.component_data_objects(pe.Objective, active=True))
    if len(objectives) != 1:
        raise UnreadableModelError(
            f"model: it has {len(objectives)} active objectives; ilplayer reads exactly one"
        )
    for constraint in model.component_data_objects(pe.Constraint, active=True):
        if constraint.body.polynomial_degree() not in (0, 1):
            raise UnreadableModelError(
                f"model: constraint {constraint.name!r} is not linear: {constraint.expr}"
            )
    if objectives[0].expr.polynomial_degree() not in (0, 1):
        raise UnreadableModelError(f"model: objective {objectives[0].name!r} is not linear")
    info = LinearStandardFormCompiler().write(model, mixed_form=True, set_sense=None)
    kinds = np.array([row.bound_type for row in info.rows], dtype=np.int64)
    rhs = np.asarray(info.rhs, dtype=np.float64)
    lower = np.where(kinds == 1, -np.inf, rhs)  # 1: <=, -1: >=, 0: =
    upper = np.where(kinds == -1, np.inf, rhs)
    columns = info.columns
    lb = np.array([-np.inf if v.lb is None else v.lb for v in columns], dtype=np.float64)
    ub = np.array([np.inf if v.ub is None else v.ub for v in columns], dtype=np.float64)
    integer = np.array([not v.is_continuous() for v in columns], dtype=bool)
    c = (
        np.asarray(info.c.toarray()[0], dtype=np.float64)
        if info.c.shape[0]
        else np.zeros(len(columns))
    )
    sense = "max" if objectives[0].sense == pe.maximize else "min"
    return program_fields(
        A=info.A,
        lower=lower,
        upper=upper,
        lb=lb,
        ub=ub,
        integer=integer,
        c=c,
        sense=sense,
        names=[v.name for v in columns],
    )
