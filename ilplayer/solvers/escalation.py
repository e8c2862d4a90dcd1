"""What a MIP backend does past its speed settings: the per-instance switch to the solver's own
settings (`Switch`, `capped_nodes`), two forms of a model taken in turns (`in_turns`), and telling
an infeasible program from an unbounded one (`infeasible_or_unbounded`)."""

from __future__ import annotations

import contextlib
import inspect
import time
from typing import Any

import numpy as np

from ilplayer.core.records import Status
from ilplayer.solvers.shortcuts import ModelHooks

__all__ = [
    "CHECK_FACTOR",
    "CHECK_MIN_SECONDS",
    "CHECK_NODES",
    "LOADED_SHARE",
    "Switch",
    "capped_nodes",
    "check_seconds",
    "in_turns",
    "infeasible_or_unbounded",
]


# Branch-and-bound nodes for the zero-cost check that tells an unbounded instance from an
# infeasible one (`infeasible_or_unbounded`): the fuzz families' checks end at the root.
CHECK_NODES = 1
# ... and its seconds: CHECK_FACTOR times the solve that called for it, at least
# CHECK_MIN_SECONDS. The root node alone of a solver's own settings (presolve, cuts,
# heuristics) took over ten times what the solvers' defaults take to say "infeasible or
# unbounded" on lattice programs (docs/records/solvers.md, "A time limit for the check").
# A backend whose every solve costs more (SCIP) sets its own floor, ``check_min_seconds``: many
# times its fixed cost per solve, so that a busy machine does not cut a small model's check.
CHECK_FACTOR = 4.0
CHECK_MIN_SECONDS = 0.005
# A timed check cut short while the process ran for less than this share of its wall time was
# cut by the machine's load: it runs again on the node limit alone.
LOADED_SHARE = 0.5


def check_seconds(spent: float, floor: float = CHECK_MIN_SECONDS) -> float:
    """The time limit of the feasibility check after a solve of ``spent`` seconds."""
    return max(CHECK_FACTOR * spent, floor)


class Switch:
    """Per model on a backend's speed settings: whether its next instance starts on them or on
    the solver's own. An instance that runs past the node budget on the speed settings sends
    the next ``streak`` instances straight to the solver's own settings, ``streak`` doubling
    with each such instance in a row (up to ``max_streak``) and reset by one that ends within
    the budget. An isolated hard instance (a dense box's) costs one instance on the solver's
    own settings; a model where every instance is hard (near-tie knapsacks) pays the budget
    ever more rarely. ``max_streak=0``: every instance starts on the speed settings.
    Deterministic: the same instances meet the same settings."""

    def __init__(self, max_streak: int = 64) -> None:
        self.max_streak = max_streak
        self.own_left = 0
        self.streak = 0

    def start_tuned(self) -> bool:
        """Whether the next instance starts on the speed settings (counts it)."""
        if self.own_left:
            self.own_left -= 1
            return False
        return True

    def record(self, escalated: bool) -> None:
        """After an instance that started on the speed settings: whether it ran past the budget."""
        self.streak = min(2 * self.streak or 1, self.max_streak) if escalated else 0
        self.own_left = self.streak


@contextlib.contextmanager
def capped_nodes(
    model: Any,
    forms: list[Any],
    read: Any,
    write: Any,
    nodes: int,
    seconds: tuple[Any, Any, float] | None = None,
) -> Any:
    """A backend's ``node_limit``: each native model of ``forms`` (read and write its node
    limit; a negative one is none) at most ``nodes`` inside, and with ``seconds = (read, write,
    limit)`` at most ``limit`` seconds (its own time limit kept where shorter), ``model`` off its
    speed-setting switch (``model.tuned``), all restored after."""
    before = [read(form) for form in forms]
    times = [] if seconds is None else [seconds[0](form) for form in forms]
    tuned, model.tuned = model.tuned, False
    for form, value in zip(forms, before):
        write(form, nodes if value < 0 else min(value, nodes))
    if seconds is not None:
        for form, value in zip(forms, times):
            seconds[1](form, min(value, seconds[2]))
    try:
        yield
    finally:
        for form, value in zip(forms, before):
            write(form, value)
        if seconds is not None:
            for form, value in zip(forms, times):
                seconds[1](form, value)
        model.tuned = tuned


def in_turns(tries: list[Any], time_limit: float | None, first_slice: float = 0.05) -> Any:
    """Each of ``tries`` in turn, round and round, each turn's time limit twice the last turn's
    (from ``first_slice`` seconds), until one answers or ``time_limit`` is spent; its result, or
    the last one's at the limit. A try takes its time limit in seconds and returns
    ``(answered, result)``.

    For a model whose search is erratic in its form (banded and exact rows: each was seen to run
    into any time limit where the other answered at once), so that neither form can hang the
    instance while the other would answer."""
    budget = float("inf") if time_limit is None else time_limit
    spent, slice_, turn = 0.0, first_slice, 0
    while True:
        limit = max(min(slice_, budget - spent), 1e-3)
        began = time.perf_counter()
        answered, result = tries[turn % len(tries)](limit)
        spent += time.perf_counter() - began
        turn += 1
        if answered or spent >= budget - 1e-3:
            return result
        slice_ *= 2


def infeasible_or_unbounded(
    hooks: ModelHooks, model: Any, n: int, spent: float | None = None
) -> Status:
    """The status of an instance its solver called unbounded, or "infeasible or unbounded":
    ``UNBOUNDED`` when the same model with zero costs has a point, ``INFEASIBLE`` when it has
    none, ``INFEASIBLE_OR_UNBOUNDED`` when that check was not settled within ``CHECK_NODES``
    branch-and-bound nodes (a backend with a ``node_limit(model, nodes)`` context) or the time
    limit. ``spent``: the seconds of the solve that could not decide (a MIP solve that said
    "infeasible or unbounded", or the LP relaxation alone); then the check also ends within
    `check_seconds` of it (when the backend's ``node_limit`` takes ``seconds``), at least the
    backend's ``check_min_seconds`` where it has one; a check the clock cut while the machine's
    load kept the process off the CPU runs again on the node limit alone. Without it (the MIP
    solver said "unbounded": a check cut short would leave open what it decided) only the node
    limit and the time limit bound the check. (A MIP solver's "unbounded" may speak of its
    relaxation's ray alone; with a feasible point and rational data the MILP is unbounded too.)
    Finding that point can be as hard as any integer program, where the solver's own answer,
    "infeasible or unbounded", took milliseconds: unchecked, it ran into every time limit
    (`milp_cases.lattice_case`). The verdict is kept per model: the instances after the first
    get it without a check."""
    known = getattr(model, VERDICT, None)
    if known is not None:  # the rows' feasibility does not change
        return known
    verdict = _feasibility_check(hooks, model, n, spent)
    with contextlib.suppress(AttributeError, TypeError):  # a model that holds no attributes
        setattr(model, VERDICT, verdict)
    return verdict


def _relaxation_has_a_point(hooks: ModelHooks, model: Any, n: int) -> bool:
    """Whether the zero-cost LP relaxation's optimum is integral (an answer of the backend's
    ``solve_relaxations``): a point of the program, found for the price of one LP, where the
    check's MIP spent its whole time floor on the root of a program this small."""
    if not getattr(hooks, "solves_relaxations", False):
        return False
    try:
        return hooks.solve_relaxations(model, np.zeros((1, n)))[0] is not None
    except Exception:  # the relaxation only saves time: the MIP still decides
        return False


# The attribute of a native model that holds its feasibility check's verdict: one check answers
# every instance of it (the zero-cost question does not depend on the costs).
VERDICT = "ilplayer_feasibility"


def _feasibility_check(hooks: ModelHooks, model: Any, n: int, spent: float | None) -> Status:
    if _relaxation_has_a_point(hooks, model, n):
        return Status.UNBOUNDED
    limit = getattr(hooks, "node_limit", None)
    seconds = None  # the check's time limit, where the backend's node_limit takes one
    if limit is not None and spent is not None and "seconds" in inspect.signature(limit).parameters:
        seconds = check_seconds(spent, getattr(hooks, "check_min_seconds", CHECK_MIN_SECONDS))
    if limit is None:
        context: Any = contextlib.nullcontext()
    elif seconds is None:
        context = limit(model, CHECK_NODES)
    else:
        context = limit(model, CHECK_NODES, seconds=seconds)
    wall, cpu = time.perf_counter(), time.process_time()
    with context:
        code, _ = hooks.solve_instance(model, np.zeros(n))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if (
        limit is not None
        and seconds is not None
        and code == Status.TIME_LIMIT_NO_SOLUTION
        and wall >= 0.9 * seconds
        and cpu < LOADED_SHARE * wall
    ):
        # The clock ran out while this process had the CPU for less than that share of the
        # time: the machine's load, not the check's work, cut it. Again on the node limit
        # alone, so that a busy machine does not change the status.
        with limit(model, CHECK_NODES):
            code, _ = hooks.solve_instance(model, np.zeros(n))
    if code in (Status.OPTIMAL, Status.TIME_LIMIT):  # a point: feasible
        return Status.UNBOUNDED
    if code == Status.INFEASIBLE:
        return Status.INFEASIBLE
    if code == Status.TIME_LIMIT_NO_SOLUTION:
        return Status.INFEASIBLE_OR_UNBOUNDED
    raise RuntimeError(
        f"the feasibility check of an unbounded instance ended with {Status(code).name}"
    )
