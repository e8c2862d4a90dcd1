"""Hook specifications for ilplayer plugins (pluggy project name ``ilplayer``).

A plugin is a module listed under the ``ilplayer`` entry-point group that implements these
hooks with [`hookimpl`][ilplayer.solvers.hookspecs.hookimpl]::

    # pyproject.toml of the plugin distribution
    [project.entry-points.ilplayer]
    mysolver = "ilplayer_mysolver.plugin"

    # ilplayer_mysolver/plugin.py
    from ilplayer import SolverSpec, hookimpl

    @hookimpl
    def ilplayer_register_solvers(register):
        register(SolverSpec(name="mysolver", target="ilplayer_mysolver.solver:MySolver",
                            requires=("mysolverlib",), distribution="ilplayer-mysolver"))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ilplayer.solvers.spec import SolverSpec

__all__ = ["hookimpl", "hookspec", "ilplayer_register_solvers"]

hookspec = pluggy.HookspecMarker("ilplayer")
hookimpl = pluggy.HookimplMarker("ilplayer")
"""The decorator of a plugin's hook: ``@hookimpl def ilplayer_register_solvers(register): ...``."""


@hookspec
def ilplayer_register_solvers(register: Callable[[SolverSpec], None]) -> None:
    """Register solver backends by calling ``register(SolverSpec(...))`` once per backend.

    Must not import the native solver library: a spec names its class as ``"module:Class"``
    and the class is imported on first use.
    """
