"""Registers the ``highs`` backend. Imports nothing heavy: highspy is imported on first use."""

from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="highs",
            target="ilplayer_highs.solver:HighsSolver",
            requires=("highspy",),
            distribution="ilplayer-highs",
            install_hint="pip install -e plugins/ilplayer-highs (from the repository)",
            description="HiGHS MIP solver (open source)",
        )
    )
