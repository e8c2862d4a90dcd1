"""gurobipy models: their rows, bounds, types and objective, read through gurobipy's own
matrix and attribute calls."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilplayer.errors import UnreadableModelError
from ilplayer.readers.rows import program_fields

__all__ = ["read_gurobipy"]


def _refuse_what_is_not_linear(model: Any) -> None:
    """Name the first quadratic, SOS, general or semi-continuous part, or lazy constraints."""
    if model.NumQConstrs:
        name = model.getQConstrs()[0].QCName
        raise UnreadableModelError(
            f"model: quadratic constraint {name!r}; ilplayer reads linear rows only"
        )
    if model.NumQNZs:
        raise UnreadableModelError(
            "model: the objective is quadratic; ilplayer reads linear objectives only"
        )
    if model.NumSOS:
        raise UnreadableModelError(
            f"model: it has {model.NumSOS} SOS constraint(s); write them with binaries "
            "and linear rows"
        )
    if model.NumGenConstrs:
        name = model.getGenConstrs()[0].GenConstrName
        raise UnreadableModelError(
            f"model: general constraint {name!r} (max, min, abs, indicator, ...); "
            "write it with linear rows"
        )
    if model.NumObj > 1:
        raise UnreadableModelError(f"model: it has {model.NumObj} objectives; ilplayer reads one")
    if model.Params.LazyConstraints:
        raise UnreadableModelError(
            "model: LazyConstraints=1 — rows added lazily in a callback are not in the "
            "model, so a static program would miss them; write them out (e.g. the "
            "TSP's MTZ or GG formulation instead of DFJ)"
        )
    odd = [var.VarName for var in model.getVars() if var.VType in ("S", "N")]
    if odd:
        raise UnreadableModelError(
            f"model: variable {odd[0]!r} is semi-continuous or semi-integer, which a "
            "linear program cannot hold"
        )


def read_gurobipy(model: Any) -> dict[str, Any]:
    """The fields of a ``Program`` from a ``gurobipy.Model``."""
    try:
        import gurobipy as gp
    except ImportError as error:
        raise ImportError(
            "Program.from_gurobipy needs gurobipy: pip install 'ilplayer[gurobi]'"
        ) from error
    if not isinstance(model, gp.Model):
        raise TypeError(f"model must be a gurobipy.Model, got {type(model).__name__}")
    model.update()
    _refuse_what_is_not_linear(model)
    variables, constraints = model.getVars(), model.getConstrs()
    rhs = np.asarray(model.getAttr("RHS", constraints), dtype=np.float64)
    senses = np.asarray(model.getAttr("Sense", constraints), dtype="<U1")
    lower = np.where(senses == "<", -np.inf, rhs)
    upper = np.where(senses == ">", np.inf, rhs)
    vtype = np.asarray(model.getAttr("VType", variables), dtype="<U1")
    lb = np.asarray(model.getAttr("LB", variables), dtype=np.float64)
    ub = np.asarray(model.getAttr("UB", variables), dtype=np.float64)
    return program_fields(
        A=model.getA(),
        lower=lower,
        upper=upper,
        lb=lb,
        ub=ub,
        integer=vtype != "C",
        binary=vtype == "B",
        c=model.getAttr("Obj", variables),
        sense="max" if model.ModelSense == -1 else "min",
        names=model.getAttr("VarName", variables),
    )
