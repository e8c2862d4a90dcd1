"""ilplayer: integer linear programs as PyTorch layers, with CombOptNet gradients.

Example:
    >>> import torch, ilplayer
    >>> oracle = ilplayer.Oracle(ilplayer.Program(lb=0, ub=1), solver="bruteforce")
    >>> layer = ilplayer.ILPLayer(oracle, ilplayer.gradients.CombOptNet(tau=0.5))
    >>> A, b = ilplayer.StaticConstraints(num_constraints=2, num_variables=8, seed=0)()
    >>> y = layer(torch.randn(4, 8), A, b)

The face holds what a user of the layer needs; the rest lives in its room: plugin authors import
``ilplayer.plugin_api``, the warnings are in ``ilplayer.errors``, learning constraints from data
is ``ilplayer.learning.learn``.
"""

from __future__ import annotations

from ilplayer import gradients, losses, metrics
from ilplayer.core.records import Status
from ilplayer.cvxpy_layer import CvxpyILPLayer, from_cvxpy
from ilplayer.errors import Error, ParameterError, SolverNotInstalledError, UnknownSolverError
from ilplayer.layer import ILPLayer, solve
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.oracle import Oracle
from ilplayer.parallel.backend_cache import release_solvers
from ilplayer.program import Program
from ilplayer.solvers.registry import available_solvers, get_solver, list_solvers, register_solver

__version__ = "0.1.0"

__all__ = [
    "CvxpyILPLayer",
    "Error",
    "ILPLayer",
    "Oracle",
    "ParameterError",
    "Program",
    "SolverNotInstalledError",
    "StaticConstraints",
    "Status",
    "UnknownSolverError",
    "available_solvers",
    "from_cvxpy",
    "get_solver",
    "gradients",
    "list_solvers",
    "losses",
    "metrics",
    "register_solver",
    "release_solvers",
    "solve",
]
