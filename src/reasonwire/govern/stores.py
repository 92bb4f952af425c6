"""Evidence and vault stores behind one interface each: in memory, SQLite, PostgreSQL.

:class:`~reasonwire.govern.evidence.EvidenceStore` keeps evidence rows and each conversation's
fixed effort and intent; :class:`VaultStore` keeps the original reasoning carriers the gateway
re-attaches (the interface of the gateway's in-memory ``Vault``). The SQLite and PostgreSQL
implementations let gateway replicas share one database: every replica sees every row, vault
entry and fixed effort, and fixing an effort or intent is atomic across them (``INSERT ... ON
CONFLICT DO NOTHING``, then ``SELECT`` the winner).

Vault values are JSON carriers that must replay byte for byte (DESIGN.md: carriers are
sacred): the durable stores keep the exact JSON text (``orjson.dumps``) in a ``TEXT`` column,
never ``jsonb`` (which reorders keys and rewrites numbers), and load it back, so
``orjson.dumps(get(...)) == orjson.dumps(value)``.

PostgreSQL (psycopg 3) uses a small connection pool of its own (:class:`PgConnections`: broken
connections replaced, reconnection on demand) and migrations: numbered steps recorded in a
``schema_version`` table, each step idempotent (``CREATE TABLE IF NOT EXISTS``), applied under
an advisory lock so replicas starting together migrate once. :func:`open_evidence_store` and
:func:`open_vault` pick the backend from a target: a ``postgresql://`` (or ``postgres://``)
URL, or a SQLite file path.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar, Unpack

import orjson

from reasonwire._extras import as_missing_extra
from reasonwire.errors import ConfigError, StoreUnavailable
from reasonwire.govern.evidence import (
    COLUMNS,
    EvidenceRow,
    EvidenceStore,
    FixedOnce,
    NoWait,
    RowSql,
    SQLiteStore,
    Statement,
    keeps,
    row_from_values,
)
from reasonwire.govern.group_commit import ThreadGroupCommit
from reasonwire.wire.model import JSON

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow

T = TypeVar("T")

__all__ = [
    "MemoryVault",
    "PgConnections",
    "PostgresEvidenceStore",
    "PostgresVault",
    "SQLiteVault",
    "VaultStore",
    "dump_json",
    "is_postgres_url",
    "load_json",
    "open_evidence_store",
    "open_vault",
]

DEFAULT_MAX_CONVERSATIONS = 10_000
DEFAULT_MAX_ENTRIES = 1_024


class VaultStore(Protocol):
    """Original reasoning carriers per conversation, keyed as each dialect's
    ``vault_entries`` says (design: :mod:`reasonwire.wire.vault`)."""

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        """Store ``entries`` (later keys replace earlier values in place)."""
        ...

    def get(self, conversation_id: str, key: str) -> JSON | None:
        """The value stored under ``key``, or ``None``."""
        ...

    def close(self) -> None: ...


def dump_json(value: JSON) -> str:
    """The exact JSON text a vault keeps: orjson's, or the stdlib's (compact, non-ASCII kept)
    for what orjson cannot write (an integer beyond 64 bits that the stdlib parsed)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def load_json(text: str) -> JSON:
    """The value of a text :func:`dump_json` wrote. orjson reads its own text back exactly;
    the stdlib's text (integers beyond 64 bits, which orjson would read as floats) is read
    by the stdlib."""
    try:
        value = orjson.loads(text)
        if orjson.dumps(value) == text.encode("utf-8"):
            return value
    except orjson.JSONDecodeError:
        pass
    return json.loads(text)


# -- memory ----------------------------------------------------------------------------------


class MemoryVault:
    """In memory and bounded: past ``max_conversations`` the oldest conversation goes, past
    ``max_entries`` a conversation's oldest entry goes (a replaced value keeps its place).
    Exactly the gateway's own ``Vault``; replicas do not share it. A lock makes it safe
    from the gateway's store threads."""

    def __init__(
        self,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self._data: OrderedDict[str, OrderedDict[str, JSON]] = OrderedDict()
        self._max_conv = max_conversations
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
        with self._lock:
            conv = self._data.get(conversation_id)
            if conv is None:
                conv = self._data[conversation_id] = OrderedDict()
                if len(self._data) > self._max_conv:
                    self._data.popitem(last=False)
            for key, value in entries:
                conv[key] = value
                while len(conv) > self._max_entries:
                    conv.popitem(last=False)

    def get(self, conversation_id: str, key: str) -> JSON | None:
        with self._lock:
            conv = self._data.get(conversation_id)
            return None if conv is None else conv.get(key)

    @property
    def writes_now(self) -> bool:
        """The ``_now`` methods do what :meth:`put` and :meth:`get` would: false for a
        subclass that changes either (it may wait)."""
        return keeps(self, MemoryVault, "put", "get")

    def put_now(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> bool:
        """:meth:`put`: in memory it never waits (the gateway's event loop may call it)."""
        self.put(conversation_id, entries)
        return True

    def get_now(self, conversation_id: str, key: str) -> tuple[bool, JSON | None]:
        """:meth:`get`: in memory it never waits (the gateway's event loop may call it)."""
        return True, self.get(conversation_id, key)

    def values(self) -> list[JSON]:
        """Every stored value (for evidence collection: what must stay hidden)."""
        with self._lock:
            return [v for conv in self._data.values() for v in conv.values()]

    def close(self) -> None:
        self._data.clear()


# -- SQLite ----------------------------------------------------------------------------------


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchall(self) -> Sequence[Sequence[object]]: ...


@dataclass(frozen=True)
class _VaultSQL:
    """The statements of one vault put, written once with ``{p}`` for a parameter and
    ``{all}`` for "no limit" (before an OFFSET), then spelled for a database by
    :meth:`spelled`."""

    claim: str  # (conversation_id): insert it unless known; rowcount 1 when it is new
    beyond: str  # (max_conversations): the conversation ids beyond the bound, newest first
    drop_entries: str  # (conversation_id)
    drop_conversation: str  # (conversation_id)
    upsert: str  # (conversation_id, key, value)
    trim: str  # (conversation_id, max_entries): the conversation's entries beyond the bound

    def spelled(self, param: str, no_limit: str) -> _VaultSQL:
        """These statements with ``param`` for each parameter and ``no_limit`` for ``{all}``."""
        return replace(
            self,
            **{f.name: getattr(self, f.name).format(p=param, all=no_limit) for f in fields(self)},
        )


_VAULT_SQL = _VaultSQL(
    claim="INSERT INTO vault_conversation (conversation_id) VALUES ({p})"
    " ON CONFLICT (conversation_id) DO NOTHING",
    beyond="SELECT conversation_id FROM vault_conversation ORDER BY seq DESC {all} OFFSET {p}",
    drop_entries="DELETE FROM vault WHERE conversation_id = {p}",
    drop_conversation="DELETE FROM vault_conversation WHERE conversation_id = {p}",
    upsert="INSERT INTO vault (conversation_id, key, value) VALUES ({p}, {p}, {p})"
    " ON CONFLICT (conversation_id, key) DO UPDATE SET value = excluded.value",
    trim="DELETE FROM vault WHERE seq IN (SELECT seq FROM vault"
    " WHERE conversation_id = {p} ORDER BY seq DESC {all} OFFSET {p})",
)
_SQLITE_VAULT = _VAULT_SQL.spelled("?", "LIMIT -1")  # SQLite: OFFSET needs a LIMIT; -1 is none
_PG_VAULT = _VAULT_SQL.spelled("%s", "LIMIT ALL")
_SQLITE_GET = "SELECT value FROM vault WHERE conversation_id = ? AND key = ?"


def _vault_put(
    execute: Callable[[str, tuple[object, ...]], _Cursor],
    sql: _VaultSQL,
    conversation_id: str,
    texts: list[tuple[str, str]],
    bounds: tuple[int, int],
) -> None:
    """One vault put inside the caller's transaction, the same in every database: a new
    conversation evicts the oldest beyond ``max_conversations``; each entry is upserted, then
    the conversation's oldest beyond ``max_entries`` go."""
    max_conversations, max_entries = bounds
    if execute(sql.claim, (conversation_id,)).rowcount:
        for old, *_ in execute(sql.beyond, (max_conversations,)).fetchall():
            execute(sql.drop_entries, (old,))
            execute(sql.drop_conversation, (old,))
    for key, text in texts:
        execute(sql.upsert, (conversation_id, key, text))
        execute(sql.trim, (conversation_id, max_entries))


class SQLiteVault:
    """The vault in a SQLite file (the evidence database may be the same file), with the
    bounds of :class:`MemoryVault`. Processes on one host share it; WAL mode."""

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self.path = str(path)
        self._conn = NoWait(self.path)
        self._lock = self._conn.lock
        self._db = self._conn.db
        self._bounds = (max_conversations, max_entries)

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
        texts = [(k, dump_json(v)) for k, v in entries]
        with self._conn.waiting() as db:
            self._put(db, conversation_id, texts)
        self._conn.committed()

    def _put(
        self, db: sqlite3.Connection, conversation_id: str, texts: list[tuple[str, str]]
    ) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            _vault_put(db.execute, _SQLITE_VAULT, conversation_id, texts, self._bounds)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def get(self, conversation_id: str, key: str) -> JSON | None:
        with self._conn.waiting() as db:
            found = db.execute(_SQLITE_GET, (conversation_id, key)).fetchone()
        return None if found is None else load_json(found[0])

    @property
    def writes_now(self) -> bool:
        """The ``_now`` methods do what :meth:`put` and :meth:`get` would: false for a
        subclass that changes either (it may wait)."""
        return keeps(self, SQLiteVault, "put", "get")

    def put_now(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> bool:
        """:meth:`put` in one transaction if it needs no waiting (:class:`NoWait`)."""
        if not entries:
            return True
        texts = [(k, dump_json(v)) for k, v in entries]
        return self._conn.run(lambda db: self._put(db, conversation_id, texts))

    def get_now(self, conversation_id: str, key: str) -> tuple[bool, JSON | None]:
        """:meth:`get` if it needs no waiting (:class:`NoWait`)."""
        found: list[Sequence[object] | None] = []
        if not self._conn.run(
            lambda db: found.append(db.execute(_SQLITE_GET, (conversation_id, key)).fetchone())
        ):
            return False, None
        value = found[0]
        return True, None if value is None else load_json(str(value[0]))

    def values(self) -> list[JSON]:
        """Every stored value (for evidence collection: what must stay hidden)."""
        with self._conn.waiting() as db:
            found = db.execute("SELECT value FROM vault ORDER BY seq").fetchall()
        return [load_json(t) for (t,) in found]

    def close(self) -> None:
        with self._lock:
            self._db.close()


# -- PostgreSQL ------------------------------------------------------------------------------

_PG_TYPES = {
    "str": "TEXT",
    "int": "BIGINT",
    "float": "DOUBLE PRECISION",
    "bool": "BOOLEAN",
}


def _pg_column(name: str) -> str:
    """``name TYPE`` for an :class:`EvidenceRow` field, from its annotation."""
    ann = str(EvidenceRow.__dataclass_fields__[name].type)
    nullable = "None" in ann
    base = ann.replace("| None", "").strip()
    sql = _PG_TYPES.get(base, "TEXT")  # the Literal statuses are text
    return f"{name} {sql}" + ("" if nullable else " NOT NULL")


PG_MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "evidence rows, fixed efforts and intents, vault",
        (
            "CREATE TABLE IF NOT EXISTS evidence ("
            " seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + ", ".join(_pg_column(c) for c in COLUMNS if c != "stream_state")
            + ")",
            "CREATE INDEX IF NOT EXISTS evidence_conv ON evidence (conversation_id)",
            "CREATE TABLE IF NOT EXISTS conversation_effort ("
            " conversation_id TEXT PRIMARY KEY, level TEXT NOT NULL,"
            " created DOUBLE PRECISION NOT NULL)",
            "CREATE TABLE IF NOT EXISTS conversation_intent ("
            " conversation_id TEXT PRIMARY KEY, requested TEXT NOT NULL,"
            " created DOUBLE PRECISION NOT NULL)",
            "CREATE TABLE IF NOT EXISTS vault_conversation ("
            " seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " conversation_id TEXT NOT NULL UNIQUE)",
            # value is TEXT, not jsonb: the exact JSON text comes back.
            "CREATE TABLE IF NOT EXISTS vault ("
            " seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " conversation_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
            " UNIQUE (conversation_id, key))",
        ),
    ),
    (
        2,
        "evidence first: unique call ids, stream state",
        (
            f"ALTER TABLE evidence ADD COLUMN IF NOT EXISTS {_pg_column('stream_state')}",
            "CREATE UNIQUE INDEX IF NOT EXISTS evidence_call ON evidence (call_id)",
        ),
    ),
)
"""PostgreSQL schema steps by version; each step may run again harmlessly."""

_MIGRATION_LOCK = 0x72770001  # pg_advisory_xact_lock key: one migrating replica at a time


def is_postgres_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def describe_conninfo(conninfo: str) -> str:
    """Where a connection string points, without its password: ``host:port/dbname``."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        d = conninfo_to_dict(conninfo)
    except Exception:  # a malformed string: say nothing of it
        return "(unparsable connection string)"
    return f"{d.get('host') or 'localhost'}:{d.get('port') or 5432}/{d.get('dbname') or '?'}"


def pg_migrate(conn: Connection[TupleRow]) -> int:
    """Bring the database to the latest schema; return its version. A database newer than
    this code is refused (fail closed)."""
    latest = PG_MIGRATIONS[-1][0]
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
            " description TEXT NOT NULL, applied DOUBLE PRECISION NOT NULL)"
        )
        found = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
        current = int(found[0]) if found else 0
        if current > latest:
            raise ConfigError(
                f"the database has schema version {current}; this reasonwire knows up to {latest}"
            )
        for version, description, steps in PG_MIGRATIONS:
            if version > current:
                for step in steps:
                    conn.execute(step)
                conn.execute(
                    "INSERT INTO schema_version VALUES (%s, %s, %s)",
                    (version, description, time.time()),
                )
    return max(current, latest)


class PgConnections:
    """A small pool of autocommit connections, opened on demand, that never hands out a
    connection it knows is broken and replaces one found broken while in use.

    Why not ``psycopg_pool``: its background reconnection backs off exponentially (1 s, 2 s,
    4 s...), so after a database restart requests keep failing for as long as the last delay,
    and a connection the server closed stays idle in the pool until a request trips on it.
    Here a request that needs a connection opens one itself when none is idle (the first
    request after a restart reconnects at once), and :meth:`run` retries its work on another
    connection when the one it used turns out broken (a restarted server's stale idle
    connections fail at their first use), at most ``max_size + 1`` times and within
    ``timeout``. Work passed to :meth:`run` must be idempotent (every store write is: see
    :mod:`.evidence`).

    At most ``max_size`` connections are in use at once; a caller waits ``timeout`` seconds
    for one, then gets :class:`StoreUnavailable`, as it does when the database cannot be
    reached or answers an error. ``timeout`` also bounds connecting (libpq's
    ``connect_timeout``, whole seconds, at least 2)."""

    def __init__(self, conninfo: str, max_size: int = 4, timeout: float = 10.0) -> None:
        try:
            import psycopg
        except ModuleNotFoundError as exc:
            raise as_missing_extra("govern", exc, "the PostgreSQL store") from None
        self._psycopg = psycopg
        self._conninfo = conninfo
        self._max_size = max_size
        self._slots = threading.BoundedSemaphore(max_size)
        self._idle: list[Connection[TupleRow]] = []
        self._lock = threading.Lock()
        self.timeout = timeout
        self._closed = False
        self.opened = 0
        """Connections opened so far (the fault tests read it: a restart costs new ones)."""

    def _connect(self) -> Connection[TupleRow]:
        # A peer that vanished (no reset: a partition, a host gone) must not hold a thread
        # forever: unacknowledged sends give up after the timeout, idle ones are probed.
        conn: Connection[TupleRow] = self._psycopg.connect(
            self._conninfo,
            autocommit=True,
            connect_timeout=max(2, math.ceil(self.timeout)),
            keepalives=1,
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
            tcp_user_timeout=max(1000, int(self.timeout * 1000)),
        )
        self.opened += 1
        return conn

    def _release(self, conn: Connection[TupleRow]) -> None:
        from psycopg.pq import TransactionStatus

        reusable = (
            not self._closed
            and not conn.closed
            and not conn.broken
            and conn.info.transaction_status == TransactionStatus.IDLE
        )
        if reusable:
            with self._lock:
                self._idle.append(conn)
        else:
            with contextlib.suppress(Exception):
                conn.close()

    def run(self, work: Callable[[Connection[TupleRow]], T]) -> T:
        """``work(conn)`` on a pooled connection, again on another one while the one it got
        is found broken; :class:`StoreUnavailable` when no connection answers in time."""
        psycopg = self._psycopg
        deadline = time.monotonic() + self.timeout
        if self._closed:
            raise StoreUnavailable("the store is closed")
        if not self._slots.acquire(timeout=self.timeout):
            raise StoreUnavailable("no database connection free in time")
        try:
            for _ in range(self._max_size + 2):
                with self._lock:
                    conn = self._idle.pop() if self._idle else None
                fresh = conn is None
                try:
                    if conn is None:
                        conn = self._connect()
                    result = work(conn)
                except psycopg.Error as exc:
                    broken = conn is not None and (conn.broken or conn.closed)
                    if conn is not None:
                        self._release(conn)
                    if broken and not fresh and time.monotonic() < deadline:
                        continue  # a stale connection (the server restarted): another one
                    raise StoreUnavailable(f"database: {type(exc).__name__}") from None
                except BaseException:
                    if conn is not None:
                        self._release(conn)
                    raise
                self._release(conn)
                return result
            raise StoreUnavailable("database: every connection tried was broken")
        finally:
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


def _open(conninfo: str, max_size: int, timeout: float) -> PgConnections:
    """Connections to a reachable, migrated database; :class:`ConfigError` (naming host,
    port and database, never the password) when it cannot be reached."""
    where = describe_conninfo(conninfo)
    conns = PgConnections(conninfo, max_size, timeout)
    try:
        conns.run(pg_migrate)
    except StoreUnavailable as exc:
        conns.close()
        raise ConfigError(f"cannot use PostgreSQL at {where}: {exc}") from None
    except BaseException:
        conns.close()
        raise
    return conns


class _PgOptions(TypedDict, total=False):
    """How a PostgreSQL store gets its connections (the keywords of every Postgres store)."""

    connections: PgConnections | None
    max_size: int
    timeout: float


class _PostgresBase:
    def __init__(
        self,
        conninfo: str = "",
        *,
        connections: PgConnections | None = None,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        """Connect to ``conninfo`` (a ``postgresql://`` URL or libpq key/value string), or
        share ``connections`` (migrated here). Shared connections are not closed by
        :meth:`close`. ``timeout``: how long one operation may wait for a connection."""
        if connections is not None:
            self._conns = connections
            self._owns = False
            connections.run(pg_migrate)
        else:
            self._conns = _open(conninfo, max_size, timeout)
            self._owns = True

    @property
    def connections(self) -> PgConnections:
        return self._conns

    def close(self) -> None:
        if self._owns:
            self._conns.close()


def _pg_all_or_none(statements: Sequence[Statement], conn: Connection[TupleRow]) -> None:
    """``statements`` in one transaction (one alone needs none: autocommit)."""
    if len(statements) == 1:
        conn.execute(*statements[0])
        return
    with conn.transaction():
        for sql, values in statements:
            conn.execute(sql, values)


class PostgresEvidenceStore(_PostgresBase, FixedOnce):
    """Evidence rows, fixed efforts and intents in PostgreSQL, shared by gateway replicas."""

    _SQL = RowSql("%s", "INSERT", " ON CONFLICT (call_id) DO NOTHING")
    _SELECT = f"SELECT {', '.join(COLUMNS)} FROM evidence"

    def __init__(self, conninfo: str = "", **kw: Unpack[_PgOptions]) -> None:
        _PostgresBase.__init__(self, conninfo, **kw)
        FixedOnce.__init__(self)
        # Rows written by several store threads at once share one transaction (one round
        # trip and one commit): govern/group_commit.py.
        self.group = ThreadGroupCommit(self._write)

    def record(self, row: EvidenceRow) -> None:
        self.group.commit(self.recording(row))

    def complete(self, row: EvidenceRow) -> None:
        self.group.commit(self.completing(row))

    @classmethod
    def recording(cls, row: EvidenceRow) -> Statement:
        """:meth:`record`'s statement."""
        return cls._SQL.recording(row)

    @classmethod
    def completing(cls, row: EvidenceRow) -> Statement:
        """:meth:`complete`'s statement."""
        return cls._SQL.completing(row)

    def _write(self, statements: Sequence[Statement]) -> None:
        self._conns.run(partial(_pg_all_or_none, statements))

    def _first(self, table: str, column: str, conv: str, value: str) -> str:
        def work(conn: Connection[TupleRow]) -> TupleRow | None:
            # Atomic across replicas: the primary key lets exactly one INSERT in; a racing
            # one waits for it to commit and does nothing; the SELECT (a new snapshot under
            # READ COMMITTED) reads the winner.
            conn.execute(
                f"INSERT INTO {table} VALUES (%s, %s, %s) ON CONFLICT (conversation_id) DO NOTHING",
                (conv, value, time.time()),
            )
            return conn.execute(
                f"SELECT {column} FROM {table} WHERE conversation_id = %s",
                (conv,),
            ).fetchone()

        found = self._conns.run(work)
        if found is None:  # cannot happen: the row was there when the INSERT ended
            raise ConfigError(f"{table}: no row for the conversation after inserting it")
        return str(found[0])

    def rows(self, conversation_id: str | None = None) -> list[EvidenceRow]:
        def work(conn: Connection[TupleRow]) -> list[JSON]:
            if conversation_id is None:
                return conn.execute(self._SELECT + " ORDER BY ts, seq").fetchall()
            return conn.execute(
                self._SELECT + " WHERE conversation_id = %s ORDER BY ts, seq",
                (conversation_id,),
            ).fetchall()

        found = self._conns.run(work)
        return [row_from_values(dict(zip(COLUMNS, values, strict=True))) for values in found]


class PostgresVault(_PostgresBase):
    """The vault in PostgreSQL, shared by gateway replicas, with the bounds of
    :class:`MemoryVault`. Puts for one conversation are serialised (an advisory lock), so
    replicas agree on entry order and bounds."""

    def __init__(
        self,
        conninfo: str = "",
        *,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        **kw: Unpack[_PgOptions],
    ) -> None:
        super().__init__(conninfo, **kw)
        self._bounds = (max_conversations, max_entries)

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
        texts = [(k, dump_json(v)) for k, v in entries]
        self._conns.run(lambda conn: self._put(conn, conversation_id, texts))

    def _put(
        self, conn: Connection[TupleRow], conversation_id: str, texts: list[tuple[str, str]]
    ) -> None:
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (conversation_id,)
            )
            _vault_put(conn.execute, _PG_VAULT, conversation_id, texts, self._bounds)

    def get(self, conversation_id: str, key: str) -> JSON | None:
        found = self._conns.run(
            lambda conn: conn.execute(
                "SELECT value FROM vault WHERE conversation_id = %s AND key = %s",
                (conversation_id, key),
            ).fetchone()
        )
        return None if found is None else load_json(found[0])

    def values(self) -> list[JSON]:
        """Every stored value (for evidence collection: what must stay hidden)."""
        found = self._conns.run(
            lambda conn: conn.execute("SELECT value FROM vault ORDER BY seq").fetchall()
        )
        return [load_json(t) for (t,) in found]


# -- choosing a backend ----------------------------------------------------------------------


S = TypeVar("S")


def _backend(
    target: str | Path,
    postgres: Callable[[str], S],
    sqlite: Callable[[str | Path], S],
    what: str,
) -> S:
    """``postgres(url)`` for a ``postgresql://`` URL, else ``sqlite(path)``; a
    :class:`ConfigError` (one line, no password) when the SQLite file cannot be opened."""
    if is_postgres_url(target):
        return postgres(str(target))
    try:
        return sqlite(target)
    except (sqlite3.Error, OSError) as exc:
        raise ConfigError(f"cannot open {what} database {target}: {type(exc).__name__}") from None


def open_evidence_store(target: str | Path) -> EvidenceStore:
    """A PostgreSQL store for a ``postgresql://`` URL, else a SQLite store at the path.
    :class:`ConfigError` (one line, no password) when it cannot be opened."""
    postgres: Callable[[str], EvidenceStore] = PostgresEvidenceStore
    return _backend(target, postgres, SQLiteStore, "evidence")


def open_vault(target: str | Path) -> SQLiteVault | PostgresVault:
    """A PostgreSQL vault for a ``postgresql://`` URL, else a SQLite vault at the path."""
    postgres: Callable[[str], SQLiteVault | PostgresVault] = PostgresVault
    return _backend(target, postgres, SQLiteVault, "vault")
