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

PostgreSQL (psycopg 3) uses a connection pool and migrations: numbered steps recorded in a
``schema_version`` table, each step idempotent (``CREATE TABLE IF NOT EXISTS``), applied under
an advisory lock so replicas starting together migrate once. :func:`open_evidence_store` and
:func:`open_vault` pick the backend from a target: a ``postgresql://`` (or ``postgres://``)
URL, or a SQLite file path.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from reasonwire._extras import MissingExtra
from reasonwire.errors import ConfigError
from reasonwire.govern.evidence import (
    COLUMNS,
    EvidenceRow,
    EvidenceStore,
    SQLiteStore,
    row_from_values,
    sqlite_connect,
)
from reasonwire.wire.model import JSON

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = [
    "MemoryVault",
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
    Exactly the gateway's own ``Vault``; replicas do not share it."""

    def __init__(
        self,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self._data: OrderedDict[str, OrderedDict[str, JSON]] = OrderedDict()
        self._max_conv = max_conversations
        self._max_entries = max_entries

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
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
        conv = self._data.get(conversation_id)
        return None if conv is None else conv.get(key)

    def values(self) -> list[JSON]:
        """Every stored value (for evidence collection: what must stay hidden)."""
        return [v for conv in self._data.values() for v in conv.values()]

    def close(self) -> None:
        self._data.clear()


# -- SQLite ----------------------------------------------------------------------------------


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
        self._lock = threading.Lock()
        with self._lock:
            self._db = sqlite_connect(self.path)
        self._max_conv = max_conversations
        self._max_entries = max_entries

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
        texts = [(k, dump_json(v)) for k, v in entries]
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                cur = db.execute(
                    "INSERT OR IGNORE INTO vault_conversation (conversation_id) VALUES (?)",
                    (conversation_id,),
                )
                if cur.rowcount:
                    evicted = db.execute(
                        "SELECT conversation_id FROM vault_conversation ORDER BY seq DESC"
                        " LIMIT -1 OFFSET ?",
                        (self._max_conv,),
                    ).fetchall()
                    for (old,) in evicted:
                        db.execute("DELETE FROM vault WHERE conversation_id = ?", (old,))
                        db.execute(
                            "DELETE FROM vault_conversation WHERE conversation_id = ?", (old,)
                        )
                for key, text in texts:
                    db.execute(
                        "INSERT INTO vault (conversation_id, key, value) VALUES (?, ?, ?)"
                        " ON CONFLICT (conversation_id, key) DO UPDATE SET value = excluded.value",
                        (conversation_id, key, text),
                    )
                    db.execute(
                        "DELETE FROM vault WHERE seq IN (SELECT seq FROM vault"
                        " WHERE conversation_id = ? ORDER BY seq DESC LIMIT -1 OFFSET ?)",
                        (conversation_id, self._max_entries),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def get(self, conversation_id: str, key: str) -> JSON | None:
        with self._lock:
            found = self._db.execute(
                "SELECT value FROM vault WHERE conversation_id = ? AND key = ?",
                (conversation_id, key),
            ).fetchone()
        return None if found is None else load_json(found[0])

    def values(self) -> list[JSON]:
        """Every stored value (for evidence collection: what must stay hidden)."""
        with self._lock:
            found = self._db.execute("SELECT value FROM vault ORDER BY seq").fetchall()
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
            + ", ".join(_pg_column(c) for c in COLUMNS)
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


def pg_migrate(conn: Connection[Any]) -> int:
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


def _pool(conninfo: str, min_size: int, max_size: int, timeout: float) -> ConnectionPool:
    """An open, migrated pool of autocommit connections; :class:`ConfigError` (naming host,
    port and database, never the password) when the database cannot be reached."""
    try:
        import psycopg
        from psycopg_pool import ConnectionPool, PoolTimeout
    except ModuleNotFoundError as exc:
        raise MissingExtra.of("govern", exc, "the PostgreSQL store") from None
    where = describe_conninfo(conninfo)
    pool: ConnectionPool = ConnectionPool(
        conninfo,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True},
        open=False,
        timeout=timeout,
        name="reasonwire",
    )
    try:
        pool.open(wait=True, timeout=timeout)
        with pool.connection() as conn:
            pg_migrate(conn)
    except (PoolTimeout, psycopg.Error) as exc:
        pool.close()
        raise ConfigError(f"cannot use PostgreSQL at {where}: {type(exc).__name__}") from None
    except BaseException:
        pool.close()
        raise
    return pool


class _PostgresBase:
    def __init__(
        self,
        conninfo: str = "",
        *,
        pool: ConnectionPool | None = None,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        """Open a pool on ``conninfo`` (a ``postgresql://`` URL or libpq key/value string),
        or share ``pool`` (already open; migrated here). A shared pool is not closed by
        :meth:`close`."""
        if pool is not None:
            self._pool = pool
            self._owns_pool = False
            with pool.connection() as conn:
                pg_migrate(conn)
        else:
            self._pool = _pool(conninfo, min_size, max_size, timeout)
            self._owns_pool = True

    @property
    def pool(self) -> ConnectionPool:
        return self._pool

    def close(self) -> None:
        if self._owns_pool:
            self._pool.close()


class PostgresEvidenceStore(_PostgresBase):
    """Evidence rows, fixed efforts and intents in PostgreSQL, shared by gateway replicas."""

    _INSERT = (
        f"INSERT INTO evidence ({', '.join(COLUMNS)}) VALUES ({', '.join('%s' for _ in COLUMNS)})"
    )
    _SELECT = f"SELECT {', '.join(COLUMNS)} FROM evidence"

    def __init__(self, conninfo: str = "", **kw: Any) -> None:
        super().__init__(conninfo, **kw)
        self._efforts: dict[str, str] = {}
        self._intents: dict[str, str] = {}

    def record(self, row: EvidenceRow) -> None:
        with self._pool.connection() as conn:
            conn.execute(self._INSERT, tuple(getattr(row, c) for c in COLUMNS))

    def _fix(self, table: str, column: str, cache: dict[str, str], conv: str, value: str) -> str:
        known = cache.get(conv)
        if known is not None:
            return known  # fixed values never change: a cache hit is always current
        with self._pool.connection() as conn:
            # Atomic across replicas: the primary key lets exactly one INSERT in; a racing
            # one waits for it to commit and does nothing; the SELECT (a new snapshot under
            # READ COMMITTED) reads the winner.
            conn.execute(
                f"INSERT INTO {table} VALUES (%s, %s, %s) ON CONFLICT (conversation_id) DO NOTHING",
                (conv, value, time.time()),
            )
            found = conn.execute(
                f"SELECT {column} FROM {table} WHERE conversation_id = %s",
                (conv,),
            ).fetchone()
        if found is None:  # cannot happen: the row was there when the INSERT ended
            raise ConfigError(f"{table}: no row for the conversation after inserting it")
        fixed = str(found[0])
        cache[conv] = fixed
        return fixed

    def fix_effort(self, conversation_id: str, level: str) -> str:
        return self._fix("conversation_effort", "level", self._efforts, conversation_id, level)

    def fix_intent(self, conversation_id: str, requested: str) -> str:
        return self._fix(
            "conversation_intent", "requested", self._intents, conversation_id, requested
        )

    def rows(self, conversation_id: str | None = None) -> list[EvidenceRow]:
        with self._pool.connection() as conn:
            if conversation_id is None:
                found = conn.execute(self._SELECT + " ORDER BY ts, seq").fetchall()
            else:
                found = conn.execute(
                    self._SELECT + " WHERE conversation_id = %s ORDER BY ts, seq",
                    (conversation_id,),
                ).fetchall()
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
        **kw: Any,
    ) -> None:
        super().__init__(conninfo, **kw)
        self._max_conv = max_conversations
        self._max_entries = max_entries

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
        texts = [(k, dump_json(v)) for k, v in entries]
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (conversation_id,)
            )
            cur = conn.execute(
                "INSERT INTO vault_conversation (conversation_id) VALUES (%s)"
                " ON CONFLICT (conversation_id) DO NOTHING",
                (conversation_id,),
            )
            if cur.rowcount:
                evicted = conn.execute(
                    "SELECT conversation_id FROM vault_conversation ORDER BY seq DESC OFFSET %s",
                    (self._max_conv,),
                ).fetchall()
                old = [e[0] for e in evicted]
                if old:
                    conn.execute("DELETE FROM vault WHERE conversation_id = ANY(%s)", (old,))
                    conn.execute(
                        "DELETE FROM vault_conversation WHERE conversation_id = ANY(%s)", (old,)
                    )
            for key, text in texts:
                conn.execute(
                    "INSERT INTO vault (conversation_id, key, value) VALUES (%s, %s, %s)"
                    " ON CONFLICT (conversation_id, key) DO UPDATE SET value = EXCLUDED.value",
                    (conversation_id, key, text),
                )
                conn.execute(
                    "DELETE FROM vault WHERE seq IN (SELECT seq FROM vault"
                    " WHERE conversation_id = %s ORDER BY seq DESC OFFSET %s)",
                    (conversation_id, self._max_entries),
                )

    def get(self, conversation_id: str, key: str) -> JSON | None:
        with self._pool.connection() as conn:
            found = conn.execute(
                "SELECT value FROM vault WHERE conversation_id = %s AND key = %s",
                (conversation_id, key),
            ).fetchone()
        return None if found is None else load_json(found[0])

    def values(self) -> list[JSON]:
        """Every stored value (for evidence collection: what must stay hidden)."""
        with self._pool.connection() as conn:
            found = conn.execute("SELECT value FROM vault ORDER BY seq").fetchall()
        return [load_json(t) for (t,) in found]


# -- choosing a backend ----------------------------------------------------------------------


def open_evidence_store(target: str | Path) -> EvidenceStore:
    """A PostgreSQL store for a ``postgresql://`` URL, else a SQLite store at the path.
    :class:`ConfigError` (one line, no password) when it cannot be opened."""
    if is_postgres_url(target):
        return PostgresEvidenceStore(str(target))
    try:
        return SQLiteStore(target)
    except (sqlite3.Error, OSError) as exc:
        raise ConfigError(f"cannot open evidence database {target}: {type(exc).__name__}") from None


def open_vault(target: str | Path) -> SQLiteVault | PostgresVault:
    """A PostgreSQL vault for a ``postgresql://`` URL, else a SQLite vault at the path."""
    if is_postgres_url(target):
        return PostgresVault(str(target))
    try:
        return SQLiteVault(target)
    except (sqlite3.Error, OSError) as exc:
        raise ConfigError(f"cannot open vault database {target}: {type(exc).__name__}") from None
