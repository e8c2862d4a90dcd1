"""A real plugin module (hook implementations only) used by the registry tests."""

from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="fixture-enum",
            target="host_solvers:EnumerationSolver",
            distribution="ilplayer-fixture",
            description="test fixture",
        )
    )
    register(
        SolverSpec(
            name="fixture-missing",
            target="host_solvers:EnumerationSolver",
            requires=("surely_not_installed_lib",),
            install_hint="pip install surely-not-installed-lib",
        )
    )
