"""The contract between ilplayer's core and its solver backends.

A backend subclasses :class:`Solver` and implements :meth:`Solver.solve`, which receives an
:class:`ILPBatch` -- many cost vectors sharing one ``(A, b)`` -- and returns a
:class:`SolveResult`. The core groups a user's batch by ``(A, b)`` so that a backend can build
its native model once per group and only rewrite the objective between instances.
"""

from __future__ import annotations

import hashlib
import warnings
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ilplayer.types import Capability, ILPBatch, LicenseStatus, SolveResult, SolverFailureWarning, Status

if TYPE_CHECKING:
    from ilplayer.problem import ProblemTensors

__all__ = ["PersistentModelSolver", "Solver"]


class Solver(ABC):
    """A MIP backend. Subclass it, set ``name`` and ``capabilities``, implement ``solve``.

    Instances are created by :func:`ilplayer.get_solver` with the user's options as keyword
    arguments. An instance may keep native models alive between calls (keyed by ``(A, b)``)
    and must release them in :meth:`close`. Importing the module that defines a subclass must
    not import the native solver library: do that inside methods.

    Example:
        >>> class Enumerate(Solver):
        ...     name = "enumerate"
        ...     def solve(self, batch: ILPBatch) -> SolveResult:
        ...         ...
    """

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[Capability]] = frozenset()

    def __init__(self, **options: Any) -> None:
        if options:
            raise TypeError(f"solver {self.name!r} takes no option(s) {sorted(options)}")

    @classmethod
    def is_available(cls) -> bool:
        """Whether the backend can be imported. Must not take a licence or import heavily."""
        return True

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


class PersistentModelSolver(Solver):
    """A :class:`Solver` that keeps one native model per ``(A, b, lb, ub)`` and only rewrites
    the objective between instances.

    Subclasses implement :meth:`build_model` and :meth:`solve_instance` (and
    :meth:`dispose_model` when the native model holds resources). The last ``cache_size``
    models are kept, so alternating between a few constraint sets does not rebuild them. An
    exception in one instance marks that instance ``Status.ERROR`` (one warning per call)
    and the others are still solved.

    Args:
        time_limit: seconds per instance, or None for no limit.
        params: native parameter overrides, applied after the backend's defaults.
    """

    cache_size: ClassVar[int] = 8

    def __init__(self, time_limit: float | None = None, params: dict[str, Any] | None = None) -> None:
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
            raise ValueError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict of native parameters, got {type(params).__name__}")
        self.time_limit = None if time_limit is None else float(time_limit)
        self.params = dict(params or {})
        self._models: OrderedDict[bytes, Any] = OrderedDict()

    @staticmethod
    def model_key(batch: ILPBatch) -> bytes:
        digest = hashlib.blake2b(digest_size=16)
        for array in (batch.A, batch.b, batch.lb, batch.ub):
            digest.update(array.tobytes())
        return digest.digest()

    @abstractmethod
    def build_model(self, batch: ILPBatch) -> Any:
        """Build the native model of ``A y <= b, lb <= y <= ub, y integer`` (no objective)."""

    @abstractmethod
    def solve_instance(self, model: Any, c: np.ndarray) -> tuple[Status, np.ndarray | None]:
        """Set the objective ``c`` on ``model``, solve, return ``(status, y or None)``."""

    def dispose_model(self, model: Any) -> None:
        """Free a native model evicted from the cache."""

    def model_for(self, batch: ILPBatch) -> Any:
        key = self.model_key(batch)
        if key in self._models:
            self._models.move_to_end(key)
            return self._models[key]
        model = self.build_model(batch)
        self._models[key] = model
        while len(self._models) > self.cache_size:
            self.dispose_model(self._models.popitem(last=False)[1])
        return model

    def solve(self, batch: ILPBatch) -> SolveResult:
        model = self.model_for(batch)
        k, n = batch.c.shape
        y = np.zeros((k, n))
        status = np.full(k, int(Status.ERROR), dtype=np.int8)
        failures: list[tuple[int, str]] = []
        for i in range(k):
            try:
                code, point = self.solve_instance(model, batch.c[i])
            except Exception as exc:  # one instance must not sink the others
                failures.append((i, f"{type(exc).__name__}: {exc}"))
                continue
            if code in (Status.OPTIMAL, Status.TIME_LIMIT) and point is None:
                failures.append((i, f"the backend reported {Status(code).name} without loading "
                                    "a solution"))
                continue
            status[i] = code
            if point is not None:
                y[i] = point
        if failures:
            warnings.warn(f"solver {self.name!r} failed on {len(failures)} of {k} instances "
                          f"(marked Status.ERROR); first: {failures[0][1]}",
                          SolverFailureWarning, stacklevel=2)
        objective = np.where(np.isin(status, (Status.OPTIMAL, Status.TIME_LIMIT)),
                             np.einsum("kn,kn->k", batch.c, y), np.nan)
        return SolveResult(y=y, status=status, objective=objective)

    def close(self) -> None:
        while self._models:
            self.dispose_model(self._models.popitem(last=False)[1])
