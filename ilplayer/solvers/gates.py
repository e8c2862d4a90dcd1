"""When a shortcut is worth trying before a constraint set's MIP: `RelaxationGate` (the LP
relaxation, judged by how often it answers) and `SearchGate` (the search around a pooled
start, judged by time as well). A `PersistentModelSolver` keeps one of each per constraint set.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MIN_CONTROLS", "PROBE_FIRST", "PROBE_MAX", "RelaxationGate", "SearchGate"]

MIN_CONTROLS = 4  # MIPs without a try timed before the search gate judges by time
# A closed search gate searches one whole chunk again, timed, after PROBE_FIRST closed chunks,
# then after twice as many each time it stays closed, up to PROBE_MAX (1/64 of the chunks).
PROBE_FIRST, PROBE_MAX = 8, 64


class RelaxationGate:
    """Whether to try a shortcut (the LP relaxation, or the search around a pooled start) before
    a constraint set's MIP.

    Always while it pays (a moving average of its answers, weight 1/8, at least ``min_rate``; and during
    the first 32 tries); else on every 16th instance only, and one answer there opens it again.
    The average forgets: a set whose relaxation turns integral later (learned constraints
    move), or a search that failed on a first epoch of fresh costs and succeeds on the
    revisits, is noticed within one sampled try. On a knapsack, where the relaxation is rarely
    integral, the wasted LP then costs ~1/16 of its price per instance instead of all of it.
    """

    def __init__(self, min_rate: float = 0.1) -> None:
        self.seen = self.tries = 0
        self.rate = 1.0
        self.min_rate = min_rate

    def should_try(self) -> bool:
        self.seen += 1
        return self.tries < 32 or self.rate >= self.min_rate or self.seen % 16 == 0

    def record(self, answered: bool) -> None:
        self.tries += 1
        self.rate += (answered - self.rate) / 8


class SearchGate(RelaxationGate):
    """The [`RelaxationGate`][ilplayer.solvers.gates.RelaxationGate] of the search around a start,
    judged by time as well.

    A try costs its share of the LP, the rounding and the enumeration, whether it answers or
    not; a failed try still needs the MIP. So the search runs while ``try + (1 - rate) *
    (a MIP after a failed try)`` is less than a MIP without a try (each the mean of its first
    8 samples, then a moving average of weight 1/8) and the rate is at least ``min_rate``.
    MIPs without a try are timed on every 16th instance until ``MIN_CONTROLS`` are, then on
    every 64th while the gate is open (every 16th while the saving is under half a MIP) and on
    every instance while it is closed: the MIPs after failed tries are the hard instances, and
    timing only those would flatter the search. Until ``MIN_CONTROLS`` MIPs and a try are
    timed, the rate alone decides. Tries are timed only while the gate is open (see
    [`search_rows`][ilplayer.solvers.shortcuts.search_rows]), so a closed gate re-measures them
    with a probe: after ``PROBE_FIRST``
    closed chunks one whole chunk is searched and timed (`begin_chunk`), after twice as
    many the next time it stays closed, up to ``PROBE_MAX``. Without the probe one slow moment
    closed a gate for good: the try's cost stayed what that moment measured, and worker
    processes whose gates had closed that way were slower than those whose gates stayed open.
    The gate judges by time because the same search pays or not by backend: on dense boxes
    Gurobi's and CP-SAT's warm MIPs are cheap enough that a search answering most revisits
    still cost more than it saved, where HiGHS' slower MIP made it pay (docs/records/defaults.md,
    "The core").
    """

    def __init__(self, min_rate: float = 0.1) -> None:
        super().__init__(min_rate)
        self.closed_chunks, self.probe_after = 0, PROBE_FIRST
        self.try_seconds: float | None = None
        self.mip_seconds: dict[bool, float] = {}  # after a failed try? -> moving average
        self.timings = {"try": 0, True: 0, False: 0}  # samples behind each average

    def _average(self, last: float | None, seconds: float, key: Any) -> float:
        # The mean of the first 8 samples, then a moving average (weight 1/8): seeded by one
        # sample alone, one easy instance kept the average low for dozens more.
        self.timings[key] += 1
        return seconds if last is None else last + (seconds - last) / min(self.timings[key], 8)

    def saving(self) -> float:
        """Seconds a MIP without a try takes over the expected cost with one (inf until the
        tries and MIN_CONTROLS MIPs without a try are timed); the search pays while this is
        positive."""
        if self.try_seconds is None or self.timings[False] < MIN_CONTROLS:
            return math.inf
        without = self.mip_seconds[False]
        return without - self.try_seconds - (1 - self.rate) * self.mip_seconds.get(True, without)

    def pays(self) -> bool:
        return self.rate >= self.min_rate and self.saving() > 0

    def is_open(self) -> bool:
        return self.tries < 32 or self.pays()

    def begin_chunk(self) -> str:
        """How the next chunk is searched: ``"open"``; ``"probe"``, a closed gate's turn to search
        and time every row of it; or ``"closed"``, every 16th row sampled, untimed."""
        if self.is_open():
            self.closed_chunks, self.probe_after = 0, PROBE_FIRST
            return "open"
        self.closed_chunks += 1
        if self.closed_chunks < self.probe_after:
            return "closed"
        # the next probe waits twice as long, unless this one opens the gate
        self.closed_chunks, self.probe_after = 0, min(2 * self.probe_after, PROBE_MAX)
        return "probe"

    def should_try(self) -> bool:
        self.seen += 1
        if self.is_open():
            # open: a control MIP on every 64th instance, every 16th until MIN_CONTROLS are
            # timed and while the saving is under half the MIP's time (a close call)
            close_call = self.timings[
                False
            ] < MIN_CONTROLS or self.saving() < 0.5 * self.mip_seconds.get(False, 0.0)
            return self.seen % (16 if close_call else 64) != 0
        return self.seen % 16 == 0  # closed: every 16th samples the search

    def record(self, answered: bool, seconds: float | None = None) -> None:
        super().record(answered)
        if seconds is not None:
            self.try_seconds = self._average(self.try_seconds, seconds, "try")

    def record_mip(self, seconds: float, after_try: bool) -> None:
        self.mip_seconds[after_try] = self._average(
            self.mip_seconds.get(after_try), seconds, after_try
        )
