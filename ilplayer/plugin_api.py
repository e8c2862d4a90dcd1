"""Everything a solver plugin needs, in one place: ``from ilplayer.plugin_api import ...``.

A backend subclasses `Solver` (or, for a MIP library, `PersistentModelSolver`
and its hooks), declares its `Capability` set, and registers a `SolverSpec` from
a ``@hookimpl`` (docs/writing-a-plugin.md). The rest are the records that cross the contract,
the helpers that solve many LP relaxations as one block-diagonal LP, the check of native
parameter values, and the import guard for libraries that clash in one process.
"""

from __future__ import annotations

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.matrices import dense, is_sparse, row_entries, stack_rows
from ilplayer.core.records import Capability, ILPBatch, LicenseStatus, SolveResult, Status
from ilplayer.errors import ParameterError, SolverNotInstalledError
from ilplayer.solvers.block_lps import (
    block_diagonal,
    integral_answer,
    multipliers_in_blocks,
    solve_in_blocks,
)
from ilplayer.solvers.contract import Solver
from ilplayer.solvers.escalation import Switch, capped_nodes, in_turns, infeasible_or_unbounded
from ilplayer.solvers.hookspecs import hookimpl
from ilplayer.solvers.native_params import native_value
from ilplayer.solvers.persistent import PersistentModelSolver
from ilplayer.solvers.registry import import_solver_library
from ilplayer.solvers.shortcuts import Multipliers
from ilplayer.solvers.spec import SolverSpec

__all__ = [
    "Capability",
    "ILPBatch",
    "LicenseStatus",
    "Multipliers",
    "ParameterError",
    "PersistentModelSolver",
    "ProblemTensors",
    "SolveResult",
    "Solver",
    "SolverNotInstalledError",
    "SolverSpec",
    "Status",
    "Switch",
    "block_diagonal",
    "capped_nodes",
    "dense",
    "hookimpl",
    "import_solver_library",
    "in_turns",
    "infeasible_or_unbounded",
    "integral_answer",
    "is_sparse",
    "multipliers_in_blocks",
    "native_value",
    "row_entries",
    "solve_in_blocks",
    "stack_rows",
]
