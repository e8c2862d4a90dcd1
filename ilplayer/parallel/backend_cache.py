"""The backends and worker pools that [`ilplayer.solve`][ilplayer.solve] keeps between calls.

Building a backend costs more than solving a small batch (a Gurobi environment, a HiGHS
object per constraint set, a thread pool whose workers build their own), so ``solve(...,
solver="name")`` reuses them: per thread (a backend is not thread-safe), keyed by the
solver's name and options and the executor settings, the last `CACHE_SIZE` of them.
Reuse also keeps each backend's native models and warm-start pools, so a constraint set that
comes back is neither rebuilt nor solved cold. `release_solvers` closes them; a
thread's entries are closed when the thread ends, the main thread's at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ilplayer.parallel.backend import Backend
from ilplayer.parallel.workers import frozen

__all__ = ["CACHE_SIZE", "cached_backend", "release_solvers"]

CACHE_SIZE = 4


def _close(entries: OrderedDict[Any, Backend]) -> None:
    while entries:
        entries.popitem(last=False)[1].close()


class _ThreadCache:
    def __init__(self) -> None:
        self.entries: OrderedDict[Any, Backend] = OrderedDict()
        weakref.finalize(self, _close, self.entries)  # the thread ended, or release_solvers()


_local = threading.local()
_lock = threading.Lock()
_caches: weakref.WeakSet[_ThreadCache] = weakref.WeakSet()


def _thread_cache() -> _ThreadCache:
    cache = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = _ThreadCache()
        with _lock:
            _caches.add(cache)
    return cache


@contextlib.contextmanager
def cached_backend(
    name: str,
    options: dict[str, Any] | None,
    executor: str | None,
    workers: int | None,
    mp_context: str | None,
) -> Iterator[Backend]:
    """This thread's `Backend` for these settings, built on first
    use; one that cannot be kept (an option that is no key) is closed when the block ends."""
    key: Any = (name, frozen(options or {}), executor, workers, mp_context)
    try:
        hash(key)
    except TypeError:  # an option value that cannot be a key: build afresh, keep nothing
        key = None
    entries = _thread_cache().entries
    if key is not None and key in entries:
        entries.move_to_end(key)
        yield entries[key]
        return
    entry = Backend.build(name, options, executor, workers, mp_context)  # the name, resolved once
    if key is None:
        try:
            yield entry
        finally:
            entry.close()
        return
    entries[key] = entry
    while len(entries) > CACHE_SIZE:
        entries.popitem(last=False)[1].close()
    yield entry


def release_solvers() -> None:
    """Close the backends and worker pools that [`ilplayer.solve`][ilplayer.solve] keeps for this thread."""
    _close(_thread_cache().entries)


@atexit.register
def _release_all() -> None:
    with _lock:
        caches = list(_caches)
    for cache in caches:
        _close(cache.entries)
