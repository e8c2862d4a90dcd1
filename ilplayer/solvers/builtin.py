"""Plugin module registering the backends built into ``ilplayer``."""

from __future__ import annotations

from collections.abc import Callable

from ilplayer.solvers.hookspecs import hookimpl
from ilplayer.solvers.spec import SolverSpec


@hookimpl
def ilplayer_register_solvers(register: Callable[[SolverSpec], None]) -> None:
    register(
        SolverSpec(
            name="bruteforce",
            target="ilplayer.solvers.bruteforce:BruteForceSolver",
            distribution="ilplayer",
            description="exact enumeration of the box in torch, on the tensors' device (small boxes)",
        )
    )
    register(
        SolverSpec(
            name="knapsack",
            target="ilplayer.solvers.knapsack:KnapsackSolver",
            distribution="ilplayer",
            description="exact meet-in-the-middle for programs of one inequality row (knapsacks), in torch",
        )
    )
