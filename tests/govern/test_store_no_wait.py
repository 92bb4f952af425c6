"""Writes that never wait (``evidence.NoWait``): the gateway commits a row or a vault entry on
its event loop only when that cannot wait; a lock held by another thread or another process
makes the write return at once with nothing written, and the request takes the waiting way
on a store thread, where the rules of tests/govern/test_evidence_first.py hold. Ordering
stays as it was: what waits in the outbox is written first; a store subclass that changes
how rows are written keeps the waiting way.

No timing is asserted: a write that waited for the lock would return only once the lock is
released, and the tests release it only after the write returned (a thread, polled with a
deadline)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.stores import MemoryVault, SQLiteVault
from reasonwire.govern.upstream import UpstreamPool
from tests.govern.conftest import CHAT_TOOLS, POLICY, World, make_registry, new_conv

PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
CANARY = "The verification word for this task is "


def _row(conv: str) -> EvidenceRow:
    return EvidenceRow(outcome="pending", conversation_id=conv)


def _returns_while_held(work: Callable[[], object], release: Callable[[], None]) -> object:
    """``work()`` on a thread; it must return while the lock is still held (polled up to
    20 s: a write that waited would return only when the lock is released, or after SQLite's
    30 s busy timeout), then the lock is released."""
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(work()), daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while not out and time.monotonic() < deadline:
        time.sleep(0.005)
    returned = bool(out)
    release()
    t.join(60)
    assert returned, "the write waited for the lock"
    return out[0]


def test_record_now_with_the_connection_busy_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "ev.sqlite")
    store._lock.acquire()  # another thread is in the middle of a statement
    row = _row("c1")
    assert _returns_while_held(lambda: store.record_now(row), store._lock.release) is False
    assert store.rows() == []
    assert store.record_now(row) is True  # free again: committed
    assert [r.call_id for r in store.rows()] == [row.call_id]


def test_record_now_with_the_file_locked_by_another_process_writes_nothing(
    tmp_path: Path,
) -> None:
    """Another connection (a replica, here the test) holds the file's write lock: the write
    does not wait SQLite's busy timeout, returns False and leaves nothing."""
    path = tmp_path / "ev.sqlite"
    store = SQLiteStore(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    row = _row("c1")
    try:
        result = _returns_while_held(
            lambda: store.record_now(row), lambda: blocker.execute("ROLLBACK")
        )
    finally:
        blocker.close()
    assert result is False
    assert store.rows() == []
    row.outcome = "forwarded"  # the completion of a row never recorded changes nothing
    assert store.complete_now(row) is True and store.rows() == []


def _waits_until_released(work: Callable[[], None], release: Callable[[], None]) -> None:
    """``work()`` on a thread must still be running (waiting) while the lock is held, and
    succeed once it is released: a write that did not wait would have raised at once
    (SQLite answers "database is locked" with a busy timeout of 0)."""
    out: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            out.append(exc)
        else:
            out.append(None)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(0.5)  # not a timing assertion: any outcome before the release is a failure
    early = list(out)
    release()
    t.join(60)
    assert early == [], f"the write did not wait for the lock: {early}"
    assert out == [None]


def test_the_waiting_writes_wait_again_after_a_write_that_did_not(tmp_path: Path) -> None:
    """The waiting writes wait for another connection's lock (SQLite's busy timeout, 30 s)
    after non-waiting writes, whether those committed or found the file locked; and a
    non-waiting write after a waiting one still does not wait."""
    path = tmp_path / "ev.sqlite"
    store = SQLiteStore(path)
    assert store.record_now(_row("c0")) is True
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        assert store.record_now(_row("c1")) is False
        late = _row("c2")
        _waits_until_released(lambda: store.record(late), lambda: blocker.execute("ROLLBACK"))
        blocker.execute("BEGIN EXCLUSIVE")
        assert store.record_now(_row("c3")) is False  # after a waiting write: at once again
        late.outcome = "forwarded"
        _waits_until_released(lambda: store.complete(late), lambda: blocker.execute("ROLLBACK"))
    finally:
        blocker.close()
    assert [(r.conversation_id, r.outcome) for r in store.rows()] == [
        ("c0", "pending"),
        ("c2", "forwarded"),
    ]


def test_writes_of_one_kind_in_a_row_set_no_busy_timeout(tmp_path: Path) -> None:
    """The busy timeout is set when a write of the other kind comes, not around every write
    (the fast path: non-waiting writes in a row run their statement alone)."""
    store = SQLiteStore(tmp_path / "ev.sqlite")
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    rows = [_row("c1") for _ in range(3)]
    for row in rows:
        assert store.record_now(row) is True
    store.record(_row("c2"))
    store.record(_row("c3"))
    assert store.complete_now(rows[0]) is True
    pragmas = [sql for sql in seen if sql.startswith("PRAGMA")]
    assert pragmas == [
        "PRAGMA busy_timeout=0",
        "PRAGMA busy_timeout=30000",
        "PRAGMA busy_timeout=0",
    ]


def test_the_vault_s_waiting_writes_wait_after_a_write_that_did_not(tmp_path: Path) -> None:
    path = tmp_path / "vault.sqlite"
    vault = SQLiteVault(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        assert vault.put_now("c1", [("k", 1)]) is False
        _waits_until_released(
            lambda: vault.put("c1", [("k", 2)]), lambda: blocker.execute("ROLLBACK")
        )
    finally:
        blocker.close()
    assert vault.get("c1", "k") == 2


def test_vault_now_with_the_connection_busy_reads_and_writes_nothing(tmp_path: Path) -> None:
    vault = SQLiteVault(tmp_path / "vault.sqlite")
    vault.put("c1", [("k", {"a": 1})])
    vault._lock.acquire()
    assert _returns_while_held(lambda: vault.get_now("c1", "k"), vault._lock.release) == (
        False,
        None,
    )
    vault._lock.acquire()
    put = _returns_while_held(lambda: vault.put_now("c1", [("k2", 2)]), vault._lock.release)
    assert put is False and vault.get("c1", "k2") is None
    assert vault.get_now("c1", "k") == (True, {"a": 1})
    assert vault.put_now("c1", [("k2", 2)]) is True and vault.get("c1", "k2") == 2


class Audited(SQLiteStore):
    """A store subclass that changes how rows are written (here it only counts them)."""

    def __init__(self) -> None:
        super().__init__()
        self.records = 0

    def record(self, row: EvidenceRow) -> None:
        self.records += 1
        super().record(row)


class CountedVault(MemoryVault):
    def put(self, conversation_id: str, entries: list[tuple[str, Any]]) -> None:
        super().put(conversation_id, entries)


def test_a_store_that_changes_its_writes_keeps_the_waiting_way() -> None:
    assert SQLiteStore().writes_now and SQLiteVault().writes_now and MemoryVault().writes_now
    assert not Audited().writes_now
    assert not CountedVault().writes_now


# -- through the gateway ---------------------------------------------------------------------


async def _post(gw: Gateway, world: World, conv: str, messages: list[Any]) -> httpx.Response:
    transport = httpx.ASGITransport(app=gw.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        return await client.post(
            "/v1/chat/completions",
            json={"model": "sim-deepseek", "messages": messages, "tools": CHAT_TOOLS},
            headers=world.headers(conv, world.token(conv, "chat/sim-deepseek", "low")),
        )


async def test_the_outbox_is_written_before_a_request_writes_on_the_event_loop(
    world: World,
) -> None:
    """A write waiting in the outbox goes first: the request's own pending row is committed
    after it (never on the event loop ahead of it)."""
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore()
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store)
    conv = new_conv()
    seen: list[int] = []
    gw._stop.set()  # no background flusher: only the request's own path writes the outbox
    gw._outbox.append(lambda: seen.append(len(store.rows(conv))))
    try:
        r = await _post(gw, world, conv, [{"role": "user", "content": f"[{conv}] hi"}])
    finally:
        await gw.aclose()
    assert r.status_code == 200
    assert seen == [0]  # written before the request's pending row
    assert [x.outcome for x in store.rows(conv)] == ["forwarded"]


async def test_a_busy_vault_sends_the_body_to_a_store_thread_with_its_carriers(
    world: World, tmp_path: Path
) -> None:
    """Turn 2 needs the turn-1 reasoning from the vault while another thread holds the
    vault's connection: the event loop does not wait, the body is made again on a store
    thread, the carrier goes upstream once, and the model finds the verification word that
    lives only in its turn-1 reasoning."""
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store, vault = SQLiteStore(tmp_path / "ev.sqlite"), SQLiteVault(tmp_path / "vault.sqlite")
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store, vault=vault)
    conv = new_conv()
    messages: list[Any] = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    waiting = gw._open_row_waiting
    took: list[bool] = []

    async def spy(*args: Any) -> Any:
        took.append(True)
        if vault._lock.locked():
            vault._lock.release()  # the store thread may read it now
        return await waiting(*args)

    try:
        first = await _post(gw, world, conv, messages)
        assert first.status_code == 200, first.text
        message = first.json()["choices"][0]["message"]
        assert "reasoning_content" not in message
        call_id = message["tool_calls"][0]["id"]
        messages += [message, {"role": "tool", "tool_call_id": call_id, "content": "1. " + PROBE}]
        gw._open_row_waiting = spy  # type: ignore[method-assign]
        vault._lock.acquire()
        second = await _post(gw, world, conv, messages)
    finally:
        if vault._lock.locked():
            vault._lock.release()
        await gw.aclose()
    assert second.status_code == 200, second.text
    assert took == [True]
    seen = world.recorder.find(conv)
    assert len(seen) == 2 and CANARY not in seen[0]["text"]
    assert CANARY in seen[0]["answer"].decode()  # the simulator's turn-1 reasoning
    turn2 = seen[1]["text"]
    assert turn2.count(CANARY) == 1  # the carrier went upstream, once
    word = turn2.split(CANARY, 1)[1].split(".", 1)[0]
    assert word in second.json()["choices"][0]["message"]["content"]
    rows = store.rows(conv)
    assert [r.carriers_reattached for r in rows] == [0, 1]


@pytest.mark.parametrize("locked", [False, True])
async def test_a_pending_row_that_cannot_be_committed_now_is_committed_before_the_call(
    world: World, tmp_path: Path, locked: bool
) -> None:
    """With the store's connection busy the pending row is committed by a store thread, and
    still before the upstream call: the upstream sees the row when the call arrives."""
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store)
    conv = new_conv()
    before = len(world.recorder.find(conv))
    counted: list[int] = []
    record = store.record

    def spy(row: EvidenceRow) -> None:  # the waiting way, on the store thread
        counted.append(len(world.recorder.find(conv)) - before)
        record(row)

    store.record = spy  # type: ignore[method-assign]  # (instance only: writes_now stays)
    waiting = gw._open_row_waiting

    async def release_first(*args: Any) -> Any:
        if store._lock.locked():
            store._lock.release()
        return await waiting(*args)

    gw._open_row_waiting = release_first  # type: ignore[method-assign]
    gw.store.fix_effort(conv, "low")  # the authorisation runs on the event loop
    gw.store.fix_intent(conv, "low")
    if locked:
        store._lock.acquire()
    try:
        r = await _post(gw, world, conv, [{"role": "user", "content": f"[{conv}] hi"}])
    finally:
        if store._lock.locked():
            store._lock.release()
        await gw.aclose()
    assert r.status_code == 200
    assert counted == ([0] if locked else [])  # the thread committed it before the call
    assert [x.outcome for x in store.rows(conv)] == ["forwarded"]


async def test_a_write_queued_during_the_call_goes_before_the_completion(world: World) -> None:
    """Another request's failed write joins the outbox while this call is upstream: this
    call's completion is written after it, not on the event loop ahead of it."""
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore()
    conv = new_conv()
    seen: list[list[str]] = []

    class Queues(UpstreamPool):
        async def post(self, *args: Any, **kw: Any) -> Any:
            gw._outbox.append(lambda: seen.append([r.outcome for r in store.rows(conv)]))
            return await super().post(*args, **kw)

    gw = Gateway(make_registry(upstream), POLICY, world.ring, store, upstream=Queues())
    gw._stop.set()  # no background flusher: only the request's own path writes the outbox
    try:
        r = await _post(gw, world, conv, [{"role": "user", "content": f"[{conv}] hi"}])
    finally:
        await gw.aclose()
    assert r.status_code == 200
    assert seen == [["pending"]]  # written before the completion
    assert [x.outcome for x in store.rows(conv)] == ["forwarded"]


# -- the relayed stream's own response (no anyio task group) ---------------------------------


async def test_a_stream_cancelled_by_its_server_stays_cancelled() -> None:
    """Only the client leaving ends the stream quietly; a cancellation from elsewhere (the
    server stopping) reaches the server's task."""
    from reasonwire.govern.asgi import Relayed

    started = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        started.set()
        await asyncio.Event().wait()  # an upstream that says nothing more
        yield b""

    async def receive() -> Any:
        await asyncio.Event().wait()  # the client stays

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    task = asyncio.create_task(Relayed(body())({"type": "http"}, receive, send))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sent[0]["type"] == "http.response.start"


async def test_a_client_leaving_ends_the_stream_quietly() -> None:
    from reasonwire.govern.asgi import Relayed

    closed: list[bool] = []
    leave = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            leave.set()
            await asyncio.Event().wait()
            yield b""
        finally:
            closed.append(True)

    async def receive() -> Any:
        await leave.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        pass

    await Relayed(body())({"type": "http"}, receive, send)  # returns, no CancelledError
    assert closed == [True]
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0
