"""How to build one backend without importing it: [`SolverSpec`][ilplayer.solvers.spec.SolverSpec],
what a plugin registers.

It sits between the solver contract (below) and the registry (above), so that a plugin module
-- the built-in one included -- can describe its backends without importing the registry.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from typing import Any

from ilplayer.errors import SolverNotInstalledError
from ilplayer.solvers.contract import Solver

__all__ = ["SolverSpec"]


@dataclass(frozen=True)
class SolverSpec:
    """How to build one backend, without importing it. Picklable, so that a worker process can
    rebuild the solver from it.

    Args:
        name: the name users pass as ``solver=...``.
        target: ``"module:Class"`` imported on first use, or the [`Solver`][ilplayer.solvers.spec.Solver] subclass.
        requires: import names of the native libraries (checked with ``find_spec`` only).
        distribution: the distribution that provides the backend (for messages and listings).
        install_hint: the command that installs what is missing.
        description: one line for ``ilplayer solvers``.
        suffix_option: for a family of backends: ``"name:X"`` builds this backend with the
            keyword option ``suffix_option=X`` (e.g. ``"pyomo:appsi_highs"``).

    Example:
        >>> SolverSpec(name="highs", target="ilplayer_highs.solver:HighsSolver",
        ...            requires=("highspy",), distribution="ilplayer-highs")  # doctest: +ELLIPSIS
        SolverSpec(name='highs', ...)
    """

    name: str
    target: str | type[Solver]
    requires: tuple[str, ...] = ()
    distribution: str | None = None
    install_hint: str | None = None
    description: str = ""
    suffix_option: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(ch.isspace() for ch in self.name):
            raise ValueError(
                f"solver name must be a non-empty string without spaces, got {self.name!r}"
            )
        if isinstance(self.target, str) and ":" not in self.target:
            raise ValueError(
                f"target must look like 'package.module:ClassName', got {self.target!r}"
            )
        object.__setattr__(self, "requires", tuple(self.requires))

    def missing_requirements(self) -> list[str]:
        """Import names of ``requires`` that cannot be found (no import is performed)."""
        return [mod for mod in self.requires if importlib.util.find_spec(mod) is None]

    def load(self) -> type[Solver]:
        """Import and return the solver class."""
        missing = self.missing_requirements()
        if missing:
            hint = self.install_hint or f"pip install {' '.join(missing)}"
            raise SolverNotInstalledError(
                f"solver {self.name!r} needs the Python package(s) {', '.join(missing)}, "
                f"which are not installed: {hint}"
            )
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attr = self.target.partition(":")
        cls = getattr(importlib.import_module(module_name), attr)
        if not (isinstance(cls, type) and issubclass(cls, Solver)):
            raise TypeError(f"{self.target} is not a subclass of ilplayer.plugin_api.Solver")
        return cls

    def is_available(self) -> bool:
        """True when the native library is installed and the class says it is usable."""
        if self.missing_requirements():
            return False
        try:
            return bool(self.load().is_available())
        except Exception:  # a broken backend is unavailable, not fatal
            return False

    def takes_option(self, name: str) -> bool:
        """Whether [`create`][ilplayer.solvers.spec.SolverSpec.create] takes the option ``name``."""
        accepted = _option_names(self.load())
        return accepted is None or name in accepted or name == self.suffix_option

    def create(self, **options: Any) -> Solver:
        """Build a solver instance with ``options`` (passed to the class constructor).

        Raises:
            TypeError: an option the backend does not take (the message lists those it does).
        """
        cls = self.load()
        accepted = _option_names(cls)
        if accepted is not None:
            unknown = sorted(set(options) - accepted - {self.suffix_option})
            if unknown:
                hint = ""
                close = difflib.get_close_matches(unknown[0], sorted(accepted), n=1)
                if close:
                    hint = f" Did you mean {close[0]!r}?"
                raise TypeError(
                    f"solver_options: backend {self.name!r} takes no option(s) "
                    f"{unknown}; it takes {sorted(accepted) or 'none'}.{hint}"
                )
        return cls(**options)


def _option_names(cls: type[Solver]) -> set[str] | None:
    """The keyword options a backend's constructor takes, or None when it takes ``**kwargs``."""
    try:
        parameters = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {
        p.name
        for p in parameters
        if p.name != "self"
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
