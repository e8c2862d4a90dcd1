"""The contract between ilplayer's core and its solver backends, and nothing else.

A backend subclasses `Solver` and implements `Solver.solve`, which receives an
[`ILPBatch`][ilplayer.solvers.contract.ILPBatch] -- many cost vectors sharing one ``(A, b)`` -- and returns a
[`SolveResult`][ilplayer.solvers.contract.SolveResult]. The core groups a user's batch by ``(A,
b)`` so that a backend can build
its native model once per group and only rewrite the objective between instances.
`ilplayer.solvers.persistent.PersistentModelSolver` is a `Solver` that keeps those models
and declares the hooks a MIP backend fills in. Plugin authors import both from
[`ilplayer.plugin_api`][ilplayer.plugin_api].
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from ilplayer.core.records import Capability, ILPBatch, LicenseStatus, SolveResult

if TYPE_CHECKING:
    from ilplayer.core.batch import ProblemTensors

__all__ = ["Solver"]


class Solver(ABC):
    """A MIP backend. Subclass it, set ``name`` and ``capabilities``, implement ``solve``.

    Instances are created by [`ilplayer.get_solver`][ilplayer.get_solver] with the user's options as keyword
    arguments. An instance may keep native models alive between calls (keyed by ``(A, b)``)
    and must release them in [`close`][ilplayer.solvers.contract.Solver.close]. Importing the
    module that defines a subclass must
    not import the native solver library: do that inside methods.

    Example:
        >>> class Enumerate(Solver):
        ...     name = "enumerate"
        ...     def solve(self, batch: ILPBatch) -> SolveResult:
        ...         ...
    """

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    _arguments: tuple[tuple[Any, ...], dict[str, Any]]

    def __new__(cls, *args: Any, **kwargs: Any) -> Solver:
        solver = super().__new__(cls)
        solver._arguments = (args, kwargs)  # what a copy is built from (__reduce__)
        return solver

    @property
    def arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The positional and keyword arguments this solver was built with: what a copy, or a
        worker's own instance, is built from."""
        return self._arguments

    def __reduce__(self) -> tuple[Any, ...]:
        """A copy (``copy``, ``pickle``) is a new solver built with the same arguments: native
        models, environments and warm-start pools are not state."""
        args, kwargs = self._arguments
        return (_rebuild_solver, (type(self), args, kwargs))

    def __init__(self, **options: Any) -> None:
        if options:
            raise TypeError(f"solver {self.name!r} takes no option(s) {sorted(options)}")

    @classmethod
    def is_available(cls) -> bool:
        """Whether the backend can be imported. Must not take a licence or import heavily."""
        return True

    @classmethod
    def family_members(cls) -> tuple[str, ...]:
        """For a family of backends (``SolverSpec.suffix_option``): the members usable on this
        machine, the names that follow the colon. Listed by `available_solvers`; other members
        may still be named."""
        return ()

    @classmethod
    def license_status(cls) -> LicenseStatus:
        """The licence state; may import the native library and query it."""
        return LicenseStatus.NOT_REQUIRED

    def check(self, batch: ProblemTensors) -> None:
        """Refuse a problem this backend cannot solve, before anything is solved.

        Raise ``ValueError`` naming the argument at fault. The default accepts everything.
        """

    @abstractmethod
    def solve(self, batch: ILPBatch) -> SolveResult:
        """Solve every instance of ``batch``. Infeasible instances get a status, not an error."""

    def solve_tensors(self, problem: ProblemTensors) -> tuple[Any, Any, Any]:
        """Device-native solve for backends with ``Capability.DEVICE_TENSORS``.

        Returns ``(y, status, objective)`` tensors on ``problem.device``.
        """
        raise NotImplementedError(f"solver {self.name!r} has no device-native solve")

    def close(self) -> None:
        """Release native models and environments. Safe to call twice."""

    def __enter__(self) -> Solver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rebuild_solver(cls: type[Solver], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Solver:
    return cls(*args, **kwargs)
