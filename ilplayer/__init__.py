"""ilplayer: integer linear programs as PyTorch layers, with CombOptNet gradients.

Example:
    >>> import torch, ilplayer
    >>> layer = ilplayer.ILPLayer(lb=0, ub=1, solver="bruteforce", tau=0.5)
    >>> A, b = ilplayer.StaticConstraints(num_constraints=2, num_variables=8, seed=0)()
    >>> y = layer(torch.randn(4, 8), A, b)
"""

from __future__ import annotations

from ilplayer.constraints import StaticConstraints, sample_random_constraints
from ilplayer.hookspecs import hookimpl
from ilplayer.layer import ILPLayer, solve
from ilplayer.plugins import (
    PluginLoadWarning,
    SolverNotInstalledError,
    SolverSpec,
    UnknownSolverError,
    available_solvers,
    get_solver,
    list_solvers,
    register_solver,
    unregister_solver,
)
from ilplayer.solver import (
    Capability,
    ILPBatch,
    LicenseStatus,
    PersistentModelSolver,
    SolveResult,
    Solver,
    SolverFailureWarning,
    Status,
)

__version__ = "0.1.0"

__all__ = [
    "Capability",
    "ILPBatch",
    "ILPLayer",
    "LicenseStatus",
    "PersistentModelSolver",
    "PluginLoadWarning",
    "SolveResult",
    "Solver",
    "SolverFailureWarning",
    "SolverNotInstalledError",
    "SolverSpec",
    "StaticConstraints",
    "Status",
    "UnknownSolverError",
    "available_solvers",
    "get_solver",
    "hookimpl",
    "list_solvers",
    "register_solver",
    "sample_random_constraints",
    "solve",
    "unregister_solver",
]
