"""The solver registry: pluggy plugins from the ``ilplayer`` entry-point group, plus in-process
registrations.

Entry points are loaded once, lazily, on the first registry query. A plugin that fails to load
becomes a warning, never a crash. Set ``ILPLAYER_DISABLE_PLUGIN_AUTOLOAD=1`` to skip entry
points (the built-in backends stay registered).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import os
import threading
import warnings
from types import ModuleType
from typing import Any

import pluggy

from ilplayer.errors import PluginLoadWarning, UnknownSolverError
from ilplayer.solvers import builtin, hookspecs
from ilplayer.solvers.contract import Solver
from ilplayer.solvers.spec import SolverSpec

__all__ = [
    "AUTOLOAD_ENV",
    "ENTRY_POINT_GROUP",
    "available_solvers",
    "get_solver",
    "get_solver_spec",
    "import_solver_library",
    "list_solvers",
    "plugin_manager",
    "preferred_backend",
    "register_solver",
    "registered_specs",
    "resolve_solver_name",
    "unregister_solver",
]

ENTRY_POINT_GROUP = "ilplayer"
AUTOLOAD_ENV = "ILPLAYER_DISABLE_PLUGIN_AUTOLOAD"

# First-party backends that live in their own distributions: named in errors so that a user
# who asks for one that is not installed learns which extra provides it.
FIRST_PARTY_BACKENDS = {
    "highs": "ilplayer-highs",
    "gurobi": "ilplayer-gurobi",
    "cpsat": "ilplayer-cpsat",
    "scip": "ilplayer-scip",
    "pyomo": "ilplayer-pyomo",
}


class _Registry:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._loaded = False
        self._specs: dict[str, SolverSpec] = {}
        self.manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.manager.add_hookspecs(hookspecs)

    def _add(self, spec: SolverSpec, source: str, replace: bool = False) -> None:
        if not isinstance(spec, SolverSpec):
            raise TypeError(
                f"register() takes a SolverSpec, got {type(spec).__name__} from {source}"
            )
        if spec.name in self._specs and not replace:
            warnings.warn(
                f"solver {spec.name!r} from {source} is already registered; keeping the "
                "first registration",
                PluginLoadWarning,
                stacklevel=3,
            )
            return
        self._specs[spec.name] = spec

    def _collect(self, plugin: object, source: str) -> None:
        self.manager.register(plugin, name=source)
        try:
            self.manager.check_pending()  # catches misspelt ilplayer_* hooks
            others = [p for p in self.manager.get_plugins() if p is not plugin]
            hook = self.manager.subset_hook_caller(
                "ilplayer_register_solvers", remove_plugins=others
            )
            hook(register=lambda spec: self._add(spec, source))
        except Exception:
            self.manager.unregister(plugin)
            raise

    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._collect(builtin, "ilplayer.solvers.builtin")
            if os.environ.get(AUTOLOAD_ENV, "").strip().lower() not in ("1", "true", "yes"):
                for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
                    source = f"entry point {ep.name!r} ({ep.value})"
                    try:
                        self._collect(ep.load(), source)
                    except Exception as exc:  # a broken plugin must not break ilplayer
                        warnings.warn(
                            f"could not load ilplayer plugin {source}: {type(exc).__name__}: {exc}",
                            PluginLoadWarning,
                            stacklevel=2,
                        )
            self._loaded = True

    def specs(self) -> dict[str, SolverSpec]:
        self.ensure_loaded()
        return dict(self._specs)

    def register(self, spec: SolverSpec, replace: bool) -> None:
        self.ensure_loaded()
        with self._lock:
            if spec.name in self._specs and not replace:
                raise ValueError(
                    f"a solver named {spec.name!r} is already registered; "
                    "pass replace=True to override it"
                )
            self._add(spec, "register_solver()", replace=True)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._specs.pop(name, None)


_registry = _Registry()


def plugin_manager() -> pluggy.PluginManager:
    """The pluggy manager (plugins loaded). For introspection and tests."""
    _registry.ensure_loaded()
    return _registry.manager


# Names users try for a backend that ilplayer calls otherwise.
ALIASES = {
    "ortools": "cpsat",
    "or-tools": "cpsat",
    "cp-sat": "cpsat",
    "cp_sat": "cpsat",
    "pyscipopt": "scip",
    "highspy": "highs",
    "gurobipy": "gurobi",
    "grb": "gurobi",
}
# Solvers reached through the Pyomo bridge only (their names in pyomo.environ.SolverFactory).
PYOMO_ONLY = (
    "cbc",
    "glpk",
    "cplex",
    "cplex_direct",
    "cplex_persistent",
    "appsi_highs",
    "appsi_gurobi",
    "gurobi_persistent",
    "gurobi_direct",
    "xpress",
    "mosek",
    "copt",
)


def _unknown(name: str, specs: dict[str, SolverSpec]) -> UnknownSolverError:
    registered = sorted(specs)
    msg = f"unknown solver {name!r}. Registered solvers: {', '.join(registered) or 'none'}."
    base = name.split(":", 1)[0]
    if base in FIRST_PARTY_BACKENDS:
        msg += (
            f" {base!r} is provided by the distribution {FIRST_PARTY_BACKENDS[base]}: "
            f"pip install -e plugins/{FIRST_PARTY_BACKENDS[base]} from the repository."
        )
    elif base.lower() in ALIASES:
        msg += f" Did you mean {ALIASES[base.lower()]!r}?"
    elif base.lower() in PYOMO_ONLY:
        msg += (
            f" {base!r} is reached through the Pyomo bridge: solver='pyomo:{base.lower()}' "
            "(pip install -e plugins/ilplayer-pyomo from the repository)."
        )
    else:
        close = difflib.get_close_matches(name, registered + sorted(FIRST_PARTY_BACKENDS), n=1)
        if close:
            msg += f" Did you mean {close[0]!r}?"
    return UnknownSolverError(msg)


def resolve_solver_name(name: str) -> tuple[SolverSpec, dict[str, Any]]:
    """The spec for ``name`` and the options its suffix implies (``"pyomo:cbc"``)."""
    if not isinstance(name, str):
        raise TypeError(
            f"solver must be a name (str) or a Solver instance, got {type(name).__name__}"
        )
    specs = _registry.specs()
    if name in specs:
        return specs[name], {}
    base, colon, suffix = name.partition(":")
    by_lower = {key.lower(): spec for key, spec in specs.items()}
    spec = specs.get(base) or by_lower.get(base.lower())  # "HiGHS" is "highs"
    if spec is not None and not colon and not spec.suffix_option:
        return spec, {}
    if spec is not None and spec.suffix_option:
        if not suffix:
            raise UnknownSolverError(
                f"solver {name!r} names a family of backends: add the member after a colon, e.g. "
                f"'{spec.name}:appsi_highs' or '{spec.name}:gurobi_persistent' (the names of "
                "pyomo.environ.SolverFactory)"
                if spec.name == "pyomo"
                else f"solver {name!r} names a family of backends: add the member after a colon, "
                f"'{spec.name}:NAME'"
            )
        return spec, {spec.suffix_option: suffix}
    raise _unknown(name, specs)


def get_solver_spec(name: str) -> SolverSpec:
    """The registered [`SolverSpec`][ilplayer.solvers.registry.SolverSpec] for ``name``."""
    return resolve_solver_name(name)[0]


def get_solver(name: str, **options: Any) -> Solver:
    """Build the backend ``name`` with ``options``.

    Raises:
        UnknownSolverError: no such backend (lists the registered ones, suggests the closest).
        SolverNotInstalledError: the backend's library is missing (says what to install).

    Example:
        >>> solver = ilplayer.get_solver("bruteforce", max_points=2**16)  # doctest: +SKIP
    """
    spec, implied = resolve_solver_name(name)
    return spec.create(**implied, **options)


MIP_BACKEND_RANKING = ("gurobi", "cpsat", "highs", "scip")
"""The exact MIP backends, fastest first on the paper's shapes (docs/records/solvers.md has the figures).
The one ranking of backends in ilplayer: every default goes through `preferred_backend`."""

BRUTEFORCE_LIMIT = 2**16
"""Boxes of at most this many points are enumerated (``bruteforce``) rather than branched on."""


def preferred_backend(box_points: int | None = None) -> str:
    """The backend to use when the caller names none.

    ``bruteforce`` when ``box_points`` (the number of integer points of the box) is at most
    `BRUTEFORCE_LIMIT`, else the first installed backend of `MIP_BACKEND_RANKING`.
    Without ``box_points`` a MIP backend is required.

    Raises:
        RuntimeError: no MIP backend is installed and the box is not small enough to enumerate
            (or its size was not given).
    """
    if box_points is not None and box_points <= BRUTEFORCE_LIMIT:
        return "bruteforce"
    available = available_solvers()
    for name in MIP_BACKEND_RANKING:
        if name in available:
            return name
    raise RuntimeError(
        "no MIP backend is installed (ilplayer ranks "
        f"{', '.join(MIP_BACKEND_RANKING)}): pip install -e plugins/ilplayer-highs "
        "from the repository (the README's test command installs every backend)"
    )


def registered_specs() -> dict[str, SolverSpec]:
    """Every registered backend's spec by name, installed or not."""
    return _registry.specs()


def list_solvers() -> list[str]:
    """Names of every registered backend, installed or not."""
    return sorted(_registry.specs())


def available_solvers() -> list[str]:
    """Names of the registered backends whose libraries are installed and usable; a family
    (``pyomo``) as its usable members (``pyomo:appsi_highs``, ...)."""
    names = []
    for name, spec in sorted(_registry.specs().items()):
        if not spec.is_available():
            continue
        if spec.suffix_option:
            names += [f"{name}:{member}" for member in spec.load().family_members()]
        else:
            names.append(name)
    return names


def register_solver(
    name: str, solver_class: type[Solver], *, replace: bool = False, description: str = ""
) -> SolverSpec:
    """Register an in-process backend under ``name``.

    Example:
        >>> ilplayer.register_solver("mine", MySolver)   # doctest: +SKIP
        >>> ilplayer.solve(c, A, b, lb=0, ub=1, solver="mine")   # doctest: +SKIP
    """
    if not (isinstance(solver_class, type) and issubclass(solver_class, Solver)):
        raise TypeError(
            f"solver_class must be a subclass of ilplayer.plugin_api.Solver, got {solver_class!r}"
        )
    spec = SolverSpec(
        name=name,
        target=solver_class,
        description=description or (solver_class.__doc__ or "").strip().split("\n")[0],
    )
    _registry.register(spec, replace=replace)
    return spec


def unregister_solver(name: str) -> None:
    """Remove a backend registered in this process (no error when absent)."""
    _registry.unregister(name)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def import_solver_library(
    module: str, *, clashes_with: tuple[str, ...] = (), fix: str = ""
) -> ModuleType:
    """Import a native solver library for a backend.

    Two wheels that bundle different builds of one shared library cannot be loaded in one
    process: whichever loads second fails with "undefined symbol". That ImportError becomes
    one that names the distributions, their installed versions and ``fix``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if "undefined symbol" not in str(exc) or not clashes_with:
            raise
        names = ", ".join(f"{dist} {_version(dist)}" for dist in (module, *clashes_with))
        raise ImportError(
            f"{module} could not be loaded next to {', '.join(clashes_with)} ({names}): "
            f"they bundle incompatible builds of one native library and only one can "
            f"be loaded per process. {fix}".rstrip()
        ) from exc
