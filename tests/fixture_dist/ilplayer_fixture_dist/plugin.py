from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="fixture-dist",
            target="ilplayer_fixture_dist.solver:GreedyBoxSolver",
            distribution="ilplayer-fixture-dist",
            description="test fixture",
        )
    )
