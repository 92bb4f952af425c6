"""The probe's one background thread: ledger housekeeping off the caller's path.

Rows are counted and written on the caller's path (see :mod:`reasonwire.probe.call`): a
row is on disk when the call's response is closed. What is left for this thread is work that
must not delay a call: archiving old session files when the ledger passes its size cap
(:func:`reasonwire.probe.ledger.rotate_later`), which gzips whole files.

Shared state (deliberate, the only state shared across calls): one FIFO of tasks and one
daemon thread per process. Tasks run one at a time in submission order. Every task swallows
its own failures; a failing task never stops the worker.

Bounds: the bytes handed over and not yet processed are capped (:data:`MAX_PENDING_BYTES`);
a submitter that would pass the cap waits for the worker (backpressure).

:func:`flush` waits until every task submitted so far has run (the process also flushes at
exit). After ``os.fork`` the child starts with an empty queue.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import threading
import time
from collections.abc import Callable

# Bytes submitted and not yet processed, across calls, before a submitter waits.
MAX_PENDING_BYTES = 256 * 1024 * 1024
# How long the interpreter waits at exit for pending rows.
EXIT_FLUSH_SECONDS = 10.0


class _Worker:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._tasks: collections.deque[tuple[Callable[[], None], int]] = collections.deque()
        self._pending_bytes = 0
        self._submitted = 0
        self._done = 0
        self._thread: threading.Thread | None = None
        self.cpu_seconds = 0.0
        self.bytes_processed = 0

    def submit(self, task: Callable[[], None], nbytes: int = 0) -> None:
        """Queue ``task`` (which covers ``nbytes`` of stream). Never raises."""
        try:
            with self._cond:
                while (
                    self._pending_bytes > 0
                    and self._pending_bytes + nbytes > MAX_PENDING_BYTES
                    and self._thread is not None
                    and self._thread.is_alive()
                    and threading.current_thread() is not self._thread
                ):
                    self._cond.wait(1.0)
                self._tasks.append((task, nbytes))
                self._pending_bytes += nbytes
                self._submitted += 1
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(
                        target=self._run, name="reasonwire-probe", daemon=True
                    )
                    self._thread.start()
                self._cond.notify_all()
        except Exception:
            pass

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._tasks:
                    self._cond.wait()
                task, nbytes = self._tasks.popleft()
            t0 = time.thread_time()
            with contextlib.suppress(BaseException):  # a probe failure never stops the worker
                task()
            del task  # free the call's chunks now, not when the next task arrives
            spent = time.thread_time() - t0
            with self._cond:
                self.cpu_seconds += spent
                self.bytes_processed += nbytes
                self._pending_bytes -= nbytes
                self._done += 1
                self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every task submitted before this call has run. False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = self._submitted
            while self._done < target:
                if self._thread is None or not self._thread.is_alive():
                    return False
                if threading.current_thread() is self._thread:
                    return False  # a task flushing its own worker would wait forever
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True


_worker = _Worker()


def submit(task: Callable[[], None], nbytes: int = 0) -> None:
    """Run ``task`` on the probe worker, after every task submitted before it."""
    _worker.submit(task, nbytes)


def flush(timeout: float | None = None) -> bool:
    """Wait until the housekeeping submitted so far (archive rotation) has run.

    Rows themselves are on disk when a call's response is closed; this only matters to a
    reader that wants the archive settled. Returns False if ``timeout`` (seconds) passed first.
    """
    return _worker.flush(timeout)


def stats() -> dict[str, float]:
    """Worker totals since the process started: CPU seconds spent and stream bytes processed."""
    with _worker._cond:
        return {"cpu_seconds": _worker.cpu_seconds, "bytes": float(_worker.bytes_processed)}


def _after_fork_in_child() -> None:
    global _worker
    _worker = _Worker()


def _at_exit() -> None:
    _worker.flush(EXIT_FLUSH_SECONDS)


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
