"""Registers the ``gurobi`` backend. Imports nothing heavy: gurobipy is imported on first use."""

from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="gurobi",
            target="ilplayer_gurobi.solver:GurobiSolver",
            requires=("gurobipy", "scipy"),  # gurobipy's matrix API needs scipy, undeclared
            distribution="ilplayer-gurobi",
            install_hint="pip install -e plugins/ilplayer-gurobi (from the repository)",
            description="Gurobi MIP solver (commercial; the pip wheel has a size-limited licence)",
        )
    )
