"""Process lanes: one worker process fed through a pipe of its own, what ilplayer's process pools are made of."""

from __future__ import annotations

import collections
import concurrent.futures
import concurrent.futures.process
import os
import signal
import threading
from typing import Any

from ilplayer.parallel.main_guard import main_file_hidden, main_without_a_file
from ilplayer.parallel.workers import guarded_context, process_worker_init

__all__ = ["LaneFuture", "ProcessLane"]


class ProcessLane:
    """One worker process fed through a pipe of its own: what ilplayer's process pools are made of.

    The calling thread pickles a call straight into the pipe and reads the answer straight back;
    no threads stand between them. A ``ProcessPoolExecutor`` of one worker (the lanes before)
    passes each call through its management thread and its queue's feeder thread, and each
    answer back through the management thread, each a wake-up while the workers hold the cores
    (benchmarks/lane_transport.py, docs/records/defaults.md, "Threads and processes").

    ``submit(fn, *args)`` returns a future whose ``result()`` reads the answers in order; a lost
    worker makes every pending and later call raise ``BrokenProcessPool``, as a pool's would.
    Safe to share between threads.
    """

    def __init__(
        self,
        mp_context: str | None = None,
        *,
        starter: str = "executor='processes'",
        instead: str = "executor='threads' or 'serial'",
    ) -> None:
        context = guarded_context(mp_context, starter, instead)
        self._connection, child = context.Pipe()
        self.process = context.Process(
            target=_lane_main, args=(child, os.getpid()), daemon=True, name="ilplayer-worker"
        )
        with main_file_hidden(
            main_without_a_file() if context.get_start_method() != "fork" else None
        ):
            self.process.start()
        child.close()
        self._lock = threading.RLock()
        self._pending: collections.deque[LaneFuture] = collections.deque()
        self._lost: BaseException | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def submit(self, fn: Any, *args: Any) -> LaneFuture:
        """Send ``fn(*args)`` to the worker; a call that cannot be pickled fails its future only."""
        future = LaneFuture(self)
        with self._lock:
            if self._lost is not None:
                raise self._lost
            try:
                self._connection.send((fn, args))
            except OSError:  # the worker is gone
                raise self._lose() from None
            except Exception as exc:  # pickling failed before anything was written
                future._settle(False, exc)
                return future
            self._pending.append(future)
        return future

    def _receive_until(self, future: LaneFuture) -> None:
        with self._lock:
            while not future._done:
                if self._lost is not None:
                    raise self._lost
                try:
                    ok, value = self._connection.recv()
                except (EOFError, OSError):
                    raise self._lose() from None
                self._pending.popleft()._settle(ok, value)

    def _lose(self) -> BaseException:
        self.process.join(timeout=1)
        code = self.process.exitcode
        how = (
            "still running"
            if code is None
            else f"killed by {signal.Signals(-code).name}"
            if code < 0
            else f"exit code {code}"
        )
        self._lost = concurrent.futures.process.BrokenProcessPool(
            f"worker process {self.pid} died ({how})"
        )
        while self._pending:
            self._pending.popleft()._settle(False, self._lost)
        return self._lost

    def terminate(self) -> None:
        """Stop the worker now, even mid-task."""
        self._connection.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


class LaneFuture:
    """The answer of one `ProcessLane.submit` call."""

    def __init__(self, lane: ProcessLane) -> None:
        self._lane, self._done, self._ok = lane, False, False
        self._value: Any = None

    def _settle(self, ok: bool, value: Any) -> None:
        self._done, self._ok, self._value = True, ok, value

    def result(self) -> Any:
        if not self._done:
            self._lane._receive_until(self)
        if not self._ok:
            raise self._value
        return self._value


def _lane_main(connection: Any, client_pid: int) -> None:
    """A lane's worker: set up as a pool's worker is, then answer calls until the pipe closes."""
    process_worker_init(client_pid)
    while True:
        try:
            fn, args = connection.recv()
        except EOFError:  # the client closed the lane
            return
        except Exception as exc:  # a call that cannot be unpickled here (its message is read)
            ok, value = False, exc
        else:
            try:
                ok, value = True, fn(*args)
            except Exception as exc:
                ok, value = False, exc
        try:
            connection.send((ok, value))
        except OSError:  # the client is gone
            return
        except Exception as exc:  # the answer cannot be pickled
            connection.send(
                (
                    False,
                    RuntimeError(
                        f"the worker's answer could not be sent back: {type(exc).__name__}: {exc}"
                    ),
                )
            )
