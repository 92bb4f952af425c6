"""Evidence first under store faults, with a real PostgreSQL server of the suite's own (started
here, stopped and restarted by the tests): fast shutdown and SIGKILL, before a call, during a
JSON call, during a stream; two gateway replicas on the one database; concurrent
conversations.

What is counted, at a recording upstream that checks the database itself on each call's
arrival: every upstream call finds a committed row of its conversation for it (the n-th call
of a conversation finds at least n rows that are not refusals). A call can arrive just after
the database died (its row committed a moment before, in a concurrent phase); the upstream
cannot ask then, and checks once the database is back: the rows are there (a committed row
survives a crash; nothing after the call inserts a row that is not a refusal, only
completions update them), and must number at least n. At the clients:
every refusal is a 503 with the configured ``Retry-After`` (the bound is the configured
``StoreSettings.timeout``; no timing is asserted), no 500 ever, and once the database is back
(and the replicas' outboxes are written) no request fails.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.gateway import CONVERSATION_HEADER, Gateway, StoreSettings
from reasonwire.govern.stores import PostgresEvidenceStore, PostgresVault
from reasonwire.sim.app import build_app
from tests import pg
from tests.govern.conftest import (
    POLICY,
    RUNTIME,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    ThreadServer,
    make_registry,
)

RETRY_AFTER = 1
SETTINGS = StoreSettings(retry_after=RETRY_AFTER, flush_interval=0.05)  # the default 2 s bound
ROUTE, MODEL = "chat/sim-deepseek", "sim-deepseek"
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
CONV = re.compile(r"\[(conv-[0-9a-f]{12})\]")


# -- a PostgreSQL server the tests may stop ---------------------------------------------------


class Database:
    """This suite's own server (the shared one of tests/pg.py serves other tests)."""

    def __init__(self) -> None:
        pg.server()  # skips when PostgreSQL or psycopg is missing
        self.srv = pg._start()
        self.dsn = self.srv.dsn()
        self.stops = 0

    def _cmd(self) -> tuple[list[str], Any]:
        bindir = pg._bindir()
        assert bindir is not None
        prefix, _, _ = pg._as_user()
        args = [
            *prefix,
            str(bindir / "postgres"),
            "-D",
            str(self.srv.datadir / "data"),
            "-p",
            str(self.srv.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "unix_socket_directories=",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=100",
        ]
        return args, open(self.srv.datadir / "server.log", "ab")

    def stop(self, how: str) -> None:
        """``fast``: SIGINT (fast shutdown: sessions ended with AdminShutdown); ``kill``:
        SIGKILL to the server's whole process group (a crash: no goodbye to clients)."""
        proc = self.srv.proc
        if how == "fast":
            proc.send_signal(signal.SIGINT)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if how == "kill":  # the backends die with the group; wait until none answers
            self._wait(up=False)
        self.stops += 1

    def start(self) -> None:
        args, log = self._cmd()
        self.srv.proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._wait(up=True)

    def _wait(self, up: bool) -> None:
        import psycopg

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self.dsn, connect_timeout=2):
                    if up:
                        return
            except psycopg.OperationalError:
                if not up:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"postgres did not come {'up' if up else 'down'}")

    def close(self) -> None:
        self.srv.stop()


# -- the recording upstream -------------------------------------------------------------------


@dataclass
class Arrival:
    conv: str
    n: int
    rows: int | None  # committed non-refusal rows of the conversation at arrival (None: unknown)


@dataclass
class Holds:
    """A call whose body names ``[hold]`` waits at the upstream (JSON: before answering;
    stream: after its first body bytes) until released; ``arrived`` says it is there."""

    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class Verifier:
    """ASGI middleware before the simulator: counts every call per conversation and checks,
    on its own connection, that the database holds a committed row for it."""

    def __init__(self, app: Any, dsn: str) -> None:
        self.app, self.dsn = app, dsn
        self.arrivals: list[Arrival] = []
        self.holds = Holds()
        self.unverified_at_arrival = 0
        self._n: dict[str, int] = {}
        self._lock = threading.Lock()

    def _committed(self, conv: str) -> int | None:
        import psycopg

        try:
            with psycopg.connect(self.dsn, connect_timeout=2, autocommit=True) as conn:
                found = conn.execute(
                    "SELECT count(*) FROM evidence WHERE conversation_id = %s"
                    " AND outcome <> 'refused'",
                    (conv,),
                ).fetchone()
        except psycopg.Error:
            return None
        return int(found[0]) if found else 0

    def violations(self) -> list[Arrival]:
        """Calls without a committed row: at arrival, or (when the database could not be
        asked then) once it is back."""
        with self._lock:
            arrivals = list(self.arrivals)
        for a in arrivals:
            if a.rows is None:
                self.unverified_at_arrival += 1
                a.rows = self._committed(a.conv)
        return [a for a in arrivals if a.rows is None or a.rows < a.n]

    def calls(self) -> int:
        with self._lock:
            return len(self.arrivals)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        raw = b"".join(chunks)
        text = raw.decode()
        found = CONV.search(text)
        conv = found.group(1) if found else "?"
        with self._lock:
            n = self._n[conv] = self._n.get(conv, 0) + 1
        rows = await asyncio.to_thread(self._committed, conv)
        with self._lock:
            self.arrivals.append(Arrival(conv, n, rows))
        hold = "[hold]" in text and n == 1
        stream = '"stream":true' in text.replace(" ", "")
        if hold and not stream:
            self.holds.arrived.set()
            await asyncio.to_thread(self.holds.release.wait, 60)
        sent = False
        body_seen = False

        async def replay() -> Any:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def relay(message: Any) -> None:
            nonlocal body_seen
            await send(message)
            if hold and stream and message["type"] == "http.response.body" and not body_seen:
                body_seen = bool(message.get("body"))
                if body_seen:
                    self.holds.arrived.set()
                    await asyncio.to_thread(self.holds.release.wait, 60)

        await self.app(scope, replay, relay)


# -- the world: one database, two replicas ----------------------------------------------------


@dataclass
class Faults:
    db: Database
    upstream: Verifier
    gateways: list[Gateway]
    urls: list[str]
    ring: KeyRing
    stores: list[PostgresEvidenceStore]
    statuses: list[int] = field(default_factory=list)
    matrix: list[str] = field(default_factory=list)
    after_restart: list[int] = field(default_factory=list)

    def mark(self) -> tuple[int, int, int]:
        return len(self.statuses), self.upstream.calls(), len(self.after_restart)

    def note(self, fault: str, moment: str, since: tuple[int, int, int]) -> None:
        """One line of the fault matrix: what happened to the requests since ``since``."""
        got = self.statuses[since[0] :]
        after = self.after_restart[since[2] :]
        self.matrix.append(
            f"{fault:5} | {moment:34} | requests {len(got):3} | 200 {got.count(200):3} |"
            f" 503+Retry-After {got.count(503):3} | 500 {got.count(500)} |"
            f" upstream calls {self.upstream.calls() - since[1]:3} |"
            f" calls without a committed row {len(self.upstream.violations())} |"
            f" after restart {len(after)} requests, {sum(s != 200 for s in after)} failed"
        )

    def token(self, conv: str) -> str:
        gw = self.gateways[0]
        return project(
            gw.registry,
            gw.policy,
            self.ring,
            conversation_id=conv,
            task_id="task-" + conv,
            runtime_id=RUNTIME[0],
            runtime_version=RUNTIME[1],
            route_id=ROUTE,
            requested="low",
        )

    def post(self, replica: int, conv: str, messages: list[Any], stream: bool) -> httpx.Response:
        body: dict[str, Any] = {"model": MODEL, "messages": messages, "tools": TOOLS}
        if stream:
            body["stream"] = True
        headers = {HEADER: self.token(conv), CONVERSATION_HEADER: conv}
        r = httpx.post(
            self.urls[replica] + "/v1/chat/completions", json=body, headers=headers, timeout=60
        )
        self.statuses.append(r.status_code)
        return r

    def drained(self) -> None:
        """Wait until both replicas' outboxes are written (bounded; not a timing check)."""
        deadline = time.monotonic() + 30
        while any(g.outbox_size() for g in self.gateways):
            assert time.monotonic() < deadline, [g.outbox_size() for g in self.gateways]
            time.sleep(0.02)


@pytest.fixture(scope="module")
def faults() -> Iterator[Faults]:
    db = Database()
    mp = pytest.MonkeyPatch()
    mp.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    name = "f_" + uuid.uuid4().hex[:12]
    import psycopg

    with psycopg.connect(db.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    dsn = db.srv.dsn(name)
    upstream = Verifier(build_app(seed=0), dsn)
    ring = KeyRing.generate("k1")
    opened: list[Any] = []
    servers: list[ThreadServer] = []
    try:
        with ThreadServer(upstream) as up:
            gws, stores = [], []
            for _ in range(2):
                store = PostgresEvidenceStore(dsn, timeout=1.0)
                vault = PostgresVault(dsn, timeout=1.0)
                opened += [store, vault]
                stores.append(store)
                gw = Gateway(
                    make_registry(up.url + "/v1"),
                    POLICY,
                    ring,
                    store,
                    vault=vault,
                    store_settings=SETTINGS,
                )
                gws.append(gw)
                servers.append(ThreadServer(gw.app).__enter__())
            world = Faults(db, upstream, gws, [s.url for s in servers], ring, stores)
            yield world
            print("\nfault matrix (fault | moment | outcome):")
            print("\n".join(world.matrix))
            print(
                f"upstream calls checked after the restart (db down at arrival):"
                f" {upstream.unverified_at_arrival}"
            )
    finally:
        for s in servers:
            s.__exit__(None, None, None)
        for o in opened:
            o.close()
        db.close()
        mp.undo()


def new_conv() -> str:
    return "conv-" + uuid.uuid4().hex[:12]


def first_turn(conv: str, hold: bool = False) -> list[Any]:
    mark = " [hold]" if hold else ""
    return [{"role": "user", "content": f"[{conv}]{mark} Find the population of Lyon."}]


def tool_message(r: httpx.Response, stream: bool) -> dict[str, Any]:
    """The assistant message as the client received it (JSON, or assembled from chunks)."""
    if not stream:
        msg: dict[str, Any] = r.json()["choices"][0]["message"]
        return {k: v for k, v in msg.items() if v is not None}
    import json

    content, calls = "", {}
    for line in r.text.splitlines():
        if not line.startswith("data: {"):
            continue
        chunk = json.loads(line[6:])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                c = calls.setdefault(
                    tc["index"],
                    {
                        "id": tc.get("id"),
                        "type": "function",
                        "function": {"name": "", "arguments": ""},
                    },
                )
                fn = tc.get("function") or {}
                c["function"]["name"] += fn.get("name") or ""
                c["function"]["arguments"] += fn.get("arguments") or ""
    out: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        out["tool_calls"] = [calls[i] for i in sorted(calls)]
    return out


def second_turn(conv: str, first: list[Any], answer: dict[str, Any]) -> list[Any]:
    call_id = answer["tool_calls"][0]["id"]
    return [*first, answer, {"role": "tool", "tool_call_id": call_id, "content": "Lyon: 522k"}]


def assert_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers["retry-after"] == str(RETRY_AFTER)
    assert r.json()["error"]["code"] == "store-unavailable"


def assert_clean_stream(r: httpx.Response) -> None:
    assert r.status_code == 200, r.text
    assert r.text.rstrip().endswith("data: [DONE]") and '"error"' not in r.text


def _until(cond: Any, what: str, limit: float = 60.0) -> None:
    """Wait for ``cond()`` (bounded: a deadline, never a duration the test relies on)."""
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def assert_invariants(f: Faults) -> None:
    assert f.upstream.violations() == []  # no upstream call without a committed row
    assert 500 not in f.statuses and all(s in (200, 503) for s in f.statuses), f.statuses


HOW = ["fast", "kill"]


@pytest.mark.parametrize("how", HOW)
def test_database_stopped_before_calls(faults: Faults, how: str) -> None:
    """Every call while the database is down is a 503 with Retry-After and reaches no
    upstream; the same calls after the restart all succeed at their first try."""
    since = faults.mark()
    old = new_conv()
    r1 = faults.post(0, old, first_turn(old), stream=False)
    assert r1.status_code == 200
    faults.db.stop(how)
    calls = faults.upstream.calls()
    fresh = [new_conv() for _ in range(2)]
    planned = [
        (replica, conv, msgs, stream)
        for replica in (0, 1)
        for conv, msgs, stream in (
            (fresh[replica], first_turn(fresh[replica]), False),
            (fresh[replica], first_turn(fresh[replica]), True),
            (old, second_turn(old, first_turn(old), tool_message(r1, False)), False),
        )
    ]
    for args in planned:
        assert_unavailable(faults.post(*args))
    assert faults.upstream.calls() == calls  # nothing went upstream
    faults.db.start()
    for replica, conv, msgs, stream in planned:
        r = faults.post(replica, conv, msgs, stream)
        faults.after_restart.append(r.status_code)
        assert r.status_code == 200, r.text
        if stream:
            assert_clean_stream(r)
    faults.drained()
    refused = [x for x in faults.stores[0].rows(old) if x.outcome == "refused"]
    assert {x.reason for x in refused} == {"store-unavailable"} and len(refused) == 2
    assert_invariants(faults)
    faults.note(how, "before a call (JSON+stream, 2 replicas)", since)


def _held(faults: Faults, replica: int, conv: str, stream: bool) -> dict[str, Any]:
    """Run a first turn that the upstream holds; return its response (in ``out``)."""
    faults.upstream.holds = Holds()
    out: dict[str, Any] = {}

    def run() -> None:
        out["r"] = faults.post(replica, conv, first_turn(conv, hold=True), stream)

    out["thread"] = threading.Thread(target=run)
    out["thread"].start()
    assert faults.upstream.holds.arrived.wait(30)
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", HOW)
def test_database_stopped_during_a_call(faults: Faults, how: str, stream: bool) -> None:
    """The row was committed before the call (the upstream found it); the database stops
    while the upstream answers. JSON: the answer's carriers cannot be kept, so it is
    withheld as a 503 (never a 500); the client asks again once the database is back, on the
    other replica. Stream: the client has the whole stream; the completion and the carriers
    wait in the replica's outbox; once written, the next turn on the other replica gets its
    carriers back. Either way the call's row ends completed, not pending."""
    since = faults.mark()
    conv = new_conv()
    held = _held(faults, 0, conv, stream)
    faults.db.stop(how)
    faults.upstream.holds.release.set()
    held["thread"].join(60)
    r = held["r"]
    # the call's completion (and its carriers) could not be written: they wait in replica
    # 0's outbox, and its row is still the pending one committed before the call
    assert faults.gateways[0].outbox_size() >= 1
    other = new_conv()
    assert_unavailable(faults.post(1, other, first_turn(other), stream=False))
    faults.db.start()
    if stream:
        assert_clean_stream(r)
        answer = tool_message(r, True)
    else:
        assert_unavailable(r)
        again = faults.post(1, conv, first_turn(conv), stream=False)  # the client asks again
        faults.after_restart.append(again.status_code)
        assert again.status_code == 200, again.text
        answer = tool_message(again, False)
    faults.drained()
    r2 = faults.post(1, conv, second_turn(conv, first_turn(conv), answer), stream=False)
    faults.after_restart.append(r2.status_code)
    assert r2.status_code == 200, r2.text
    rows = faults.stores[1].rows(conv)
    assert "pending" not in [x.outcome for x in rows]
    assert rows[-1].carriers_reattached == 1  # the carriers came back across replicas
    if stream:
        assert [(x.outcome, x.stream_state) for x in rows] == [
            ("forwarded", "complete"),
            ("forwarded", None),
        ]
    else:
        assert [(x.outcome, x.reason) for x in rows] == [
            ("upstream-error", "answer withheld: store-unavailable"),
            ("forwarded", None),
            ("forwarded", None),
        ]
    assert_invariants(faults)
    moment = "during a stream" if stream else "during a JSON call"
    faults.note(how, moment + " (next turn: other replica)", since)


@pytest.mark.parametrize("how", HOW)
def test_concurrent_conversations_through_a_restart(faults: Faults, how: str) -> None:
    """Conversations on both replicas at once while the database stops and comes back; a
    client retries a 503 (the bound is the configured timeout). No 500, no upstream call
    without a row, and every request made after the restart succeeds first time."""
    since = faults.mark()
    stop = threading.Event()
    restarted = threading.Event()
    after: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def ask(replica: int, conv: str, msgs: list[Any]) -> httpx.Response:
        while True:
            was_back = restarted.is_set()
            r = faults.post(replica, conv, msgs, stream=False)
            if was_back:
                with lock:
                    after.append(r.status_code)
            if r.status_code != 503:
                return r
            assert_unavailable(r)
            time.sleep(0.02)  # a client would wait Retry-After; the test need not

    def worker(i: int) -> None:
        try:
            done_after = 0
            while done_after < 2:
                counts = restarted.is_set()
                conv = new_conv()
                a = ask(i % 2, conv, first_turn(conv))
                assert a.status_code == 200, a.text
                b = ask(
                    (i + 1) % 2, conv, second_turn(conv, first_turn(conv), tool_message(a, False))
                )
                assert b.status_code == 200, b.text
                if counts:
                    done_after += 1
                if stop.is_set():
                    return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    begun = len(faults.statuses)
    _until(lambda: len(faults.statuses) >= begun + 6, "traffic under way")
    faults.db.stop(how)
    down = len(faults.statuses)
    _until(lambda: 503 in faults.statuses[down:], "a request refused while the database is down")
    faults.db.start()
    faults.drained()
    restarted.set()
    for t in threads:
        t.join(120)
    stop.set()
    assert not errors, errors
    assert after and set(after) == {200}, after  # after the restart: 0 failed requests
    faults.after_restart += after
    assert_invariants(faults)
    faults.note(how, "under load (6 clients, 2 replicas)", since)
