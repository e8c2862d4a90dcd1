"""The speed engine behind `PersistentModelSolver`: what answers an
instance before (or instead of) the backend's MIP, and the helpers backends use for it.

- [`WarmStartPool`][ilplayer.solvers.shortcuts.WarmStartPool]: the feasible points found so far per
constraint set, the warm starts.
- `solve_in_blocks` and `multipliers_in_blocks` (`ilplayer.solvers.block_lps`): many LP relaxations as one
  block-diagonal LP.
- `RelaxationGate` and `SearchGate`: try the LP, and the search around a start,
  only while they answer often enough and (for the search) save more than they cost.
- [`answer_batch`][ilplayer.solvers.shortcuts.answer_batch]: one batch through all of it, the
backend's hooks doing the solving.

The hooks a backend implements are declared in `ilplayer.solvers.persistent`; this module knows the
backend only through [`ModelHooks`][ilplayer.solvers.shortcuts.ModelHooks].
"""

from __future__ import annotations

import contextlib
import time
import warnings
from typing import Any, Protocol, Union, cast

import numpy as np

from ilplayer.core.records import ILPBatch, SolveResult, Status, has_solution
from ilplayer.errors import SolverFailureWarning
from ilplayer.solvers.gates import RelaxationGate, SearchGate
from ilplayer.solvers.reduced_costs import search_many
from ilplayer.solvers.rounding import rounded_points

__all__ = [
    "SEARCH_CHUNK",
    "SEARCH_POINTS",
    "SEARCH_TOL",
    "ModelHooks",
    "Multipliers",
    "WarmStartPool",
    "answer_batch",
    "search_chunk",
    "search_rows",
]


# The search around a pooled start accepts rows met within SEARCH_TOL (the core's answer check
# at |b| = 0, the band HiGHS and CP-SAT solve in) and gives up beyond SEARCH_POINTS candidates
# (fewer answered too little, more made failed searches cost more than they saved;
# benchmarks/search_around.py, docs/records/defaults.md, "The core").
SEARCH_TOL = 1e-6
SEARCH_POINTS = 8192
# Instances searched together (their LPs asked for in one call, their candidates grown in one
# search_many): faster per instance than chunks of 16 on knapsacks and set cover.
SEARCH_CHUNK = 64

# What relaxation_multipliers offers per instance: (lam, mu), or (lam, mu, x) with the LP
# optimum x, whose roundings can start the search when no pooled point is close.
Multipliers = Union[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


class WarmStartPool:
    """The last ``capacity`` distinct feasible points found for one constraint set.

    Every point satisfies the constraint set it was found for, so the best of them under new
    costs is a valid incumbent: when training revisits an instance with slightly changed costs,
    that is usually the instance's previous solution, and a MIP start from it roughly halves
    HiGHS' time (docs/records/solvers.md, "Warm starts").
    """

    def __init__(self, num_variables: int, capacity: int) -> None:
        self.points = np.zeros((capacity, num_variables))
        self.size = 0
        self._next = 0
        self._slots: dict[bytes, int] = {}  # point bytes -> row: an O(1) duplicate test

    def add(self, point: np.ndarray) -> None:
        point = np.asarray(point, dtype=np.float64) + 0.0  # + 0.0: -0.0 and 0.0 are one point
        key = point.tobytes()
        if key in self._slots:
            return
        if self.size == len(self.points):  # full: the oldest point makes room
            self._slots.pop(self.points[self._next].tobytes(), None)
        self.points[self._next] = point
        self._slots[key] = self._next
        self._next = (self._next + 1) % len(self.points)
        self.size = min(self.size + 1, len(self.points))

    def best_for(self, c: np.ndarray) -> np.ndarray | None:
        """The pooled point of least cost ``c·y``, or None when the pool is empty."""
        if not self.size:
            return None
        return self.points[int(np.argmin(self.points[: self.size] @ c))]

    def best_for_rows(self, c: np.ndarray) -> list[np.ndarray | None]:
        """[`best_for`][ilplayer.solvers.shortcuts.WarmStartPool.best_for] for each row of ``c`` (k,
        n), in one product."""
        if not self.size:
            return [None] * len(c)
        return list(self.points[np.argmin(self.points[: self.size] @ c.T, axis=0)])


class ModelHooks(Protocol):
    """What `answer_batch` asks of a backend (a `PersistentModelSolver`)."""

    @property
    def name(self) -> str: ...

    def solve_relaxations(self, model: Any, c: np.ndarray) -> list[np.ndarray | None]: ...

    def relaxation_multipliers(self, model: Any, c: np.ndarray) -> list[Multipliers | None]: ...

    def solve_instance(
        self, model: Any, c: np.ndarray, start: np.ndarray | None = None
    ) -> tuple[Status, np.ndarray | None]: ...


def _relaxed_answers(
    hooks: ModelHooks, model: Any, batch: ILPBatch, gate: RelaxationGate
) -> dict[int, np.ndarray | None]:
    """The LP relaxations' integral answers of the instances ``gate`` lets try."""
    relaxed: dict[int, np.ndarray | None] = {}
    tried = [i for i in range(len(batch.c)) if gate.should_try()]
    if tried:
        try:
            answers = hooks.solve_relaxations(model, batch.c[tried])
        except Exception:  # the relaxation only saves time: the MIP still answers
            answers = [None] * len(tried)
        for i, point in zip(tried, answers):
            gate.record(point is not None)
            relaxed[i] = point
    return relaxed


def _answer(
    hooks: ModelHooks,
    model: Any,
    c: np.ndarray,
    answer: tuple[np.ndarray | None, tuple[np.ndarray | None, np.ndarray | None] | None],
    pool: WarmStartPool | None,
) -> tuple[Status, np.ndarray | None, float | None]:
    """One instance's ``(status, point, MIP seconds)``: the relaxation's or the search's answer
    where ``answer = (relaxed, searched)`` holds one (no MIP: None seconds), else the backend's
    MIP from the search's start or the best pooled one."""
    point, start = answer[0], None
    if answer[1] is not None:
        point, start = answer[1]
    elif point is None and pool is not None:
        start = pool.best_for(c)
    if point is not None:
        return Status.OPTIMAL, point, None
    began = time.perf_counter()
    code, point = hooks.solve_instance(model, c, start)
    return code, point, time.perf_counter() - began


def answer_batch(
    hooks: ModelHooks,
    model: Any,
    batch: ILPBatch,
    pool: WarmStartPool | None,
    gate: RelaxationGate | None,
    searches: SearchGate | None,
) -> SolveResult:
    """Every instance of ``batch`` on ``model``: its LP relaxation first when ``gate`` lets it
    try, then the search around a start (``searches``, a chunk at a time), then the backend's
    MIP from the best pooled start. An exception in one instance marks it ``Status.ERROR``
    (one warning per call); the others are still solved."""
    k, n = batch.c.shape
    y = np.zeros((k, n))
    status = np.full(k, int(Status.ERROR), dtype=np.int8)
    failures: list[tuple[int, str]] = []
    relaxed = {} if gate is None else _relaxed_answers(hooks, model, batch, gate)
    if k and len(relaxed) == k and all(point is not None for point in relaxed.values()):
        return _all_relaxed(hooks, model, batch, relaxed, pool, searches)
    searched: dict[int, tuple[np.ndarray | None, np.ndarray | None]] = {}  # i -> (answer, start)
    for i in range(k):
        if searches is not None and pool is not None and i % SEARCH_CHUNK == 0:
            # A chunk at a time, so that the gate follows the chunk before: a closed gate
            # reopens within the batch that starts to pay.
            rows = [j for j in range(i, min(i + SEARCH_CHUNK, k)) if relaxed.get(j) is None]
            try:
                searched = search_chunk(hooks, model, batch, rows, pool, searches)
            except Exception:  # the search only saves time: the MIP still answers
                searched = {}
        try:
            answer = (relaxed.get(i), searched.get(i))
            code, point, seconds = _answer(hooks, model, batch.c[i], answer, pool)
            if searches is not None and seconds is not None:
                searches.record_mip(seconds, after_try=i in searched)
        except Exception as exc:  # one instance must not sink the others
            failures.append((i, f"{type(exc).__name__}: {exc}"))
            continue
        if code in (Status.OPTIMAL, Status.TIME_LIMIT) and point is None:
            failures.append(
                (i, f"the backend reported {Status(code).name} without loading a solution")
            )
            continue
        status[i] = code
        if point is not None:
            y[i] = point
            if pool is not None:  # a relaxation's answer is rounded already
                pool.add(
                    point
                    if relaxed.get(i) is not None and i not in searched
                    else batch.round_integers(point)
                )
    if failures:
        warnings.warn(
            f"solver {hooks.name!r} failed on {len(failures)} of {k} instances "
            f"(marked Status.ERROR); first: {failures[0][1]}",
            SolverFailureWarning,
            stacklevel=3,
        )
    objective = np.where(
        has_solution(status),
        np.einsum("kn,kn->k", batch.c, y),
        np.nan,
    )
    return SolveResult(y=y, status=status, objective=objective)


def _all_relaxed(
    hooks: ModelHooks,
    model: Any,
    batch: ILPBatch,
    relaxed: dict[int, np.ndarray | None],
    pool: WarmStartPool | None,
    searches: SearchGate | None,
) -> SolveResult:
    """`answer_batch` when the relaxations answered every instance (a network's rows, every
    batch): the answers at once, the search gate told of each chunk as the loop would."""
    k = len(batch.c)
    if searches is not None and pool is not None:
        for _ in range(0, k, SEARCH_CHUNK):
            with contextlib.suppress(Exception):  # as in the loop: the search only saves time
                search_chunk(hooks, model, batch, [], pool, searches)
    y = np.array([relaxed[i] for i in range(k)], dtype=np.float64)
    if pool is not None:  # a relaxation's answer is rounded already
        for point in y:
            pool.add(point)
    status = np.full(k, int(Status.OPTIMAL), dtype=np.int8)
    return SolveResult(y=y, status=status, objective=np.einsum("kn,kn->k", batch.c, y))


def search_chunk(
    hooks: ModelHooks,
    model: Any,
    batch: ILPBatch,
    rows: list[int],
    pool: WarmStartPool,
    gate: SearchGate,
) -> dict[int, tuple[np.ndarray | None, np.ndarray | None]]:
    """``i -> (answer or None, start or None)`` for the instances in ``rows`` the gate lets
    try the search: LP multipliers for all of them in one call, then the cheaper of the
    pooled point and the rounded LP optimum as each one's start, then one search for all.

    A closed gate samples a few rows; when their answers open it again (the first revisits
    after an epoch of fresh costs), the rest of the chunk is searched too, instead of
    waiting for the next chunk (with one chunk per batch, the next epoch). Now and then a
    closed gate's chunk is a probe, searched and timed as an open gate's
    ([`SearchGate.begin_chunk`][ilplayer.solvers.gates.SearchGate.begin_chunk])."""
    mode = gate.begin_chunk()
    wanted = list(rows) if mode == "probe" else [i for i in rows if gate.should_try()]
    found = search_rows(hooks, model, batch, wanted, pool, gate, timed=mode != "closed")
    if mode == "closed" and gate.is_open():
        sampled = set(wanted)
        rest = [i for i in rows if i not in sampled and gate.should_try()]
        found.update(search_rows(hooks, model, batch, rest, pool, gate))
    return found


def _improve_with_roundings(
    batch: ILPBatch, c: np.ndarray, tried: list[tuple[int, Any]], starts: list[Any]
) -> None:
    """Replace a row's start in ``starts`` by its LP optimum's rounding where that is feasible
    and cheaper (the rows whose multipliers came with the LP's point)."""
    with_x = [row for row, (_, f) in enumerate(tried) if len(f) == 3]
    if not with_x:  # the LP optima: try their roundings
        return
    optima = [cast("tuple[np.ndarray, np.ndarray, np.ndarray]", tried[row][1])[2] for row in with_x]
    roundings = rounded_points(
        np.array(optima),
        c[with_x],
        batch.A,
        batch.b,
        batch.lb,
        batch.ub,
        batch.A_eq,
        batch.b_eq,
        tol=SEARCH_TOL,
    )
    for row, rounded in zip(with_x, roundings):
        if rounded is not None and (starts[row] is None or c[row] @ rounded < c[row] @ starts[row]):
            starts[row] = rounded


def search_rows(
    hooks: ModelHooks,
    model: Any,
    batch: ILPBatch,
    wanted: list[int],
    pool: WarmStartPool,
    gate: SearchGate,
    timed: bool = True,
) -> dict[int, tuple[np.ndarray | None, np.ndarray | None]]:
    """[`search_chunk`][ilplayer.solvers.shortcuts.search_chunk] for the rows ``wanted``, every one
    tried; the gate records each,
    with its share of the time when ``timed``. A closed gate's samples are not timed: a few
    rows carry the LP call's fixed cost alone (several times a try's cost in a full chunk),
    and timing them kept the gate closed for whole batches."""
    if not wanted:
        return {}
    began = time.perf_counter()
    found = hooks.relaxation_multipliers(model, batch.c[wanted])
    tried = [(i, f) for i, f in zip(wanted, found) if f is not None]
    if not tried:
        return {}
    c = batch.c[[i for i, _ in tried]]
    starts = pool.best_for_rows(c)
    _improve_with_roundings(batch, c, tried, starts)
    ready = [row for row, start in enumerate(starts) if start is not None]
    answers: list[np.ndarray | None] = [None] * len(tried)
    if ready:
        points = search_many(
            c[ready],
            np.array([starts[row] for row in ready]),
            batch.A,
            batch.b,
            batch.lb,
            batch.ub,
            np.array([tried[row][1][0] for row in ready]),
            batch.A_eq,
            batch.b_eq,
            np.array([tried[row][1][1] for row in ready]).reshape(len(ready), -1),
            tol=SEARCH_TOL,
            max_points=SEARCH_POINTS,
        )
        for row, point in zip(ready, points):
            answers[row] = point
    # the LPs, roundings and search, per row
    seconds = (time.perf_counter() - began) / len(wanted) if timed else None
    for answer in answers:
        gate.record(answer is not None, seconds)
    return {i: (answer, start) for (i, _), answer, start in zip(tried, answers, starts)}
