"""The evidence and vault stores on SQLite and on a real PostgreSQL server (tests/pg.py):
replicas share rows, vault entries and fixed efforts; fixing is atomic across replicas; vault
values come back byte for byte; migrations are idempotent and fail closed."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire.errors import ConfigError, PolicyRefusal
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore, check_intent
from reasonwire.govern.stores import (
    MemoryVault,
    PostgresEvidenceStore,
    PostgresVault,
    SQLiteVault,
    VaultStore,
    open_evidence_store,
    open_vault,
    pg_migrate,
)
from tests import pg


@pytest.fixture
def dsn() -> Iterator[str]:
    d = pg.fresh_dsn()
    yield d
    pg.drop(d)


Opener = Callable[..., Any]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Opener, Opener]]:
    """(open an evidence store, open a vault) on one shared database, per backend."""
    opened: list[Any] = []
    if request.param == "sqlite":
        path = tmp_path / "shared.sqlite"

        def store(**kw: Any) -> Any:
            opened.append(SQLiteStore(path))
            return opened[-1]

        def vault(**kw: Any) -> Any:
            opened.append(SQLiteVault(path, **kw))
            return opened[-1]

        yield store, vault
    else:
        d = pg.fresh_dsn()

        def store(**kw: Any) -> Any:
            opened.append(PostgresEvidenceStore(d, max_size=8, **kw))
            return opened[-1]

        def vault(**kw: Any) -> Any:
            opened.append(PostgresVault(d, **kw))
            return opened[-1]

        yield store, vault
    for s in opened:
        s.close()
    if request.param == "postgres":
        pg.drop(d)


# -- replicas share one database -------------------------------------------------------------


def test_two_instances_see_each_others_rows_efforts_and_vault(
    backend: tuple[Opener, Opener],
) -> None:
    open_store, open_vault_ = backend
    a, b = open_store(), open_store()
    row = EvidenceRow(
        outcome="forwarded",
        conversation_id="c1",
        stream=True,
        input_uncached=11,
        cache_read=None,
        cache_write=3,
        output_tokens=7,
        cost_status="estimated",
        cost_usd=0.000123,
        latency_ms=12.5,
        requested="auto",
        resolved="high",
    )
    a.record(row)
    b.record(EvidenceRow(outcome="refused", conversation_id="c2", reason="binding-expired"))
    assert b.rows("c1") == [row]  # every field, NULLs and booleans included
    assert [r.reason for r in a.rows()] == [None, "binding-expired"]
    assert a.fix_effort("c1", "high") == "high"
    assert b.fix_effort("c1", "low") == "high"
    assert b.fix_intent("c1", "auto") == "auto"
    assert a.fix_intent("c1", "high") == "auto"
    va, vb = open_vault_(), open_vault_()
    va.put("c1", [("k1", {"type": "reasoning", "text": "x"})])
    assert vb.get("c1", "k1") == {"type": "reasoning", "text": "x"}
    assert vb.get("c1", "nope") is None and vb.get("other", "k1") is None


def test_a_completion_rewrites_the_outcome_and_keeps_what_the_call_was_admitted_with(
    backend: tuple[Opener, Opener],
) -> None:
    """The completion, written by one replica and read by another, carries the completed
    row's outcome, reason, status, usage, cost and timing; the rest stays as recorded before
    the call (its identity - a completion naming another conversation does not move the row -
    and what it was admitted with: route, attempt)."""
    open_store, _ = backend
    a, b = open_store(), open_store()
    pending = EvidenceRow(outcome="pending", conversation_id="c1", route_id="r", attempt=1)
    a.record(pending)
    done = EvidenceRow(
        outcome="forwarded",
        conversation_id="elsewhere",
        call_id=pending.call_id,
        ts=pending.ts + 1,
        route_id="r2",
        attempt=2,
        stream=True,
        reason="why",
        status_code=200,
        usage_status="reported",
        input_uncached=1,
        cache_read=2,
        cache_write=3,
        output_tokens=5,
        reasoning_tokens=4,
        cost_status="estimated",
        cost_usd=0.5,
        latency_ms=3.5,
        ttfb_ms=1.5,
        stream_state="complete",
    )
    b.complete(done)
    expected = dataclasses.replace(
        done, conversation_id="c1", ts=pending.ts, route_id="r", attempt=1, stream=False
    )
    assert a.rows("c1") == [expected] and a.rows("elsewhere") == []


def test_a_pending_row_reads_back_as_recorded(backend: tuple[Opener, Opener]) -> None:
    """A row recorded with every field set (a refusal recorded whole) and one recorded
    before its call's end (its status, usage, cost and timing at their defaults) read back
    field for field as they were recorded, on another replica."""
    open_store, _ = backend
    a, b = open_store(), open_store()
    whole = EvidenceRow(
        outcome="refused",
        conversation_id="c2",
        reason="no",
        attempt=3,
        route_id="r",
        stream=True,
        controls_removed="effort",
        carriers_reattached=2,
        status_code=429,
        usage_status="reported",
        output_tokens=7,
        cost_status="confirmed",
        cost_usd=0.25,
        latency_ms=2.5,
        ttfb_ms=1.25,
        stream_state="cut-by-client",
    )
    pending = EvidenceRow(
        outcome="pending", conversation_id="c2", ts=whole.ts + 1, route_id="r", attempt=1
    )
    a.record(whole)
    a.record(pending)
    assert b.rows("c2") == [whole, pending]
    assert (pending.usage_status, pending.cost_status, pending.latency_ms) == (
        "unavailable",
        "unavailable",
        None,
    )


def test_check_intent_refuses_a_changed_intent_across_replicas(
    backend: tuple[Opener, Opener],
) -> None:
    open_store, _ = backend
    a, b = open_store(), open_store()
    check_intent(a, "c", "auto")
    check_intent(b, "c", "auto")
    with pytest.raises(PolicyRefusal) as e:
        check_intent(b, "c", "high")  # even if Auto resolves to High: another intent
    assert e.value.reason == "intent-changed"


@pytest.mark.parametrize("what", ["fix_effort", "fix_intent"])
def test_concurrent_fixing_has_one_winner(backend: tuple[Opener, Opener], what: str) -> None:
    """Threads on two store instances race to fix each of many conversations with different
    values: every caller gets the one value the database kept."""
    open_store, _ = backend
    stores = [open_store(), open_store()]
    values = ["low", "medium", "high", "auto"]
    convs = [f"race-{i}" for i in range(25)]
    threads_n = 8
    barrier = threading.Barrier(threads_n)
    got: dict[str, list[str]] = {c: [] for c in convs}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            store = stores[i % 2]
            for c in convs:
                barrier.wait(timeout=30)
                v = getattr(store, what)(c, values[i % len(values)])
                with lock:
                    got[c].append(v)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    fresh = open_store()  # no cache: what the database holds
    for c in convs:
        assert len(got[c]) == threads_n
        assert set(got[c]) == {getattr(fresh, what)(c, "never")}, (c, got[c])


# -- the vault -------------------------------------------------------------------------------

TRICKY: list[Any] = [
    {"z": 1, "a": 2, "m": {"y": [3, 2, 1], "b": None}},  # key order
    {"type": "thinking", "thinking": 'é ü 漢字 🙂 \u2028 \n\t"\\', "signature": "Eq+/=="},
    {"f": [0.1, 1e-7, 1.5e300, -0.0, 12345678901234.5, 3.0]},  # number spelling
    {"big": 2**70, "neg": -(2**65)},  # beyond 64 bits (stdlib-parsed)
    {"nul": "a\u0000b", "ctl": "\u0001\u001f"},
    ["list", "at", "top", {"k": True, "f": False}],
    "a bare string",
    {"encrypted_content": "gAAAA" + "x" * 20_000},
]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def vault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VaultStore]:
    v: VaultStore
    d = ""
    if request.param == "memory":
        v = MemoryVault()
    elif request.param == "sqlite":
        v = SQLiteVault(tmp_path / "v.sqlite")
    else:
        d = pg.fresh_dsn()
        v = PostgresVault(d)
    yield v
    v.close()
    if d:
        pg.drop(d)


def test_vault_values_come_back_byte_for_byte(vault: VaultStore) -> None:
    for i, value in enumerate(TRICKY):
        vault.put("conv", [(f"k{i}", value)])
    for i, value in enumerate(TRICKY):
        got = vault.get("conv", f"k{i}")
        assert got == value
        assert json.dumps(got) == json.dumps(value)  # key order too
        try:
            want = orjson.dumps(value)
        except TypeError:
            continue  # beyond orjson: the stdlib spelling was compared above
        assert orjson.dumps(got) == want


def test_vault_replaces_in_place(vault: VaultStore) -> None:
    vault.put("c", [("a", 1), ("b", 2)])
    vault.put("c", [("a", {"new": True})])
    assert vault.get("c", "a") == {"new": True} and vault.get("c", "b") == 2
    vault.put("c", [])  # nothing to store: nothing changes
    assert vault.get("c", "b") == 2


OPS = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2", "c3", "c4"]),
        st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(0, 9)), max_size=4),
    ),
    max_size=25,
)


class _Reference:
    """The documented bounds, written apart from the stores: past ``max_conversations`` the
    earliest-created conversation goes; past ``max_entries`` a conversation's earliest-written
    key goes; rewriting a key keeps its place; an empty put changes nothing."""

    def __init__(self, max_conversations: int, max_entries: int) -> None:
        self.convs: dict[str, dict[str, Any]] = {}
        self.max_c, self.max_e = max_conversations, max_entries

    def put(self, conv: str, entries: list[tuple[str, Any]]) -> None:
        if not entries:
            return
        if conv not in self.convs:
            self.convs[conv] = {}
            if len(self.convs) > self.max_c:
                del self.convs[next(iter(self.convs))]
        d = self.convs[conv]
        for key, value in entries:
            d[key] = value
            while len(d) > self.max_e:
                del d[next(iter(d))]

    def get(self, conv: str, key: str) -> Any:
        return self.convs.get(conv, {}).get(key)


def _same_as_the_gateways_vault(make: Callable[[], VaultStore], ops: list[Any]) -> None:
    reference = _Reference(max_conversations=3, max_entries=3)
    mine = make()
    try:
        for conv, entries in ops:
            reference.put(conv, list(entries))
            mine.put(conv, list(entries))
            for c in ("c1", "c2", "c3", "c4"):
                for k in "abcdef":
                    assert mine.get(c, k) == reference.get(c, k), (c, k, ops)
    finally:
        mine.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_memory_and_sqlite_vaults_bound_like_the_gateways(ops: list[Any]) -> None:
    _same_as_the_gateways_vault(lambda: MemoryVault(3, 3), ops)
    _same_as_the_gateways_vault(lambda: SQLiteVault(max_conversations=3, max_entries=3), ops)


def test_postgres_vault_bounds_like_the_gateways(dsn: str) -> None:
    import psycopg

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=OPS)
    def check(ops: list[Any]) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM vault")
            conn.execute("DELETE FROM vault_conversation")
        _same_as_the_gateways_vault(
            lambda: PostgresVault(dsn, max_conversations=3, max_entries=3), ops
        )

    PostgresVault(dsn).close()  # migrate once
    check()


# -- migrations and errors -------------------------------------------------------------------


def test_pg_migrations_are_idempotent_and_concurrent(dsn: str) -> None:
    import psycopg

    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            PostgresEvidenceStore(dsn).close()
            PostgresVault(dsn).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert pg_migrate(conn) == 2  # again: nothing to do
        versions = conn.execute("SELECT version FROM schema_version ORDER BY version")
        assert versions.fetchall() == [(1,), (2,)]
        vtype = conn.execute(
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_name = 'vault' AND column_name = 'value'"
        ).fetchone()
        assert vtype == ("text",)  # never jsonb: it reorders keys
        conn.execute("INSERT INTO schema_version VALUES (99, 'from the future', 0)")
    with pytest.raises(ConfigError, match="schema version 99"):
        PostgresEvidenceStore(dsn)


def test_sqlite_file_from_before_migrations_opens_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    cols = ", ".join(EvidenceRow.__dataclass_fields__)
    db.executescript(
        f"CREATE TABLE evidence ({cols});"
        "CREATE TABLE conversation_effort (conversation_id TEXT PRIMARY KEY,"
        " level TEXT NOT NULL, created REAL NOT NULL);"
        "INSERT INTO conversation_effort VALUES ('old', 'medium', 0);"
    )
    db.close()
    store = SQLiteStore(path)
    assert store.fix_effort("old", "high") == "medium"
    assert store.fix_intent("old", "medium") == "medium"
    store.record(EvidenceRow(outcome="refused", conversation_id="old", reason="x"))
    assert len(store.rows("old")) == 1
    store.close()
    again = sqlite3.connect(path)
    versions = again.execute("SELECT version FROM schema_version ORDER BY version")
    assert versions.fetchall() == [(1,), (2,)]
    again.execute("INSERT INTO schema_version VALUES (7, 'newer', 0)")
    again.commit()
    again.close()
    with pytest.raises(ConfigError, match="schema version 7"):
        SQLiteStore(path)


V1_COLUMNS = [c for c in EvidenceRow.__dataclass_fields__ if c != "stream_state"]
"""The evidence columns of schema version 1, before evidence first added stream_state."""


def test_version_1_databases_migrate_to_2_and_keep_their_rows(tmp_path: Path, dsn: str) -> None:
    """A database written at version 1 (no stream_state column, no unique call ids) gains
    both; its rows read back with no stream state; a repeated insert of one call id is
    ignored, a completion rewrites it."""
    import psycopg

    from reasonwire.govern.stores import PG_MIGRATIONS

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
            " description TEXT NOT NULL, applied DOUBLE PRECISION NOT NULL)"
        )
        for step in PG_MIGRATIONS[0][2]:
            conn.execute(step)  # type: ignore[arg-type]
        conn.execute("INSERT INTO schema_version VALUES (1, 'v1', 0)")
        conn.execute(
            "INSERT INTO evidence (outcome, conversation_id, call_id, ts, controls_removed,"
            " carriers_reattached, stream, usage_status, cost_status)"
            " VALUES ('forwarded', 'old', 'c-old', 1, '', 0, false, 'unavailable', 'unavailable')"
        )
    path = tmp_path / "v1.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
        f" applied REAL NOT NULL); CREATE TABLE evidence ({', '.join(V1_COLUMNS)});"
        "INSERT INTO schema_version VALUES (1, 'v1', 0);"
        "INSERT INTO evidence (outcome, conversation_id, call_id, ts, controls_removed,"
        " carriers_reattached, stream, usage_status, cost_status)"
        " VALUES ('forwarded', 'old', 'c-old', 1, '', 0, 0, 'unavailable', 'unavailable');"
    )
    db.commit()
    db.close()
    for store in (PostgresEvidenceStore(dsn), SQLiteStore(path)):
        (old,) = store.rows("old")
        assert old.call_id == "c-old" and old.stream_state is None
        row = EvidenceRow(outcome="pending", conversation_id="new", call_id="c-new", stream=True)
        store.record(row)
        store.record(EvidenceRow(outcome="refused", conversation_id="new", call_id="c-new"))
        assert [r.outcome for r in store.rows("new")] == ["pending"]  # the repeat is ignored
        row.outcome, row.stream_state, row.output_tokens = "forwarded", "cut-by-client", 5
        store.complete(row)
        assert store.rows("new") == [row]
        store.close()


def test_unreachable_postgres_is_one_line_without_the_password() -> None:
    pw = "pw-" + "s3cr3t" * 3
    with pytest.raises(ConfigError) as e:
        PostgresEvidenceStore(f"postgresql://u:{pw}@127.0.0.1:1/evidence", timeout=1.0)
    msg = str(e.value)
    assert "127.0.0.1:1/evidence" in msg and pw not in msg and "\n" not in msg


def test_open_picks_the_backend(tmp_path: Path, dsn: str) -> None:
    s = open_evidence_store(tmp_path / "e.sqlite")
    v = open_vault(tmp_path / "e.sqlite")  # one file may hold both
    assert isinstance(s, SQLiteStore) and isinstance(v, SQLiteVault)
    s.close()
    v.close()
    s2, v2 = open_evidence_store(dsn), open_vault(dsn)
    assert isinstance(s2, PostgresEvidenceStore) and isinstance(v2, PostgresVault)
    s2.close()
    v2.close()
    with pytest.raises(ConfigError, match="cannot open evidence database"):
        open_evidence_store(tmp_path / "missing-dir" / "e.sqlite")
