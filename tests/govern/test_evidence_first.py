"""Evidence first, unit by unit: the row is committed before the upstream call; a store that
cannot commit is a 503 with Retry-After within the configured bound and no upstream call; the
bound is the sum of store waits of one request (a fake clock decides its boundary); a
relayed stream's row says how it ended; a pooled PostgreSQL connection the server closed is
replaced without failing the work. The fault suite with a real database stopping and
restarting is tests/govern/test_store_faults.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.errors import StaleConnection, StoreUnavailable
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.gateway import Gateway, StoreSettings
from reasonwire.govern.upstream import UpstreamPool
from tests import pg
from tests.govern.conftest import POLICY, ThreadServer, World, make_registry, new_conv
from tests.govern.hostile import (
    KEY_ENV,
    HostileWorld,
    Reply,
    chat_text_stream,
    hostile_world,
    user_body,
)
from tests.govern.hostile import POLICY as HOSTILE_POLICY
from tests.govern.hostile import make_registry as hostile_registry
from tests.govern.hostile import new_conv as hostile_conv

ROUTE = "chat/sim-chat-all"


class Gate(SQLiteStore):
    """A SQLite store whose writes (``record`` / ``complete``) can be made to hang until
    released, or to fail; fixing efforts and reading rows work as usual."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        super().__init__(path)
        self.mode = "ok"
        self.release = threading.Event()
        self.writes = 0
        self.order: list[str] = []
        self.seen_upstream: Any = lambda: 0
        """Counts the upstream calls so far (a test sets it): noted with each write."""

    def _gate(self) -> None:
        self.writes += 1
        if self.mode == "hang":
            self.release.wait(30)
        elif self.mode == "fail":
            raise StoreUnavailable("planted: the database is down")

    def record(self, row: EvidenceRow) -> None:
        self._gate()
        self.order.append(f"record:{row.outcome}:{self.seen_upstream()}")
        super().record(row)

    def complete(self, row: EvidenceRow) -> None:
        self._gate()
        self.order.append(f"complete:{row.outcome}:{self.seen_upstream()}")
        super().complete(row)


class Local:
    def __init__(
        self, world: World, store: Gate, settings: StoreSettings, pool: Any = None
    ) -> None:
        self.world = world
        upstream = world.gateway.registry.routes[ROUTE].upstream_base_url
        self.store = store
        self.gw = Gateway(
            make_registry(upstream),
            POLICY,
            world.ring,
            store,
            store_settings=settings,
            upstream=pool,
        )

    async def post(self, conv: str, stream: bool = False) -> httpx.Response:
        body: dict[str, Any] = {
            "model": "sim-chat-all",
            "messages": [{"role": "user", "content": f"[{conv}] hi"}],
        }
        if stream:
            body["stream"] = True
        transport = httpx.ASGITransport(app=self.gw.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            return await client.post(
                "/v1/chat/completions",
                json=body,
                headers=self.world.headers(conv, self.world.token(conv, ROUTE, "low")),
            )


@pytest.fixture
async def local(world: World) -> AsyncIterator[Local]:
    here = Local(world, Gate(), StoreSettings(timeout=1.0, retry_after=7, flush_interval=0.01))
    yield here
    here.store.release.set()
    await here.gw.aclose()


async def test_the_row_is_committed_before_the_call_and_completed_after(local: Local) -> None:
    conv = new_conv()
    local.store.seen_upstream = lambda: len(local.world.recorder.find(conv))
    r = await local.post(conv)
    assert r.status_code == 200
    # committed with 0 upstream calls seen, completed after the 1 call
    assert local.store.order == ["record:pending:0", "complete:forwarded:1"]
    (row,) = local.store.rows(conv)
    assert row.outcome == "forwarded" and row.stream_state is None
    assert len(local.world.recorder.find(conv)) == 1


@pytest.mark.parametrize("mode", ["hang", "fail"])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_store_that_cannot_commit_is_a_503_and_no_upstream_call(
    local: Local, mode: str, stream: bool
) -> None:
    """The write hangs past the bound (1 s here; the test would hang, not fail slowly, if
    the bound did not hold) or fails at once: 503, Retry-After as configured (7), the
    gateway's own error object, nothing upstream."""
    conv = new_conv()
    local.store.mode = mode
    r = await local.post(conv, stream)
    assert r.status_code == 503 and r.headers["retry-after"] == "7"
    assert r.json()["error"]["code"] == "store-unavailable"
    assert local.world.recorder.find(conv) == []
    # Once the store answers again, the refusal is written from the outbox and a pending
    # row committed too late (the hanging write) is completed as that refusal.
    local.store.mode = "ok"
    local.store.release.set()
    deadline = time.monotonic() + 10
    while local.gw.outbox_size() or local.store.rows(conv)[:1] == []:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    while [x.outcome for x in local.store.rows(conv)] != ["refused"]:
        assert time.monotonic() < deadline, local.store.rows(conv)
        time.sleep(0.01)
    (row,) = local.store.rows(conv)
    assert row.reason == "store-unavailable"
    r2 = await local.post(conv, stream)  # the store is back: the same call goes through
    assert r2.status_code == 200 and len(local.world.recorder.find(conv)) == 1


class Slow(SQLiteStore):
    """Fixing an effort takes ``cost`` seconds of a fake clock."""

    def __init__(self, clock: list[float], cost: float) -> None:
        super().__init__()
        self.clock, self.cost = clock, cost

    def fix_effort(self, conversation_id: str, level: str) -> str:
        self.clock[0] += self.cost
        return super().fix_effort(conversation_id, level)

    def complete(self, row: EvidenceRow) -> None:
        super().complete(row)


@pytest.mark.parametrize(("cost", "status"), [(10.0, 503), (9.0, 200)])
async def test_the_bound_is_the_sum_of_one_requests_store_waits(
    world: World, cost: float, status: int
) -> None:
    """timeout=10 s of a fake clock: a first store step that took all of it leaves nothing
    for the row's commit (503, no upstream call); one that took 9 s leaves 1 s."""
    clock = [0.0]
    settings = StoreSettings(timeout=10.0, clock=lambda: clock[0])
    here = Local(world, Gate(), settings)
    here.store = Slow(clock, cost)  # type: ignore[assignment]
    here.gw.store = here.store
    conv = new_conv()
    try:
        r = await here.post(conv)
    finally:
        await here.gw.aclose()
    assert r.status_code == status
    assert len(world.recorder.find(conv)) == (status == 200)


@pytest.mark.parametrize(
    "kw",
    [
        {"timeout": 0},
        {"timeout": -1},
        {"timeout": float("inf")},
        {"retry_after": 0},
        {"retry_after": 3601},
        {"workers": 0},
        {"outbox": 0},
        {"flush_interval": 0},
    ],
)
def test_store_settings_out_of_range_are_refused(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        StoreSettings(**kw)


def test_store_settings_at_their_limits_are_accepted() -> None:
    StoreSettings(timeout=1e-3, retry_after=1, workers=1, outbox=1)
    StoreSettings(retry_after=3600)
    assert StoreSettings().timeout <= 2.0  # the default bound


# -- a relayed stream's row says how it ended --------------------------------------------------


@pytest.fixture(scope="module")
def hw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    with hostile_world(tmp_path_factory.mktemp("ef")) as world:
        yield world


CHAT = "chat/h-chat"


@pytest.mark.parametrize(
    ("reply", "state", "outcome"),
    [
        (Reply(chunks=chat_text_stream(["a", "b"])), "complete", "forwarded"),
        (
            Reply(chunks=chat_text_stream(["a"], done=False), cut=True),
            "cut-by-upstream",
            "upstream-error",
        ),
        (
            Reply(chunks=[*chat_text_stream(["a"], done=False), b'data: {"choices": [\n\n']),
            "malformed",
            "upstream-error",
        ),
    ],
    ids=["complete", "upstream-cut", "malformed"],
)
def test_stream_state_is_recorded(hw: HostileWorld, reply: Reply, state: str, outcome: str) -> None:
    conv = hostile_conv()
    reply = Reply(chunks=reply.chunks, cut=reply.cut, content_type="text/event-stream")
    hw.upstream.plan(conv, reply)
    got = hw.post(CHAT, conv, user_body(CHAT, conv, stream=True))
    assert got.status == 200
    (row,) = hw.rows(conv)
    assert (row.stream_state, row.outcome) == (state, outcome)
    if state != "complete":
        assert '"error"' in got.raw.decode()  # the dialect's error event, not a clean end


class Paused:
    """An upstream that sends a stream's first events, then waits until ``go`` is set
    before the rest (so a client can leave while the stream is still under way)."""

    def __init__(self) -> None:
        self.go = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        events = chat_text_stream(["a", "b", "c"])
        hdrs = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": hdrs})
        await send({"type": "http.response.body", "body": events[0], "more_body": True})
        await asyncio.to_thread(self.go.wait, 30)
        for piece in events[1:]:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def test_a_client_leaving_mid_stream_is_recorded_as_such(tmp_path: Path) -> None:
    mp = pytest.MonkeyPatch()
    mp.setenv(KEY_ENV, "sk-paused-upstream-key-0000000000")
    paused = Paused()
    store = SQLiteStore(tmp_path / "e.sqlite")
    try:
        with ThreadServer(paused) as up:
            gw = Gateway(
                hostile_registry(up.url + "/v1"), HOSTILE_POLICY, KeyRing.generate("k"), store
            )
            world = HostileWorld(gw, None, gw.keys, "", store, "")  # type: ignore[arg-type]
            conv = hostile_conv()
            with ThreadServer(gw.app) as gsrv:
                with (
                    httpx.Client(base_url=gsrv.url, timeout=30) as client,
                    client.stream(
                        "POST",
                        "/v1/chat/completions",
                        json=user_body(CHAT, conv, stream=True),
                        headers=world.headers(conv, CHAT),
                    ) as resp,
                ):
                    assert resp.status_code == 200
                    next(resp.iter_raw())  # the first bytes, then the client goes
                (row,) = world.rows(conv)  # completed while the upstream still waits
                paused.go.set()
    finally:
        paused.go.set()
        store.close()
        mp.undo()
    assert (row.stream_state, row.outcome) == ("cut-by-client", "upstream-error")
    assert row.reason == "the client left mid-stream"


# -- PostgreSQL: a connection the server closed is replaced -----------------------------------


@pytest.fixture
def dsn() -> Iterator[str]:
    d = pg.fresh_dsn()
    yield d
    pg.drop(d)


def test_a_stale_pooled_connection_is_replaced_without_failing(dsn: str) -> None:
    """The server ends every session of the database (as a restart does); the next writes
    find their idle connections broken, retry on fresh ones, and succeed."""
    import psycopg

    from reasonwire.govern.stores import PostgresEvidenceStore

    store = PostgresEvidenceStore(dsn, max_size=2)
    try:
        store.record(EvidenceRow(outcome="refused", conversation_id="s", reason="a"))
        opened = store.connections.opened
        name = dsn.rsplit("/", 1)[1]
        with psycopg.connect(pg.server().dsn(), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        store.record(EvidenceRow(outcome="refused", conversation_id="s", reason="b"))
        assert [r.reason for r in store.rows("s")] == ["a", "b"]
        assert store.connections.opened > opened  # a fresh connection replaced the stale one
    finally:
        store.close()


def test_an_unreachable_database_is_store_unavailable_not_a_hang(dsn: str) -> None:
    from reasonwire.govern.stores import PgConnections

    conns = PgConnections("postgresql://rw@127.0.0.1:1/none", max_size=1, timeout=0.2)
    with pytest.raises(StoreUnavailable):
        conns.run(lambda conn: conn.execute("SELECT 1"))
    conns.close()


async def test_queued_refusal_rows_never_hold_a_request_up(local: Local) -> None:
    """After a long outage the outbox may hold many refusal rows; a request writes at most
    16 of them on its path (the background flusher writes the rest), after every queued
    write of a real call. The flusher is held off here to count what the request did."""
    ran: list[str] = []
    local.gw._stop.set()  # no background flusher: only request paths write
    local.gw._queue([lambda: ran.append("refusal")] * 100, refusal=True)
    local.gw._queue([lambda: ran.append("call")] * 3)
    conv = new_conv()
    r = await local.post(conv)
    assert r.status_code == 200
    # three store steps flush (authorise, commit the row, complete it): 16 refusals each,
    # after the 3 writes of calls
    assert ran == ["call"] * 3 + ["refusal"] * 48
    assert local.gw.outbox_size() == 100 - 48


# -- a stale keep-alive connection: sent again under a new row ---------------------------------


class StaleOnce(UpstreamPool):
    """The first call fails as a stale keep-alive connection does (nothing read)."""

    def __init__(self) -> None:
        super().__init__()
        self.stale = 1

    async def post(self, url: str, body: bytes, headers: Any, *, retry_stale: bool = True) -> Any:
        assert retry_stale is False  # the gateway retries itself, one row per attempt
        if self.stale:
            self.stale -= 1
            raise StaleConnection("reused upstream connection closed: IncompleteReadError")
        return await super().post(url, body, headers, retry_stale=retry_stale)


async def test_a_call_sent_again_after_a_stale_connection_has_a_row_per_attempt(
    world: World,
) -> None:
    here = Local(world, Gate(), StoreSettings(), pool=StaleOnce())
    conv = new_conv()
    here.store.seen_upstream = lambda: len(world.recorder.find(conv))
    try:
        r = await here.post(conv)
    finally:
        await here.gw.aclose()
    assert r.status_code == 200
    assert here.store.order == [
        "record:pending:0",
        "complete:upstream-error:0",
        "record:pending:0",  # the second attempt's own row, before its bytes go out
        "complete:forwarded:1",
    ]
    first, second = here.store.rows(conv)
    assert first.call_id != second.call_id and "sent again" in (first.reason or "")


async def test_the_pool_reports_a_stale_connection_instead_of_resending() -> None:
    """A raw server that answers one request on a connection, then closes the connection
    on the next: without ``retry_stale`` the pool says so and sends nothing again."""
    requests = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal requests
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(2)
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            requests += 1
            if requests == 2:
                break  # closes the reused connection without answering
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = UpstreamPool()
    url = f"http://127.0.0.1:{port}/v1/x"
    try:
        first = await pool.post(url, b"{}", {})
        assert await first.read() == b"{}"
        await first.aclose()
        with pytest.raises(StaleConnection):
            await pool.post(url, b"{}", {}, retry_stale=False)
        assert requests == 2  # sent once, not again
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()


async def test_a_locked_sqlite_file_is_a_503_then_the_same_call_goes_through(
    world: World, tmp_path: Path
) -> None:
    """SQLite as the store: another process holds the file's write lock (the store would
    wait its busy timeout, 30 s, on a thread); the request is refused at the bound with
    503 and nothing goes upstream; once the lock is gone the same call succeeds."""
    import sqlite3

    path = tmp_path / "ev.sqlite"
    here = Local(world, SQLiteStore(path), StoreSettings(timeout=1.0, retry_after=3))  # type: ignore[arg-type]
    blocker = sqlite3.connect(path, isolation_level=None)
    conv = new_conv()
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        r = await here.post(conv)
        assert r.status_code == 503 and r.headers["retry-after"] == "3"
        assert world.recorder.find(conv) == []
        blocker.execute("ROLLBACK")
        deadline = time.monotonic() + 30
        while True:  # the refused call's own thread finishes its wait first
            r = await here.post(conv)
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            assert r.status_code == 503
        assert r.status_code == 200 and len(world.recorder.find(conv)) == 1
    finally:
        blocker.close()
        await here.gw.aclose()
