"""Registers the ``pyomo:<name>`` family. Imports nothing heavy: pyomo is imported on first use."""

from ilplayer.plugin_api import SolverSpec, hookimpl


@hookimpl
def ilplayer_register_solvers(register):
    register(
        SolverSpec(
            name="pyomo",
            target="ilplayer_pyomo.solver:PyomoSolver",
            requires=("pyomo",),
            distribution="ilplayer-pyomo",
            install_hint="pip install -e plugins/ilplayer-pyomo (from the repository)",
            description="any Pyomo MIP solver by name: pyomo:appsi_highs, pyomo:gurobi_direct, ...",
            suffix_option="solver_name",
        )
    )
