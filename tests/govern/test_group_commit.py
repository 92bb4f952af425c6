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
from collections.abc import Sequence
from pathlib import Path

import httpx

from reasonwire.errors import StoreUnavailable
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore, Statement
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.group_commit import GroupCommit
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
