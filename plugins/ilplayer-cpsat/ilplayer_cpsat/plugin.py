"""Registers the ``cpsat`` backend. Imports nothing heavy: ortools is imported on first use."""

from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="cpsat",
            target="ilplayer_cpsat.solver:CpSatSolver",
            requires=("ortools",),
            distribution="ilplayer-cpsat",
            install_hint="pip install -e plugins/ilplayer-cpsat (from the repository)",
            description="OR-Tools CP-SAT (open source; float data scaled to integers, answers verified)",
        )
    )
