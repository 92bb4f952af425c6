"""Evidence writes of one event-loop tick committed together (group commit, SQLite).

Why: a SQLite commit costs several times what a row's statement costs inside a transaction
(measured on the gateway's disk: ~44 us for an insert and its commit, ~13 us a row at ten rows
a commit). Under concurrent load many requests reach their evidence write in the same turn of
the event loop; each hands its statement to :meth:`GroupCommit.add` and awaits the future it
gets. The first statement of a tick schedules the commit (``loop.call_soon``: it runs once the
requests ready in this turn have had their go), which writes every statement of the tick in
one transaction, in the order they came.

The rules (the gateway's evidence-first rule depends on the first):

- a request is released (its future resolves True) only after the transaction holding its
  statement committed;
- a transaction that cannot be committed without waiting (the connection or the file is
  busy), or fails, is rolled back whole (nothing of it stays) and releases every request of it
  with False: each then takes the waiting way (a store thread) with its own row, exactly as a
  single write that would wait does. A group never fails half.

A tick with one statement commits it alone (no ``BEGIN``/``COMMIT`` around it), so a request
on an idle gateway pays only a loop turn for this.

:class:`ThreadGroupCommit` is the same for writes made on threads (the PostgreSQL store, whose
writes run on the gateway's store threads: one round trip and one commit for the rows of
several requests).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

from reasonwire.errors import StoreUnavailable
from reasonwire.govern.evidence import Statement

__all__ = ["GroupCommit", "ThreadGroupCommit"]

_Queued = tuple[Statement, "asyncio.Future[bool]"]
Write = Callable[[Sequence[Statement]], bool]
"""Commit statements in one transaction without waiting: True when committed, False (or an
exception, such as :class:`~reasonwire.errors.StoreUnavailable`) when not, with nothing
written."""


class GroupCommit:
    """Statements added during one event-loop tick, committed by ``write`` in one
    transaction at the end of the tick (see the module). ``write`` is looked up at commit
    time, not at :meth:`add`: the caller decides then whether its store may still be written
    on the loop (the gateway: not while writes wait in its outbox)."""

    __slots__ = ("_batches", "_write", "groups", "statements")

    def __init__(self, write: Write) -> None:
        self._write = write
        # The tick's batch per event loop (one, but for an app driven from several loops on
        # several threads: each loop's batch is touched by its own thread only).
        self._batches: dict[asyncio.AbstractEventLoop, list[_Queued]] = {}
        self.groups = 0
        """Transactions tried so far (with :attr:`statements`: how much grouping happened)."""
        self.statements = 0

    def add(self, statement: Statement) -> asyncio.Future[bool]:
        """A future resolved (on the loop) once the tick's transaction committed (True) or
        was rolled back (False); ``statement`` is written in its tick's order."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        batch = self._batches.get(loop)
        if batch is None:
            batch = self._batches[loop] = []
            loop.call_soon(self._commit, loop)
        batch.append((statement, fut))
        return fut

    def _commit(self, loop: asyncio.AbstractEventLoop) -> None:
        batch = self._batches.pop(loop)
        self.groups += 1
        self.statements += len(batch)
        try:
            committed = self._write([statement for statement, _ in batch])
        except Exception:  # StoreUnavailable, or anything else: the waiting way decides
            committed = False
        # Only now, after the transaction's outcome is known, is any request released.
        for _, fut in batch:
            if not fut.done():  # a request cancelled meanwhile (its row may still be written)
                fut.set_result(committed)


class _Slot:
    __slots__ = ("done", "error", "promoted", "statement")

    def __init__(self, statement: Statement) -> None:
        self.statement = statement
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.promoted = False


class ThreadGroupCommit:
    """Statements of concurrent threads committed together (the PostgreSQL store, whose
    writes run on the gateway's store threads): the first thread to arrive commits, in one
    transaction (``write``), every statement queued by then, its own included; the threads
    that arrive meanwhile wait, and when it is done the first of them commits everything
    queued since (leader and followers). A thread returns only once the transaction holding
    its statement committed; when ``write`` fails nothing of that transaction stays and every
    thread of it raises :class:`StoreUnavailable`. Alone, a thread commits its statement at
    once (a group of one), as without grouping."""

    def __init__(self, write: Callable[[Sequence[Statement]], None]) -> None:
        self._write = write
        self._lock = threading.Lock()
        self._queued: list[_Slot] = []
        self._busy = False
        self.groups = 0
        self.statements = 0

    def commit(self, statement: Statement) -> None:
        """Commit ``statement`` (with whatever other threads queued), or raise."""
        slot = _Slot(statement)
        with self._lock:
            self._queued.append(slot)
            lead = not self._busy
            self._busy = True
        if not lead:
            slot.done.wait()
            if not slot.promoted:
                if slot.error is not None:
                    raise _failed(slot.error)
                return
        with self._lock:
            batch, self._queued = self._queued, []
            self.groups += 1
            self.statements += len(batch)
        error: BaseException | None = None
        try:
            self._write([s.statement for s in batch])
        except BaseException as exc:
            error = exc
        with self._lock:
            after = self._queued[0] if self._queued else None
            if after is None:
                self._busy = False
        # Only now, after the transaction's outcome is known, is any thread released.
        for s in batch:
            if s is not slot:
                s.error = error
                s.done.set()
        if after is not None:  # the next group's first thread commits it
            after.promoted = True
            after.done.set()
        if error is not None:
            raise error


def _failed(error: BaseException) -> StoreUnavailable:
    """The error a thread of a failed group raises (its own object: one exception is never
    raised in several threads at once)."""
    return StoreUnavailable(str(error) or type(error).__name__)
