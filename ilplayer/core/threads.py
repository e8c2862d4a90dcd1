"""How many intra-op threads torch uses for the library's own work: the solves (the bruteforce
backend is torch's enumeration), the training loops of `learn_constraints` and the command line.

torch's default (one thread per core) is right on an idle machine and wrong on a busy one: its
OpenMP threads wait for each other by spinning, so beside one busy process an epoch of the
README's demo took several times as long as on one thread (docs/records/defaults.md, "Threads
chosen by the library"). The library therefore counts the
cores the rest of the machine left free since it last looked (the busy time of this process's
CPUs in ``/proc/stat``, less this process's own CPU time) and uses that many threads, at least
one and at most torch's default. A user's choice wins: ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS`` in the environment, or a ``torch.set_num_threads`` call after ilplayer was
imported, and the library leaves torch's threads alone.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["chosen_threads", "library_threads", "one_blas_thread", "user_chose_threads"]

LOOK_EVERY = 0.5  # seconds: more often, a burst of the neighbour's (or our own startup) decides
_DEFAULT = torch.get_num_threads()  # torch's own count, as this process started with it
_lock = threading.Lock()
_set_by_us: list[int] = []  # the counts our open `library_threads` blocks set, innermost last


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def _busy_seconds(cpus: list[int]) -> float | None:
    """CPU seconds the machine spent busy on ``cpus`` since boot (None: no ``/proc/stat``)."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{cpu}" for cpu in cpus}
    busy = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in wanted:  # user nice system idle iowait irq softirq steal ...
            busy += sum(int(value) for value in fields[1:9]) - int(fields[4]) - int(fields[5])
    return busy / os.sysconf("SC_CLK_TCK")


class _Look:
    """The last look at the machine: when, its busy seconds, our CPU seconds, and the count."""

    def __init__(self) -> None:
        self.cpus = _cpus()
        self.wall, self.busy, self.ours = (
            time.monotonic(),
            _busy_seconds(self.cpus),
            time.process_time(),
        )
        self.threads = _DEFAULT

    def update(self, at_once: bool = False) -> int:
        wall = time.monotonic()
        if self.busy is None or (wall - self.wall < LOOK_EVERY and not at_once):
            return self.threads
        busy, ours = _busy_seconds(self.cpus), time.process_time()
        if busy is None:
            return self.threads
        others = max(0.0, (busy - self.busy) - (ours - self.ours)) / (wall - self.wall)
        self.wall, self.busy, self.ours = wall, busy, ours
        self.threads = max(1, min(_DEFAULT, int(len(self.cpus) - others + 0.5)))
        return self.threads


_look = _Look()


def user_chose_threads() -> bool:
    """Whether the user set torch's thread count: an environment variable, or a count other
    than the one ilplayer last set (or found at import)."""
    if os.environ.get("OMP_NUM_THREADS") or os.environ.get("MKL_NUM_THREADS"):
        return True
    return torch.get_num_threads() != (_set_by_us[-1] if _set_by_us else _DEFAULT)


def chosen_threads(settle: float = 0.0) -> int:
    """The intra-op thread count for the library's next piece of work: the cores the rest of the
    machine left free over the last look (at most every ``LOOK_EVERY`` seconds), between one
    and torch's default; the user's count where they chose one. With ``settle`` seconds, a
    first look waits until that long has passed since the last (a command's start)."""
    if user_chose_threads():
        return torch.get_num_threads()
    with _lock:
        waited = time.monotonic() - _look.wall
        if waited < settle:
            time.sleep(settle - waited)
            return _look.update(at_once=True)
        return _look.update()


@contextlib.contextmanager
def library_threads(settle: float = 0.0) -> Iterator[int]:
    """torch's intra-op threads set to `chosen_threads` inside, restored after; a user's own
    count is left as it is. Yields the count in force."""
    if user_chose_threads():
        yield torch.get_num_threads()
        return
    count = chosen_threads(settle)
    before = torch.get_num_threads()
    if count != before:
        torch.set_num_threads(count)
    _set_by_us.append(count)
    try:
        yield count
    finally:
        _set_by_us.pop()
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


# Workers run NumPy's BLAS on one thread. The products they make (the search around a start:
# candidates x variables x rows) are too small to gain from more, and BLAS threads on top of
# the workers themselves oversubscribe the cores (docs/records/parallel.md).
_blas_controller: Any = None
_blas_scanned_modules = -1  # len(sys.modules) when the loaded libraries were scanned


def one_blas_thread() -> Any:
    """A context manager that limits every loaded BLAS to one thread (threadpoolctl).

    Scanning the loaded libraries takes ~ms, so the scan is kept until a module has been
    imported since: a BLAS that came with it (scipy's, after a thread pool had already run)
    escaped the limit of a scan taken before it was loaded.
    """
    global _blas_controller, _blas_scanned_modules
    if _blas_controller is None or len(sys.modules) != _blas_scanned_modules:
        from threadpoolctl import ThreadpoolController

        _blas_controller = ThreadpoolController()
        _blas_scanned_modules = len(sys.modules)
    return _blas_controller.limit(limits=1, user_api="blas")
