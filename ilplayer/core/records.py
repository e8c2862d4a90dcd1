"""The records every layer of ilplayer shares: instance statuses, backend capabilities and
licence states, and the batch and result that cross the solver contract.

This module imports only `ilplayer.errors` and `ilplayer.core.matrices`: everything else
may import it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from ilplayer.core.matrices import frozen_csr, is_sparse, stack_rows

VERIFY_TOL = 1e-6  # integrality and constraint tolerance when checking a backend's answer
# With continuous variables a row is met within the solvers' own feasibility tolerance of
# their LP, relative to the row's activity: checked at MILP_VERIFY_TOL (1 + |b| + |A||y|).
MILP_VERIFY_TOL = 1e-5

__all__ = [
    "Capability",
    "ILPBatch",
    "LicenseStatus",
    "SolveResult",
    "Status",
    "TaskFailure",
    "has_solution",
]


class Status(enum.IntEnum):
    """Outcome of one instance. Stored per row as an ``int8`` tensor; compare with the members.

    Example:
        >>> y, status = ilplayer.solve(c, A, b, lb=0, ub=1)      # doctest: +SKIP
        >>> (status == Status.INFEASIBLE).any()                  # doctest: +SKIP
    """

    OPTIMAL = 0
    """Proven optimal (within the backend's MIP gap, 0 by default)."""
    INFEASIBLE = 1
    """No integer point of the box satisfies ``A y <= b``; ``y`` is a placeholder."""
    TIME_LIMIT = 2
    """The time limit stopped the search; ``y`` is the best feasible point found."""
    TIME_LIMIT_NO_SOLUTION = 3
    """The time limit stopped the search before any feasible point was found."""
    ERROR = 4
    """The backend failed on this instance; ``y`` is a placeholder and gets no gradient."""
    UNBOUNDED = 5
    """Feasible, with points of arbitrarily low cost (possible only with an infinite bound);
    ``y`` is a placeholder."""
    POOLED = 6
    """Answered from a pool of known decisions (``solve_ratio`` < 1): the pooled point of least
    cost, feasible but not proven optimal; no solver was called."""
    INFEASIBLE_OR_UNBOUNDED = 7
    """No optimum exists (the solver proved it), and whether the instance is infeasible or
    unbounded was not settled within the check's node budget (possible only with an infinite
    bound: a lattice point on fractional equalities can be as hard to find as any integer
    program); ``y`` is a placeholder."""

    @property
    def has_solution(self) -> bool:
        """True when ``y`` is a feasible point of the instance (`has_solution` for many)."""
        return bool(has_solution(np.asarray(int(self))))

    @classmethod
    def names(cls, codes: Any) -> list[str]:
        """Lower-case names for a sequence or tensor of status codes."""
        values = codes.tolist() if hasattr(codes, "tolist") else list(codes)
        return [cls(int(v)).name.lower() for v in values]


def has_solution(status: Any) -> Any:
    """Elementwise over a tensor or array of status codes: whether ``y`` is a feasible point of
    its instance (``OPTIMAL``, ``TIME_LIMIT`` with its incumbent, or ``POOLED``). The one
    definition; ``Status.has_solution`` asks it for one code."""
    return (
        (status == int(Status.OPTIMAL))
        | (status == int(Status.TIME_LIMIT))
        | (status == int(Status.POOLED))
    )


class Capability(enum.Enum):
    """What a backend can do; declared as ``Solver.capabilities`` (a frozenset)."""

    INTEGER_COEFFICIENTS_ONLY = "integer-coefficients-only"
    """The native solver accepts integer coefficients only (it must document its scaling)."""
    ONE_ROW_ONLY = "one-row-only"
    """Solves programs of at most one inequality row with non-zero coefficients and no
    equalities (a knapsack); its ``check`` refuses others, and the fuzz gives it only those."""
    RELEASES_GIL = "releases-gil"
    """``solve`` releases the GIL, so a thread pool gives real parallelism."""
    IN_PLACE_UPDATES = "in-place-updates"
    """The native model is kept and updated in place between instances."""
    TIME_LIMIT = "time-limit"
    """Honours a ``time_limit`` option and reports ``Status.TIME_LIMIT``."""
    DEVICE_TENSORS = "device-tensors"
    """Solves torch tensors on their own device (``solve_tensors``), per-instance ``A`` included."""
    EQUALITY_CONSTRAINTS = "equality-constraints"
    """Takes ``A_eq y = b_eq`` natively (``ILPBatch.A_eq``); without it the core passes each
    equality as two rows of ``A y <= b``."""
    CONTINUOUS_VARIABLES = "continuous-variables"
    """Solves mixed-integer programs: variables whose ``integrality`` is 0 are continuous.
    Without it the core refuses a problem with a continuous variable."""
    INFINITE_BOUNDS = "infinite-bounds"
    """Takes ``lb = -inf`` and ``ub = inf`` and reports ``Status.UNBOUNDED``. Without it the
    core refuses a problem whose box is not finite."""


class LicenseStatus(enum.Enum):
    """Licence state of a backend. Truthy when the backend can be used."""

    NOT_REQUIRED = "not required"
    FULL = "full"
    SIZE_LIMITED = "size-limited"
    MISSING = "missing"
    INVALID = "invalid"
    NOT_INSTALLED = "not installed"

    def __bool__(self) -> bool:
        return self in (LicenseStatus.NOT_REQUIRED, LicenseStatus.FULL, LicenseStatus.SIZE_LIMITED)


def _frozen_array(array: Any, dtype: Any) -> Any:
    if is_sparse(array):  # a sparse matrix stays sparse: CSR, float64, read-only
        return frozen_csr(array)
    out = np.array(array, dtype=dtype, order="C", copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class ILPBatch:
    """Instances ``min c_i·y s.t. A y <= b, A_eq y = b_eq, lb <= y <= ub, y_j integer where
    integrality_j`` sharing ``A``, ``b``, ``A_eq``, ``b_eq``, the bounds and the integrality.

    All arrays are read-only, C-contiguous NumPy arrays: ``c`` (k, n) float64, ``A`` (m, n)
    float64, ``b`` (m,) float64, ``lb`` and ``ub`` (n,) float64 (integers on the integer
    variables; ``-inf``/``inf`` allowed), ``A_eq`` (m_eq, n) and ``b_eq`` (m_eq,) float64 (0
    rows when there are no equalities; None is taken as 0 rows), ``integrality`` (n,) bool
    (True: integer; None is taken as all integer, the pure-integer program). ``A`` and ``A_eq``
    may instead be ``scipy.sparse`` CSR matrices (float64, read-only), kept sparse up to the
    backend: use `ilplayer.core.matrices` (``row_entries``, ``stack_rows``) to read either kind.

    Example:
        >>> batch = ILPBatch(c=np.ones((2, 3)), A=np.ones((1, 3)), b=np.array([1.0]),
        ...                  lb=np.zeros(3), ub=np.ones(3))
        >>> batch.num_instances, batch.num_constraints, batch.num_variables
        (2, 1, 3)
    """

    c: np.ndarray
    A: np.ndarray
    b: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    # None is taken as 0 rows: __post_init__ makes every field an array.
    A_eq: np.ndarray = None  # type: ignore[assignment]
    b_eq: np.ndarray = None  # type: ignore[assignment]
    integrality: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.A_eq is None or self.b_eq is None:
            object.__setattr__(self, "A_eq", np.zeros((0, np.shape(self.c)[1])))
            object.__setattr__(self, "b_eq", np.zeros(0))
        if self.integrality is None:
            object.__setattr__(self, "integrality", np.ones(np.shape(self.c)[1], dtype=bool))
        for name, dtype in (
            ("c", np.float64),
            ("A", np.float64),
            ("b", np.float64),
            ("lb", np.float64),
            ("ub", np.float64),
            ("A_eq", np.float64),
            ("b_eq", np.float64),
            ("integrality", bool),
        ):
            object.__setattr__(self, name, _frozen_array(getattr(self, name), dtype))
        k, n = self.c.shape
        if self.A_eq.shape[1:] != (n,) or self.b_eq.shape != self.A_eq.shape[:1]:
            raise ValueError(
                f"ILPBatch equality shapes do not agree: c {self.c.shape}, A_eq "
                f"{self.A_eq.shape}, b_eq {self.b_eq.shape}"
            )
        if self.A.shape[1:] != (n,) or self.b.shape != self.A.shape[:1]:
            raise ValueError(
                f"ILPBatch shapes do not agree: c {self.c.shape}, A {self.A.shape}, "
                f"b {self.b.shape}"
            )
        if self.lb.shape != (n,) or self.ub.shape != (n,) or self.integrality.shape != (n,):
            raise ValueError(f"ILPBatch bounds and integrality must have shape ({n},)")

    @property
    def num_instances(self) -> int:
        return int(self.c.shape[0])

    @property
    def num_variables(self) -> int:
        return int(self.c.shape[1])

    @property
    def num_constraints(self) -> int:
        return int(self.A.shape[0])

    @property
    def num_equalities(self) -> int:
        return int(self.A_eq.shape[0])

    @property
    def sparse(self) -> bool:
        """Whether ``A`` or ``A_eq`` is a scipy.sparse matrix."""
        return is_sparse(self.A) or is_sparse(self.A_eq)

    @property
    def pure_integer(self) -> bool:
        """Every variable integer, on a finite box: the paper's case, the one the search
        around a start and the enumerating backends are exact for."""
        return bool(
            self.integrality.all() and np.isfinite(self.lb).all() and np.isfinite(self.ub).all()
        )

    @property
    def unbounded_integers(self) -> bool:
        """Whether an integer variable has an infinite bound. Branch and bound need not end on
        such a program without the solver's presolve and cuts (rows whose lattice points lie
        nowhere, or far out), so the backends give their speed settings, tuned on small boxes,
        back to the solver's own defaults there (docs/records/solvers.md)."""
        return bool((self.integrality & ~(np.isfinite(self.lb) & np.isfinite(self.ub))).any())

    def finite_lower(self) -> np.ndarray:
        """Per variable, ``lb`` where it is finite, else the box's point closest to 0: the value
        a variable takes when any value of its box will do (a zero cost, no row)."""
        return np.where(np.isfinite(self.lb), self.lb, np.clip(0.0, self.lb, self.ub))

    def row_band(self, tol: float, equalities: bool = False) -> np.ndarray:
        """Per row of ``A`` (of ``A_eq`` with ``equalities``): the backends' tolerance on its
        right-hand side (``b + band``; equalities ``b_eq -/+ band``).

        ``tol`` on rows of integer variables only (float32 data whose points meet a row within
        ~1e-7 must stay feasible), 0 on rows with a continuous variable: a continuous variable
        meets an exact row anyway, and the band let it take slivers (a TSP flow ``y <= 19 x``
        of 1e-6 on an unused arc) that made Gurobi's 20-node TSP slower (docs/records/defaults.md,
        "Gurobi")."""
        matrix = self.A_eq if equalities else self.A
        continuous = ~self.integrality
        if not continuous.any() or not matrix.shape[0]:
            return np.full(matrix.shape[0], tol)
        touched = np.asarray(abs(matrix[:, continuous]).sum(axis=1)).ravel() > 0  # dense or sparse
        return np.where(touched, 0.0, tol)

    def round_integers(self, y: np.ndarray) -> np.ndarray:
        """``y`` with its integer variables rounded to the nearest integer (the rest kept)."""
        return np.where(self.integrality, np.rint(y), y) + 0.0  # + 0.0: no -0.0

    def checked_points(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The core's answer check of points ``y`` (k, n): ``(points, valid)``, the points with
        their integer variables rounded and continuous ones put back inside their bounds, and
        per point whether it is finite, integral where asked, in the box, and meets ``A y <= b``
        and ``A_eq y = b_eq`` within ``VERIFY_TOL`` (``MILP_VERIFY_TOL`` relative to the rows'
        activity where a variable is continuous). The one definition of a feasible answer."""
        finite = np.isfinite(y).all(axis=1)
        y = np.where(np.isfinite(y), y, 0.0)
        integer = self.integrality
        # Integer variables are rounded (an LP value of -1e-17 becomes 0.0), continuous ones put
        # back inside their bounds (a solver's 1e-9 outside).
        rounded = self.round_integers(y)
        valid = finite & (np.abs(y - rounded) <= VERIFY_TOL).all(axis=1)
        slack = lambda bound: VERIFY_TOL * (1 + np.abs(bound))
        valid &= ~((y < self.lb - slack(self.lb)) | (y > self.ub + slack(self.ub))).any(axis=1)
        rounded = np.where(integer, rounded, np.clip(rounded, self.lb, self.ub))
        times = lambda matrix: np.asarray(matrix @ rounded.T).T
        if integer.all():
            tol, scale, scale_eq = VERIFY_TOL, 1.0 + np.abs(self.b), 1.0 + np.abs(self.b_eq)
        else:
            size = np.abs(rounded)
            tol = MILP_VERIFY_TOL
            scale = 1.0 + np.abs(self.b) + np.asarray(abs(self.A) @ size.T).T
            scale_eq = 1.0 + np.abs(self.b_eq) + np.asarray(abs(self.A_eq) @ size.T).T
        valid &= ~(times(self.A) - self.b > tol * scale).any(axis=1)
        valid &= ~(np.abs(times(self.A_eq) - self.b_eq) > tol * scale_eq).any(axis=1)
        return rounded, valid

    def with_rows(
        self,
        c: np.ndarray | None = None,
        A: np.ndarray | None = None,
        b: np.ndarray | None = None,
        A_eq: np.ndarray | None = None,
        b_eq: np.ndarray | None = None,
    ) -> ILPBatch:
        """A copy with some arrays replaced (the others, the box included, kept)."""
        return ILPBatch(
            c=self.c if c is None else c,
            A=self.A if A is None else A,
            b=self.b if b is None else b,
            lb=self.lb,
            ub=self.ub,
            A_eq=self.A_eq if A_eq is None else A_eq,
            b_eq=self.b_eq if b_eq is None else b_eq,
            integrality=self.integrality,
        )

    def equalities_as_rows(self) -> ILPBatch:
        """Each equality as two rows of ``A y <= b`` (for backends without native equalities)."""
        if not self.num_equalities:
            return self
        return ILPBatch(
            c=self.c,
            A=stack_rows(self.A, self.A_eq, -self.A_eq),
            b=np.concatenate([self.b, self.b_eq, -self.b_eq]),
            lb=self.lb,
            ub=self.ub,
            integrality=self.integrality,
        )


@dataclass(frozen=True, eq=False)
class SolveResult:
    """A backend's answer for an [`ILPBatch`][ilplayer.core.records.ILPBatch], row by row.

    ``y`` (k, n) float64 holds the solution where ``status`` has a solution and anything
    finite elsewhere (the core replaces it with its placeholder); ``status`` (k,) holds
    [`Status`][ilplayer.core.records.Status] codes; ``objective`` (k,) is ``c_i·y_i`` or NaN.
    """

    y: np.ndarray
    status: np.ndarray
    objective: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "y", np.asarray(self.y, dtype=np.float64))
        object.__setattr__(self, "status", np.asarray(self.status, dtype=np.int8))
        object.__setattr__(self, "objective", np.asarray(self.objective, dtype=np.float64))
        if (
            self.y.ndim != 2
            or self.status.shape != self.y.shape[:1]
            or self.objective.shape != self.y.shape[:1]
        ):
            raise ValueError(
                f"SolveResult shapes do not agree: y {self.y.shape}, "
                f"status {self.status.shape}, objective {self.objective.shape}"
            )


@dataclass(frozen=True)
class TaskFailure:
    """A task whose backend raised or whose worker died (the message says which); its
    instances become ``Status.ERROR``."""

    message: str
