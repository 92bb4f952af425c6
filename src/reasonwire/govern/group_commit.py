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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from reasonwire.govern.evidence import Statement

__all__ = ["GroupCommit"]

Write = Callable[[Sequence[Statement]], bool]
"""Commit statements in one transaction without waiting: True when committed, False (or an
exception, such as :class:`~reasonwire.errors.StoreUnavailable`) when not, with nothing
written."""


class GroupCommit:
    """Statements added during one event-loop tick, committed by ``write`` in one
    transaction at the end of the tick (see the module). ``write`` is looked up at commit
    time, not at :meth:`add`: the caller decides then whether its store may still be written
    on the loop (the gateway: not while writes wait in its outbox)."""

    __slots__ = ("_batch", "_loop", "_write", "groups", "statements")

    def __init__(self, write: Write) -> None:
        self._write = write
        self._batch: list[tuple[Statement, asyncio.Future[bool]]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.groups = 0
        """Transactions tried so far (with :attr:`statements`: how much grouping happened)."""
        self.statements = 0

    def add(self, statement: Statement) -> asyncio.Future[bool]:
        """A future resolved (on the loop) once the tick's transaction committed (True) or
        was rolled back (False); ``statement`` is written in its tick's order."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        batch = self._batch
        if batch is None or self._loop is not loop:
            batch = self._batch = []
            self._loop = loop
            loop.call_soon(self._commit, batch)
        batch.append((statement, fut))
        return fut

    def _commit(self, batch: list[tuple[Statement, asyncio.Future[bool]]]) -> None:
        if self._batch is batch:
            self._batch = None
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
