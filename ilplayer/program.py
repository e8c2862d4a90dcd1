"""The static integer program a layer, an oracle or a loss solves over and over: its rows, box,
integrality, sense and cost map, checked once when it is made."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ilplayer.core.bounds import Bounds, check_box
from ilplayer.core.validation import check_cost_map, validate_problem

__all__ = ["Program", "check_sense"]


def check_sense(sense: Any) -> str:
    """``sense`` as ``"min"`` or ``"max"`` (any case), or a clear error."""
    if not isinstance(sense, str) or sense.lower() not in ("min", "max"):
        raise ValueError(f"sense must be 'min' or 'max', got {sense!r}")
    return sense.lower()


def _rows(value: Any) -> Any:
    """A matrix or vector of the program, stored once: NumPy becomes a tensor, a tensor is
    detached (the program is data; learnable rows are passed per call), sparse stays sparse."""
    if isinstance(value, np.ndarray) and value.dtype != object:
        return torch.from_numpy(value)
    if isinstance(value, torch.Tensor):
        return value.detach()
    return value


@dataclass(frozen=True, eq=False)
class Program:
    """``min`` (or ``max``) ``c·y`` subject to ``A y <= b``, ``A_eq y = b_eq``, ``lb <= y <= ub``,
    ``y_j`` integer where ``integrality_j`` — everything but the costs, which each call brings.

    Made once and checked once (shapes, finiteness, bounds, the argument named in any error);
    immutable and picklable. Build it by hand or with a reader of the model you already have.

    Args:
        A: inequality rows (m, n): a tensor, a NumPy array or a scipy.sparse matrix (kept sparse);
            None (with ``b`` None) for no rows.
        b: their right-hand sides (m,).
        A_eq: equality rows (m_eq, n), or None.
        b_eq: their right-hand sides (m_eq,).
        lb: lower bounds, a scalar or one per variable (``-inf``: none).
        ub: upper bounds, likewise (``inf``: none).
        integrality: 1 (integer) or 0 (continuous) per variable, as in ``scipy.optimize.milp``;
            None: all integer.
        sense: ``"min"`` or ``"max"``.
        cost_map: (n, d) when a cost entry is not one variable (PyEPO's TSP: a cost per edge):
            the costs given are then (B, d), the program's ``c @ cost_map.T``, and solutions are
            returned as ``y @ cost_map``.
        variable_names: one name per variable (column), e.g. the names of the model it was read
            from; solutions can then be read back by name.
        c: the model's own objective (n,), when it was read from a model that has one.

    Example:
        >>> program = Program(A=[[1.0, 1.0]], b=[1.0], lb=0, ub=1, sense="max")
        >>> program.num_variables, program.num_constraints
        (2, 1)
    """

    A: Any = None
    b: Any = None
    A_eq: Any = None
    b_eq: Any = None
    lb: Bounds = 0
    ub: Bounds = 1
    integrality: Any = None
    sense: str = "min"
    cost_map: torch.Tensor | None = None
    variable_names: tuple[str, ...] | None = None
    c: torch.Tensor | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)
        set_("sense", check_sense(self.sense))
        for name in ("A", "b", "A_eq", "b_eq"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                value = np.asarray(value, dtype=np.float64)
            set_(name, _rows(value))
        check_box(self.lb, self.ub, self.integrality)
        set_("cost_map", check_cost_map(self.cost_map))
        if self.variable_names is not None:
            names = self.variable_names
            if (
                isinstance(names, str)
                or not isinstance(names, Sequence)
                or not all(isinstance(name, str) for name in names)
            ):
                raise TypeError("variable_names must be a sequence of strings, one per variable")
            set_("variable_names", tuple(names))
        n = self.num_variables
        if self.c is not None:
            c = torch.as_tensor(self.c, dtype=torch.float64).detach()
            if n is not None and c.shape != (n,):
                raise ValueError(
                    f"c must have shape ({n},) (the model's objective, one per variable), "
                    f"got {tuple(c.shape)}"
                )
            set_("c", c)
        if self.variable_names is not None and n is not None and len(self.variable_names) != n:
            raise ValueError(
                f"variable_names has {len(self.variable_names)} names but the program has {n} variables"
            )
        if n is not None:
            # One zero cost vector through the batch checks: every shape, value and bound at once.
            costs = n if self.cost_map is None else self.cost_map.shape[1]
            validate_problem(
                torch.zeros(1, costs, dtype=torch.float64),
                self.A,
                self.b,
                self.lb,
                self.ub,
                self.A_eq,
                self.b_eq,
                self.integrality,
                cost_map=self.cost_map,
            )
        elif (self.A is None) != (self.b is None):
            raise ValueError("A and b must both be given, or both be None (no constraints)")

    @property
    def sign(self) -> float:
        """1.0 for a minimisation program, -1.0 for a maximisation one: the factor that turns
        its objective into the minimisation form that every solve and loss works in."""
        return -1.0 if self.sense == "max" else 1.0

    def minimised(self, c: Any) -> Any:
        """Costs ``c`` in the program's sense as costs of its minimisation form (the one place
        the sense is turned)."""
        return -c if self.sense == "max" else c

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Program:
        """The program of an MPS or LP file (also ``.gz``), read by HiGHS (``highspy``).

        Its objective is ``program.c`` in ``program.sense``, its column names are
        ``program.variable_names``; the rows stay sparse. Ranged rows become two rows.

        Raises:
            UnreadableModelError: an unknown format, a file HiGHS cannot read, a quadratic
                objective or a semi-continuous variable (named).
        """
        from ilplayer.readers.files import read_file

        return cls(**read_file(path))

    @classmethod
    def from_gurobipy(cls, model: Any) -> Program:
        """The program of a ``gurobipy.Model`` (its rows, bounds, variable types, objective and
        names); refuses quadratic, SOS, general and semi-continuous parts and lazy constraints."""
        from ilplayer.readers.gurobi import read_gurobipy

        return cls(**read_gurobipy(model))

    @classmethod
    def from_pyomo(cls, model: Any) -> Program:
        """The program of a Pyomo model (one active objective, linear constraints; the domains
        and bounds of its variables), through Pyomo's linear standard-form compiler; the columns
        are the variables the model uses, named as Pyomo names them."""
        from ilplayer.readers.pyomo_model import read_pyomo

        return cls(**read_pyomo(model))

    @classmethod
    def from_cvxpy(cls, problem: Any) -> Program:
        """The program of a ``cvxpy.Problem`` (integer and boolean variables, bounds, linear
        and piecewise-linear terms) at its parameters' current values, through cvxpy's own
        canonicalisation; columns cvxpy adds (for ``abs``, ``max``, ...) are named ``_aux{j}``.
        For a layer whose inputs are the parameters, use [from_cvxpy][ilplayer.from_cvxpy]."""
        from ilplayer.readers.cvxpy_problem import read_cvxpy

        return cls(**read_cvxpy(problem))

    @classmethod
    def from_pyepo(cls, optmodel: Any) -> Program:
        """The program of a PyEPO ``optModel`` (gurobipy or Pyomo inside), with the cost map
        from PyEPO's cost vector to the model's columns read from the model's own ``setObj``:
        costs are given as PyEPO gives them and solutions come back as PyEPO's. Models that add
        rows lazily in a callback (the TSP's DFJ, the CVRP's rounded capacity cuts) are refused."""
        from ilplayer.readers.pyepo_model import read_pyepo

        return cls(**read_pyepo(optmodel))

    def __repr__(self) -> str:
        fields = []
        for name in ("A", "A_eq"):
            value = getattr(self, name)
            if value is not None:
                fields.append(f"{name}={tuple(value.shape)}")
        for name in ("lb", "ub", "integrality"):
            value = getattr(self, name)
            if np.ndim(value) >= 1 and np.size(value) > 8:
                value = f"<{np.size(value)} values>"
            elif np.ndim(value) >= 1:
                value = np.asarray(value).tolist()
            fields.append(f"{name}={value}")
        fields.append(f"sense={self.sense!r}")
        if self.cost_map is not None:
            fields.append(f"cost_map={tuple(self.cost_map.shape)}")
        if self.variable_names is not None:
            fields.append(f"variable_names=<{len(self.variable_names)} names>")
        return f"Program({', '.join(fields)})"

    @property
    def num_variables(self) -> int | None:
        """n, from the rows, the bounds, the integrality, the cost map or the names (None: a
        box-only program with scalar bounds takes n from the costs)."""
        for value in (self.A, self.A_eq):
            if value is not None and len(value.shape) >= 2:
                return int(value.shape[-1])
        if self.cost_map is not None:
            return int(self.cost_map.shape[0])
        for value in (self.lb, self.ub, self.integrality):
            if value is not None and np.ndim(value) >= 1:
                return int(np.shape(value)[-1])
        if self.variable_names is not None:
            return len(self.variable_names)
        if self.c is not None:
            return int(np.shape(self.c)[-1])
        return None

    @property
    def num_constraints(self) -> int:
        """m, the inequality rows (0 without ``A``)."""
        return 0 if self.A is None else int(self.A.shape[-2])

    def values(self, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """A solution (n,) or a batch (B, n) by variable name: ``{name: y[..., j]}``."""
        if self.variable_names is None:
            raise ValueError("variable_names: this program has none (give them when making it)")
        if y.shape[-1] != len(self.variable_names):
            raise ValueError(
                f"y has {y.shape[-1]} values per solution but the program has "
                f"{len(self.variable_names)} variables"
            )
        return {name: y[..., j] for j, name in enumerate(self.variable_names)}
