"""ilplayer: integer linear programs as PyTorch layers, with CombOptNet gradients.

Example:
    >>> import torch, ilplayer
    >>> oracle = ilplayer.Oracle(ilplayer.Program(lb=0, ub=1), solver="bruteforce")
    >>> layer = ilplayer.ILPLayer(oracle, ilplayer.gradients.CombOptNet(tau=0.5))
    >>> A, b = ilplayer.StaticConstraints(num_constraints=2, num_variables=8, seed=0)()
    >>> y = layer(torch.randn(4, 8), A, b)
"""

from __future__ import annotations

from ilplayer import losses, metrics
from ilplayer.core.records import (
    Capability,
    ILPBatch,
    LicenseStatus,
    SolveResult,
    Status,
)
from ilplayer.cvxpy_layer import CvxpyILPLayer, from_cvxpy
from ilplayer.errors import (
    DataWarning,
    Error,
    NoGradientWarning,
    NoSignalWarning,
    ParameterError,
    PluginLoadWarning,
    SolverFailureWarning,
    SolverNotInstalledError,
    UnknownSolverError,
    UnreadableModelError,
    Warning,
)
from ilplayer.layer import ILPLayer, solve
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.oracle import Oracle
from ilplayer.parallel.backend_cache import release_solvers
from ilplayer.parallel.malloc import keep_freed_memory
from ilplayer.program import Program
from ilplayer.solvers.contract import PersistentModelSolver, Solver
from ilplayer.solvers.hookspecs import hookimpl
from ilplayer.solvers.registry import (
    available_solvers,
    get_solver,
    list_solvers,
    preferred_backend,
    register_solver,
    unregister_solver,
)
from ilplayer.solvers.spec import SolverSpec
from ilplayer.testing.instances import sample_random_constraints

__version__ = "0.1.0"

__all__ = [
    "Capability",
    "CvxpyILPLayer",
    "DataWarning",
    "Error",
    "ILPBatch",
    "ILPLayer",
    "LicenseStatus",
    "NoGradientWarning",
    "NoSignalWarning",
    "Oracle",
    "ParameterError",
    "PersistentModelSolver",
    "PluginLoadWarning",
    "Program",
    "SolveResult",
    "Solver",
    "SolverFailureWarning",
    "SolverNotInstalledError",
    "SolverSpec",
    "StaticConstraints",
    "Status",
    "UnknownSolverError",
    "UnreadableModelError",
    "Warning",
    "available_solvers",
    "from_cvxpy",
    "get_solver",
    "hookimpl",
    "keep_freed_memory",
    "list_solvers",
    "losses",
    "metrics",
    "preferred_backend",
    "register_solver",
    "release_solvers",
    "sample_random_constraints",
    "solve",
    "unregister_solver",
]
