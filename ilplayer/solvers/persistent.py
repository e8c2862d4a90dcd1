"""`PersistentModelSolver`: a `Solver` that keeps one native model per constraint set and only
rewrites the objective between instances, with the hooks a MIP backend fills in (the LP
relaxation, its multipliers, one instance's MIP). What answers an instance before the MIP
(warm starts, the relaxation, the search around a start) is `ilplayer.solvers.shortcuts`."""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections import OrderedDict
from typing import Any, ClassVar

import numpy as np

from ilplayer.core.matrices import is_sparse
from ilplayer.core.records import ILPBatch, SolveResult, Status
from ilplayer.solvers.contract import Solver
from ilplayer.solvers.gates import RelaxationGate, SearchGate
from ilplayer.solvers.knapsack import KnapsackSolver
from ilplayer.solvers.one_row import OneRowRelaxations, by_two_lists, solved_in_closed_form
from ilplayer.solvers.shortcuts import ModelHooks, Multipliers, WarmStartPool, answer_batch

__all__ = ["PersistentModelSolver"]


class PersistentModelSolver(Solver):
    """A `Solver` that keeps one native model per ``(A, b, lb, ub, integrality)`` and only rewrites
    the objective between instances.

    Subclasses implement `build_model` and `solve_instance` (and
    `dispose_model` when the native model holds resources). The last ``cache_size``
    models are kept, so alternating between a few constraint sets does not rebuild them. An
    exception in one instance marks that instance ``Status.ERROR`` (one warning per call)
    and the others are still solved.

    Warm starts: a subclass whose solver takes a start point sets ``accepts_start = True`` and
    uses the ``start`` that `solve_instance` is given. With ``warm_start`` on, each instance
    then starts from the best point (under its costs) of the
    [`WarmStartPool`][ilplayer.solvers.shortcuts.WarmStartPool] of its constraint set: the previous solutions
    of that ``(A, b)``.

    Args:
        time_limit: seconds per instance, or None for no limit.
        params: native parameter overrides, applied after the backend's defaults.
        warm_start: start each solve from the best known point of its constraint set (None:
            the backend's default, ``warm_start_default``).
    """

    cache_size: ClassVar[int] = 8
    pool_size: ClassVar[int] = 256
    warm_start_default: ClassVar[bool] = True
    accepts_start: ClassVar[bool] = False  # True: solve_instance uses its ``start``
    # The search around a start runs while at least this share of recent searches answered
    # and it saves more time than it costs (SearchGate).
    search_min_rate: ClassVar[float] = 0.1
    # The shortcuts the backend offers (`answer_batch` tries the relaxation and the search only
    # where they are on). A subclass may declare them; where it does not, each is on when the
    # class fills in its hooks (solve_relaxation(s); relaxation_multipliers).
    solves_relaxations: ClassVar[bool] = False
    gives_multipliers: ClassVar[bool] = False

    def __init__(
        self,
        time_limit: float | None = None,
        params: dict[str, Any] | None = None,
        warm_start: bool | None = None,
    ) -> None:
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
            raise ValueError(
                f"time_limit must be a positive number of seconds or None, got {time_limit!r}"
            )
        if params is not None and not isinstance(params, dict):
            raise TypeError(
                f"params must be a dict of native parameters, got {type(params).__name__}"
            )
        if params and not all(isinstance(key, str) for key in params):
            raise TypeError(
                f"params: native parameter names are strings, got "
                f"{next(key for key in params if not isinstance(key, str))!r}"
            )
        if warm_start is not None and not isinstance(warm_start, bool):
            raise TypeError(f"warm_start must be True, False or None, got {warm_start!r}")
        self.time_limit = None if time_limit is None else float(time_limit)
        self.params = dict(params or {})
        self.warm_start = self.warm_start_default if warm_start is None else warm_start
        self._models: OrderedDict[bytes, Any] = OrderedDict()
        self._warm_starts: dict[bytes, WarmStartPool] = {}
        self._gates: dict[bytes, RelaxationGate] = {}
        self._search_gates: dict[bytes, SearchGate] = {}

    @staticmethod
    def model_key(batch: ILPBatch) -> bytes:
        digest = hashlib.blake2b(digest_size=16)
        arrays: tuple[Any, ...] = (
            batch.A,
            batch.b,
            batch.lb,
            batch.ub,
            batch.A_eq,
            batch.b_eq,
            batch.integrality,
        )
        for array in arrays:
            if is_sparse(array):
                digest.update(np.asarray(array.shape).tobytes())
                for part in (array.indptr, array.indices, array.data):
                    digest.update(part.tobytes())
            else:
                digest.update(array.tobytes())
        return digest.digest()

    @abstractmethod
    def build_model(self, batch: ILPBatch) -> Any:
        """Build the native model of ``A y <= b, A_eq y = b_eq, lb <= y <= ub``, ``y_j`` integer
        where ``batch.integrality[j]`` (no objective)."""

    @abstractmethod
    def solve_instance(
        self, model: Any, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]:
        """Set the objective ``c`` on ``model``, solve, return ``(status, y or None)``.

        ``start``: a point feasible for ``model`` to start from (a MIP start, a hint, a
        cutoff), given only to a backend with ``accepts_start = True`` and warm starts on;
        None: solve cold."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "solves_relaxations" not in own:
            cls.solves_relaxations = cls.solves_relaxations or bool(
                {"solve_relaxation", "solve_relaxations"} & own.keys()
            )
        if "gives_multipliers" not in own:
            cls.gives_multipliers = cls.gives_multipliers or "relaxation_multipliers" in own
        if "set_start" in vars(cls):
            raise TypeError(
                f"{cls.__name__}.set_start: the start now arrives as solve_instance(model, c, "
                "start=None); set accepts_start = True and use it there (docs/writing-a-plugin.md)"
            )

    def solve_relaxation(self, model: Any, c: np.ndarray) -> np.ndarray | None:
        """The instance's answer from its LP relaxation, or None to solve the MIP.

        Called before `solve_instance`. An optimal vertex of the relaxation that is
        integral is optimal for the MIP too, so a backend whose LP re-solve (only the costs
        changed: a warm basis) costs far less than its MIP root may return it here. Network
        flows, assignments and other totally unimodular rows then never reach the MIP. The
        default solves no relaxation.
        """
        return None

    def solve_relaxations(self, model: Any, c: np.ndarray) -> list[np.ndarray | None]:
        """`solve_relaxation` for each row of ``c`` (``(k, n)``): one answer or None each.

        A backend whose every native call has a fixed cost well above a small LP's re-solve may
        override it to solve several relaxations in one call (HiGHS solves them as one
        block-diagonal LP). The default calls `solve_relaxation` per row.
        """
        return [self.solve_relaxation(model, row) for row in c]

    def relaxation_multipliers(self, model: Any, c: np.ndarray) -> list[Multipliers | None]:
        """Row multipliers of the LP relaxation for each row of ``c`` (``(k, n)``): ``(lam,
        mu)`` each, ``lam >= 0`` for the inequality rows and ``mu`` for the equality rows, such
        that ``c + A^T lam + A_eq^T mu`` are the reduced costs, optionally followed by the LP
        optimum ``x``; or None for a row.

        With them and a start -- the best pooled point, or the best feasible rounding of ``x``
        (`ilplayer.solvers.rounding.rounded_points`) when that is cheaper -- an instance is
        first answered by `ilplayer.solvers.reduced_costs.search_many` (reduced-cost fixing,
        then enumeration of the few points left; ``SEARCH_CHUNK`` instances per call) and
        reaches the MIP only when too many points are left. Any multipliers keep the answer
        exact; the LP's make the fewest points. A
        backend whose MIP has a large fixed cost against its LP re-solve may override it
        (HiGHS and Gurobi solve the LPs in blocks, SCIP and CP-SAT one by one, all through
        `multipliers_in_blocks`); the default offers none.
        """
        return [None] * len(c)

    def dispose_model(self, model: Any) -> None:
        """Free a native model evicted from the cache."""

    def model_for(self, batch: ILPBatch, key: bytes | None = None) -> Any:
        """The native model of ``batch``'s constraint set (``key``: its `model_key`, when
        the caller has it), built on first use and kept among the last ``cache_size``."""
        key = self.model_key(batch) if key is None else key
        if key in self._models:
            self._models.move_to_end(key)
            return self._models[key]
        model = self.build_model(batch)
        self._models[key] = model
        while len(self._models) > self.cache_size:
            evicted, old = self._models.popitem(last=False)
            self._warm_starts.pop(evicted, None)
            self._gates.pop(evicted, None)
            self._search_gates.pop(evicted, None)
            self.dispose_model(old)
        return model

    def uses_starts(self) -> bool:
        """Whether `solve_instance` is given starts: warm starts on, and the backend takes them."""
        return self.warm_start and self.accepts_start

    def solve(self, batch: ILPBatch) -> SolveResult:
        one_row = solved_in_closed_form(batch)
        if one_row and by_two_lists(batch):  # a small box: exact by two lists, no model at all
            return self._two_lists().solve(batch)
        key = self.model_key(batch)
        model = self.model_for(batch, key)
        hooks: ModelHooks = self
        relaxes, multiplies = self.solves_relaxations, self.gives_multipliers
        if one_row:  # the relaxation in closed form, without the backend's LP
            hooks = OneRowRelaxations(self, batch, self._two_lists())
            relaxes, multiplies = True, True
        pool = gate = searches = None
        if self.uses_starts():
            pool = self._warm_starts.setdefault(
                key, WarmStartPool(batch.num_variables, self.pool_size)
            )
        if relaxes:
            gate = self._gates.setdefault(key, RelaxationGate())
        # The search around a start enumerates integer points of a finite box: exact for a
        # pure-integer program only, so a MILP goes from the LP to the MIP. It reads dense rows:
        # a sparse program (a large network) skips it too.
        if pool is not None and batch.pure_integer and not batch.sparse and multiplies:
            searches = self._search_gates.setdefault(key, SearchGate(self.search_min_rate))
        return answer_batch(hooks, model, batch, pool, gate, searches)

    def _two_lists(self) -> KnapsackSolver:
        """The knapsack backend that answers small one-row boxes (its point tables kept)."""
        kept = self.__dict__.get("_one_row_lists")
        if kept is None:
            kept = self.__dict__["_one_row_lists"] = KnapsackSolver()
        return kept

    def close(self) -> None:
        self.__dict__.pop("_one_row_lists", None)
        self._warm_starts.clear()
        self._gates.clear()
        self._search_gates.clear()
        while self._models:
            self.dispose_model(self._models.popitem(last=False)[1])
