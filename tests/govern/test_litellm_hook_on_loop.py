"""The LiteLLM hook's work on the proxy's own event loop, and its way back to a store thread.

With the SQLite store (and the in-memory vault) a call on a conversation whose effort is
already fixed is admitted on the loop, and its rows (the pending row before the attempt, the
completion after it) are committed there when SQLite can commit without waiting. When the
database is locked by another connection (another process, a checkpoint) such a write
writes nothing on the loop and goes to a store thread, where it waits as before: the attempt
is still let out only once its row is committed, a store that cannot commit in the budget is
a 503, and a completion is never lost. The first call of a conversation (which fixes its
effort in the store) is admitted on a store thread.

Expected rows come from the rules in ``Governor``'s docstrings (evidence first, one row per
attempt, ``refused`` with the hook's reason for an attempt never let out), not from the
code's output. The lock is real: a second SQLite connection holding ``BEGIN IMMEDIATE``."""

from __future__ import annotations

import asyncio
import copy
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reasonwire.errors import HookRefused, StoreUnavailable
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.litellm_hook import Governor
from tests.govern.test_litellm_governor import ANSWER, MODEL, call, governor, request, settled

STOPPED = "store-unavailable: the hook stopped waiting"


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.generate("k1")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "evidence.sqlite"


class CountingExecutor:
    """The governor's store threads, counting what is handed to them."""

    def __init__(self, gov: Governor) -> None:
        self.inner = gov.executor
        self.jobs = 0

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> Future[Any]:
        self.jobs += 1
        return self.inner.submit(fn, *args, **kwargs)


def counted(gov: Governor) -> CountingExecutor:
    counter = CountingExecutor(gov)
    gov.executor = counter  # type: ignore[assignment]
    return counter


class Locked:
    """The database's write lock held by another connection until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("BEGIN IMMEDIATE")
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.db.execute("ROLLBACK")
            self.db.close()


@pytest.fixture
def locker(db: Path) -> Iterator[list[Locked]]:
    held: list[Locked] = []
    yield held
    for lock in held:
        lock.release()


def attempt_of(out: Any) -> Any:
    return {"model": MODEL, "metadata": out["metadata"]}


def test_a_known_conversation_s_calls_take_no_store_thread(ring: KeyRing, db: Path) -> None:
    gov = governor(ring, store=SQLiteStore(db))
    jobs = counted(gov)
    call(gov, request(ring))  # the first call fixes the conversation's effort on a thread
    first = jobs.jobs
    assert first >= 1
    for _ in range(3):
        call(gov, request(ring))
    assert jobs.jobs == first
    assert settled(gov, "c1", 4) == [("forwarded", None)] * 4


def test_the_pending_row_is_committed_on_the_loop_before_the_attempt(
    ring: KeyRing, db: Path
) -> None:
    gov = governor(ring, store=SQLiteStore(db))
    call(gov, request(ring))

    async def run() -> list[str]:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        seen = sqlite3.connect(db)  # another connection: what is durable
        try:
            outcomes = [o for (o,) in seen.execute("SELECT outcome FROM evidence ORDER BY ts")]
        finally:
            seen.close()
        gov.attempt_answered(out, ANSWER)
        gov.answer(out, ANSWER)
        return outcomes

    assert asyncio.run(run()) == ["forwarded", "pending"]
    assert settled(gov, "c1", 2) == [("forwarded", None)] * 2


def test_a_locked_store_sends_the_pending_row_to_a_thread_and_the_attempt_waits_for_it(
    ring: KeyRing, db: Path, locker: list[Locked]
) -> None:
    gov = governor(ring, store=SQLiteStore(db), store_timeout=30)
    call(gov, request(ring))
    jobs = counted(gov)

    async def run() -> list[str]:
        locker.append(Locked(db))
        out = await gov.apre_call(request(ring), "acompletion")  # admitted; the row waits
        assert jobs.jobs == 1  # its write went to a store thread
        threading.Timer(0.2, locker[0].release).start()
        await gov.aattempt_start(attempt_of(out))  # let out only once the row is committed
        outcomes = [r.outcome for r in gov.store.rows("c1")]
        gov.attempt_answered(out, ANSWER)
        gov.answer(out, ANSWER)
        return outcomes

    assert asyncio.run(run()) == ["forwarded", "pending"]
    assert settled(gov, "c1", 2) == [("forwarded", None)] * 2


def test_a_store_locked_past_the_budget_lets_no_attempt_out(
    ring: KeyRing, db: Path, locker: list[Locked]
) -> None:
    gov = governor(ring, store=SQLiteStore(db), store_timeout=0.1)
    call(gov, request(ring))

    async def run() -> None:
        locker.append(Locked(db))
        out = await gov.apre_call(request(ring), "acompletion")
        with pytest.raises(HookRefused) as info:
            await gov.aattempt_start(attempt_of(out))
        assert (info.value.status, info.value.reason) == (503, "store-unavailable")
        assert info.value.headers == {"Retry-After": "1"}

    asyncio.run(run())
    locker[0].release()  # the waiting write lands; the row is closed: never sent
    assert settled(gov, "c1", 2) == [("forwarded", None), ("refused", STOPPED)]


def test_a_refusal_with_the_store_locked_past_the_budget_is_a_503(
    ring: KeyRing, db: Path, locker: list[Locked]
) -> None:
    gov = governor(ring, store=SQLiteStore(db), store_timeout=0.1)
    call(gov, request(ring))
    locker.append(Locked(db))
    with pytest.raises(HookRefused) as info:
        call(gov, request(ring, fallbacks=["x"]))  # refused on the loop; its row must wait
    assert (info.value.status, info.value.reason) == (503, "store-unavailable")
    locker[0].release()


def test_a_refusal_on_the_loop_is_recorded_before_it_is_answered(ring: KeyRing, db: Path) -> None:
    gov = governor(ring, store=SQLiteStore(db))
    call(gov, request(ring))
    jobs = counted(gov)
    with pytest.raises(HookRefused) as info:
        call(gov, request(ring, fallbacks=["x"]))
    assert (info.value.status, info.value.reason) == (400, "routing-field")
    assert jobs.jobs == 0
    assert settled(gov, "c1", 2) == [("forwarded", None), ("refused", "routing-field")]


def test_a_completion_the_loop_cannot_commit_is_written_by_a_thread(
    ring: KeyRing, db: Path, locker: list[Locked]
) -> None:
    gov = governor(ring, store=SQLiteStore(db))
    call(gov, request(ring))

    async def run() -> Any:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        locker.append(Locked(db))
        gov.attempt_answered(out, ANSWER)  # nobody waits: the answer goes on
        return gov.answer(out, ANSWER)

    assert asyncio.run(run())["choices"][0]["message"]["content"] == "Done."
    locker[0].release()
    assert settled(gov, "c1", 2) == [("forwarded", None)] * 2


def test_a_new_conversation_is_admitted_on_a_store_thread(ring: KeyRing, db: Path) -> None:
    """Its effort is fixed in the store: work that may wait, never on the loop."""
    gov = governor(ring, store=SQLiteStore(db))
    call(gov, request(ring))
    jobs = counted(gov)
    call(gov, request(ring, conv="c2"))
    assert jobs.jobs >= 1
    assert settled(gov, "c2", 1) == [("forwarded", None)]


class FailsOnTheLoop(SQLiteStore):
    """A store whose writes that must not wait fail (a database error), while its waiting
    writes work."""

    def write_now(self, statements: Any) -> bool:
        raise StoreUnavailable("planted: the write on the loop fails")


def test_a_write_that_fails_on_the_loop_is_tried_on_a_store_thread(ring: KeyRing, db: Path) -> None:
    gov = governor(ring, store=FailsOnTheLoop(db))
    for _ in range(2):
        call(gov, request(ring))
    assert settled(gov, "c1", 2) == [("forwarded", None)] * 2


def test_a_route_registered_again_gets_its_own_profile(ring: KeyRing) -> None:
    """``<think>`` text is cut unless the route says its model never writes it
    (``profile_fields={"think_tags": False}``): the rule of the route as registered now."""
    gov = governor(ring)
    thinking = copy.deepcopy(ANSWER)
    thinking["choices"][0]["message"]["content"] = "<think>plan</think>Done."

    def content() -> Any:
        async def run() -> Any:
            out = await gov.apre_call(request(ring), "acompletion")
            await gov.aattempt_start(attempt_of(out))
            gov.attempt_answered(out, thinking)
            return gov.answer(out, thinking)

        return asyncio.run(run())["choices"][0]["message"]["content"]

    assert content() == "Done."
    route = gov.registry.routes["chat/" + MODEL]
    gov.registry.add_route(replace(route, profile_fields={"think_tags": False}))
    assert content() == "<think>plan</think>Done."
