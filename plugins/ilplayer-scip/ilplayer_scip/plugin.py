"""Registers the ``scip`` backend. Imports nothing heavy: pyscipopt is imported on first use."""

from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="scip",
            target="ilplayer_scip.solver:ScipSolver",
            requires=("pyscipopt",),
            distribution="ilplayer-scip",
            install_hint="pip install -e plugins/ilplayer-scip (from the repository)",
            description="SCIP MIP solver (open source)",
        )
    )
