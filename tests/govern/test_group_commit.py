"""Group commit (``govern.group_commit``): the evidence statements that reach the event loop in
one tick are committed in one SQLite transaction. The rules: a request is released only once
the transaction holding its row committed (another connection sees the row by then); a group
that cannot commit (busy, or any statement failing) is rolled back whole and releases every
request of it with False, and through the gateway each of those requests then commits its
own row on a store thread, still before its upstream call.

No timing is asserted: the order of events is recorded and compared."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from reasonwire.errors import StoreUnavailable
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore, Statement
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.group_commit import GroupCommit, ThreadGroupCommit
from tests import pg
from tests.govern.conftest import CHAT_TOOLS, POLICY, World, make_registry, new_conv


def _row(conv: str) -> EvidenceRow:
    return EvidenceRow(outcome="pending", conversation_id=conv)


def _seen_elsewhere(path: Path) -> int:
    """Rows another connection sees: only committed ones."""
    with sqlite3.connect(path) as other:
        (n,) = other.execute("SELECT COUNT(*) FROM evidence").fetchone()
    return int(n)


async def test_one_ticks_rows_commit_together_and_release_only_after(tmp_path: Path) -> None:
    path = tmp_path / "ev.sqlite"
    store = SQLiteStore(path)
    events: list[object] = []
    futures: list[asyncio.Future[bool]] = []

    def write(statements: Sequence[Statement]) -> bool:
        events.append(("writing", len(statements), [f.done() for f in futures]))
        return store.write_now(statements)

    group = GroupCommit(write)
    rows = [_row(f"c{i}") for i in range(3)]
    futures += [group.add(SQLiteStore.recording(r)) for r in rows]
    for f in futures:
        f.add_done_callback(lambda _: events.append(("released", _seen_elsewhere(path))))
    assert await asyncio.gather(*futures) == [True, True, True]
    # One transaction; nobody released while it was being written; each release finds every
    # row of the group committed (visible to another connection).
    assert events == [("writing", 3, [False] * 3)] + [("released", 3)] * 3
    assert (group.groups, group.statements) == (1, 3)
    assert [r.call_id for r in store.rows()] == [r.call_id for r in rows]  # in their order


async def test_a_group_with_a_failing_statement_fails_whole(tmp_path: Path) -> None:
    """The second of three statements cannot be bound: the transaction is rolled back (the
    first row is not left behind, on this connection or another) and all three get False."""
    path = tmp_path / "ev.sqlite"
    store = SQLiteStore(path)
    group = GroupCommit(store.write_now)
    good, bad, last = _row("a"), _row("b"), _row("c")
    bad.reason = {"not": "bindable"}  # type: ignore[assignment]
    futures = [group.add(SQLiteStore.recording(r)) for r in (good, bad, last)]
    assert await asyncio.gather(*futures) == [False, False, False]
    assert store.rows() == [] and _seen_elsewhere(path) == 0
    # The connection is usable again (no transaction left open).
    assert await group.add(SQLiteStore.recording(good)) is True
    assert [r.call_id for r in store.rows()] == [good.call_id]


async def test_a_group_on_a_locked_file_writes_nothing_and_fails_every_request(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ev.sqlite"
    store = SQLiteStore(path)
    group = GroupCommit(store.write_now)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        futures = [group.add(SQLiteStore.recording(_row(f"c{i}"))) for i in range(4)]
        assert await asyncio.gather(*futures) == [False] * 4
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.rows() == []


async def test_a_write_that_raises_fails_every_request_of_its_group() -> None:
    def write(statements: Sequence[Statement]) -> bool:
        raise StoreUnavailable("planted")

    group = GroupCommit(write)
    futures = [group.add(("SELECT 1", ())) for _ in range(3)]
    assert await asyncio.gather(*futures) == [False, False, False]


# -- through the gateway ---------------------------------------------------------------------


async def _burst(gw: Gateway, world: World, convs: list[str]) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=gw.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        return list(
            await asyncio.gather(
                *(
                    client.post(
                        "/v1/chat/completions",
                        json={
                            "model": "sim-deepseek",
                            "messages": [{"role": "user", "content": f"[{c}] hi"}],
                            "tools": CHAT_TOOLS,
                        },
                        headers=world.headers(c, world.token(c, "chat/sim-deepseek", "low")),
                    )
                    for c in convs
                )
            )
        )


async def test_concurrent_calls_write_every_row_through_the_group(
    world: World, tmp_path: Path
) -> None:
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store)
    convs = [new_conv() for _ in range(6)]
    for c in convs:  # the authorisation runs on the event loop
        store.fix_effort(c, "low")
        store.fix_intent(c, "low")
    try:
        responses = await _burst(gw, world, convs)
    finally:
        await gw.aclose()
    assert [r.status_code for r in responses] == [200] * 6
    assert gw._group.statements == 12  # each call's pending row and its completion
    for c in convs:
        assert [x.outcome for x in store.rows(c)] == ["forwarded"]


async def test_a_failed_group_sends_each_call_the_waiting_way_row_before_call(
    world: World, tmp_path: Path
) -> None:
    """Every group fails on the event loop: each call's pending row is then committed by a
    store thread, before that call goes upstream (the upstream has not seen it yet)."""
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store)
    convs = [new_conv() for _ in range(4)]
    for c in convs:
        store.fix_effort(c, "low")
        store.fix_intent(c, "low")
    seen_before: dict[str, int] = {}
    record = store.record

    def spy(row: EvidenceRow) -> None:  # the waiting way, on a store thread
        assert row.conversation_id is not None
        seen_before[row.conversation_id] = len(world.recorder.find(row.conversation_id))
        record(row)

    def fails(statements: Sequence[Statement]) -> bool:
        raise StoreUnavailable("planted: the group cannot commit")

    store.record = spy  # type: ignore[method-assign]  # (instance only: writes_now stays)
    store.write_now = fails  # type: ignore[method-assign]
    try:
        responses = await _burst(gw, world, convs)
    finally:
        await gw.aclose()
    assert [r.status_code for r in responses] == [200] * 4
    assert seen_before == dict.fromkeys(convs, 0)
    for c in convs:
        assert [x.outcome for x in store.rows(c)] == ["forwarded"]
        assert len(world.recorder.find(c)) == 1


# -- threads (the PostgreSQL store's writes) -------------------------------------------------


class Writes:
    """A ``write`` for :class:`ThreadGroupCommit` that records each group and can be held
    (``hold``) or made to fail (``fail``) per group, by its number."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.events: list[str] = []
        self.hold: dict[int, threading.Event] = {}
        self.fail: set[int] = set()

    def __call__(self, statements: Sequence[Statement]) -> None:
        n = len(self.groups)
        self.groups.append([sql for sql, _ in statements])
        if n in self.hold:
            self.hold[n].wait(30)
        if n in self.fail:
            self.events.append(f"failed {n}")
            raise StoreUnavailable("planted")
        self.events.append(f"committed {n}")


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, "not reached within 20 s"
        time.sleep(0.002)


def _threads(group: ThreadGroupCommit, writes: Writes, names: list[str]) -> dict[str, str]:
    """``a`` commits alone while its write is held; the others queue behind it meanwhile and
    commit together as the next group. What each thread got: ``ok`` or the error's type."""
    got: dict[str, str] = {}

    def run(name: str) -> None:
        try:
            group.commit((name, ()))
            got[name] = "ok"
        except StoreUnavailable as exc:
            got[name] = type(exc).__name__
        writes.events.append(f"returned {name}")

    first = threading.Thread(target=run, args=(names[0],))
    first.start()
    _until(lambda: len(writes.groups) == 1)  # a's group is being written (held)
    rest = [threading.Thread(target=run, args=(n,)) for n in names[1:]]
    for t in rest:
        t.start()
    _until(lambda: len(group._queued) == len(rest))
    writes.hold[0].set()
    if 1 in writes.hold:  # the second group is being written: give a thread released too
        _until(lambda: len(writes.groups) == 2)  # early the time to return (none may)
        deadline = time.monotonic() + 1
        while not any(e.startswith("returned") for e in writes.events[1:]):
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
        writes.hold[1].set()
    for t in [first, *rest]:
        t.join(30)
    return got


def test_threads_that_arrive_during_a_commit_commit_together_after_it() -> None:
    writes = Writes()
    writes.hold[0] = threading.Event()
    group = ThreadGroupCommit(writes)
    got = _threads(group, writes, ["a", "b", "c"])
    assert got == {"a": "ok", "b": "ok", "c": "ok"}
    assert writes.groups == [["a"], ["b", "c"]]
    assert (group.groups, group.statements) == (2, 3)
    # Nobody returns before the transaction holding its statement committed.
    ev = writes.events
    assert ev.index("committed 0") < ev.index("returned a")
    assert ev.index("committed 1") < min(ev.index("returned b"), ev.index("returned c"))


def test_a_failed_thread_group_fails_every_thread_of_it_only() -> None:
    writes = Writes()
    writes.hold[0] = threading.Event()
    writes.hold[1] = threading.Event()
    writes.fail.add(1)
    group = ThreadGroupCommit(writes)
    got = _threads(group, writes, ["a", "b", "c", "d"])
    ev = writes.events  # nobody of the failed group returned before it failed
    assert all(ev.index("failed 1") < ev.index(f"returned {n}") for n in "bcd")
    assert got == {
        "a": "ok",
        "b": "StoreUnavailable",
        "c": "StoreUnavailable",
        "d": "StoreUnavailable",
    }
    assert writes.groups == [["a"], ["b", "c", "d"]]
    group.commit(("e", ()))  # the group is free again afterwards
    assert writes.groups[-1] == ["e"]


@pytest.fixture
def dsn() -> Iterator[str]:
    d = pg.fresh_dsn()
    yield d
    pg.drop(d)


def test_postgres_rows_of_concurrent_threads_all_land(dsn: str) -> None:
    from reasonwire.govern.stores import PostgresEvidenceStore

    store = PostgresEvidenceStore(dsn, max_size=4)
    rows = [_row("pg") for _ in range(24)]
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(store.record, rows))
        for r in rows:
            r.outcome = "forwarded"
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(store.complete, rows))
        stored = store.rows("pg")
    finally:
        store.close()
    assert sorted(r.call_id for r in stored) == sorted(r.call_id for r in rows)
    assert {r.outcome for r in stored} == {"forwarded"}
    assert store.group.statements == 48


def test_a_postgres_group_with_a_failing_statement_leaves_nothing(dsn: str) -> None:
    """Three rows in one transaction, the second one not storable (a text where the table
    holds a number): the transaction fails whole; the first row is not left behind."""
    from reasonwire.govern.stores import PostgresEvidenceStore

    store = PostgresEvidenceStore(dsn, max_size=2)
    good, bad, last = _row("pg"), _row("pg"), _row("pg")
    bad.ts = "not a time"  # type: ignore[assignment]
    try:
        with pytest.raises(StoreUnavailable):
            store._write([store.recording(r) for r in (good, bad, last)])
        assert store.rows("pg") == []
        store._write([store.recording(good)])
        assert [r.call_id for r in store.rows("pg")] == [good.call_id]
    finally:
        store.close()


async def test_a_write_queued_in_the_outbox_before_the_tick_ends_stops_the_group(
    world: World,
) -> None:
    """The outbox is written first (ordering): a write that joins it after a row joined the
    group, before the group commits, sends the whole group the waiting way (nothing of it is
    committed on the event loop ahead of the outbox)."""
    store = SQLiteStore()
    gw = Gateway(world.gateway.registry, POLICY, world.ring, store)
    gw._stop.set()  # no background flusher
    row = _row(new_conv())
    try:
        joined = gw._group.add(SQLiteStore.recording(row))
        gw._outbox.append(lambda: None)  # another request's failed write, queued now
        assert await joined is False
        assert store.rows() == []
    finally:
        gw._outbox.clear()
        await gw.aclose()


def test_call_ids_are_time_ordered_version_7_uuids() -> None:
    """RFC 9562 UUIDs of version 7 (the version nibble 7, the variant bits 10), each one new:
    a gateway call's and a row made without one (the LiteLLM hook's)."""
    import uuid

    from reasonwire.govern.gateway import _Facts

    ids = [_Facts.arrived("chat").call_id for _ in range(1000)]
    ids += [EvidenceRow(outcome="refused", conversation_id=None).call_id for _ in range(1000)]
    assert len(set(ids)) == len(ids)
    for cid in ids:
        u = uuid.UUID(hex=cid)
        assert (u.hex, u.version, u.variant) == (cid, 7, uuid.RFC_4122)


async def _stream(gw: Gateway, world: World, conv: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=gw.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        return await client.post(
            "/v1/chat/completions",
            json={
                "model": "sim-deepseek",
                "messages": [{"role": "user", "content": f"[{conv}] hi"}],
                "stream": True,
            },
            headers=world.headers(conv, world.token(conv, "chat/sim-deepseek", "low")),
        )


async def test_a_streams_row_is_completed_through_the_group(world: World, tmp_path: Path) -> None:
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store)
    conv = new_conv()
    try:
        r = await _stream(gw, world, conv)
    finally:
        await gw.aclose()
    assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n")
    assert gw._group.statements == 2  # its pending row and its completion
    ((outcome, state),) = [(x.outcome, x.stream_state) for x in store.rows(conv)]
    assert (outcome, state) == ("forwarded", "complete")


async def test_a_streams_row_the_group_cannot_commit_is_completed_by_a_thread(
    world: World, tmp_path: Path
) -> None:
    upstream = world.gateway.registry.routes["chat/sim-deepseek"].upstream_base_url
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(make_registry(upstream), POLICY, world.ring, store)
    conv = new_conv()
    completed: list[str] = []
    complete = store.complete

    def spy(row: EvidenceRow) -> None:  # the waiting way, on a store thread
        completed.append(row.outcome)
        complete(row)

    def fails(statements: Sequence[Statement]) -> bool:
        raise StoreUnavailable("planted: the group cannot commit")

    store.complete = spy  # type: ignore[method-assign]  # (instance only: writes_now stays)
    store.write_now = fails  # type: ignore[method-assign]
    try:
        r = await _stream(gw, world, conv)
    finally:
        await gw.aclose()
    assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n")
    assert completed == ["forwarded"]
    ((outcome, state),) = [(x.outcome, x.stream_state) for x in store.rows(conv)]
    assert (outcome, state) == ("forwarded", "complete")
