"""``executor="auto"``: for each batch, the workers or the calling thread, whichever has been
faster per instance (`AutoDispatch`; every `BatchExecutor` may carry one)."""

from __future__ import annotations

__all__ = ["SMALL_BATCH_SECONDS", "AutoDispatch"]

SMALL_BATCH_SECONDS = 0.002
"""A batch the calling thread solves in less than this many seconds never goes to the workers:
handing it over costs about as much as it could save. SPO+ on PyEPO's shortest path (a batch of
32 LPs answered well under it) ran slower when auto probed and chose threads
(docs/records/readers.md)."""


class AutoDispatch:
    """``executor="auto"``'s choice per batch: the workers or the calling thread, whichever has
    been faster per instance.

    Threads help only where the native solve dominates: a batch of sub-millisecond instances
    whose time goes to Python (building models, the search around a start) holds the GIL
    and runs no faster on two threads, and a busy machine may leave no second core. So both
    ways are measured as moving averages of seconds per instance: the first two batches are
    serial, the next two parallel, then the faster way is used and the other is re-measured
    every ``probe_every``-th batch, so the choice follows the instances as training changes
    them. The first batch of each way is not timed: it starts the pool and builds each
    worker's native models with no warm starts, and timed it made the workers look twice as
    slow as they were, which the probes' moving average took ~100 batches to forget.
    """

    def __init__(self, probe_every: int = 16, weight: float = 0.25) -> None:
        self.probe_every, self.weight = probe_every, weight
        self.seconds_per_instance: dict[bool, float] = {}  # parallel? -> moving average
        self.serial_batch_seconds: float | None = None  # moving average of a serial batch's time
        self._warmed: set[bool] = set()  # the ways whose warm-up batch has run
        self._batches = 0

    def parallel(self) -> bool:
        """Whether the next batch goes to the workers."""
        if (
            self.serial_batch_seconds is not None
            and self.serial_batch_seconds < SMALL_BATCH_SECONDS
        ):
            return False  # too small to hand over (SMALL_BATCH_SECONDS); still measured serially
        for way in (False, True):
            if way not in self.seconds_per_instance:
                return way
        self._batches += 1
        faster = self.seconds_per_instance[True] < self.seconds_per_instance[False]
        return faster if self._batches % self.probe_every else not faster

    def record(self, parallel: bool, seconds: float, instances: int) -> None:
        if parallel not in self._warmed:
            self._warmed.add(parallel)
            return
        if not parallel:
            last = self.serial_batch_seconds
            self.serial_batch_seconds = (
                seconds if last is None else last + self.weight * (seconds - last)
            )
        if instances:
            rate, last = seconds / instances, self.seconds_per_instance.get(parallel)
            self.seconds_per_instance[parallel] = (
                rate if last is None else last + self.weight * (rate - last)
            )
