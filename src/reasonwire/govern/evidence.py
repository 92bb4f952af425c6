"""Usage evidence per gateway call, behind a store interface (SQLite or PostgreSQL).

One row per call the gateway answered, refusals included (with their reason). A row holds ids,
levels, figures and statuses only, never a message or reasoning text, never a binding token.
Usage figures are ``None`` (SQL NULL) when the provider did not report them, and
``usage_status`` says ``unavailable``: a missing figure is never written as 0.

The store also fixes each conversation's effort and requested intent (``Auto``, ``Low``...)
at creation (the first verified call), so several gateway replicas sharing one database agree
on both: the first writer wins, atomically, and every later call reads the winner.
:class:`EvidenceStore` is the interface; :class:`SQLiteStore` the embedded implementation,
:class:`reasonwire.govern.stores.PostgresEvidenceStore` the shared one.

Evidence first (the gateway's rule, :mod:`.gateway`): the row of an upstream call is written
(committed) with outcome ``pending`` before the call's first byte goes upstream, then
completed in place (:meth:`EvidenceStore.complete`, by ``call_id``) with the outcome, usage and
``stream_state``. A row left ``pending`` says an upstream call may have been made whose outcome
was never recorded (the gateway stopped, or the database was unreachable at completion and
stayed so). A store that cannot commit raises :class:`StoreUnavailable`; the gateway then
makes no upstream call. Writes are idempotent (``call_id`` is unique: a repeated insert is
ignored, a repeated completion rewrites the same values), so a write retried on a fresh
connection after a broken one cannot duplicate a row.

Schema changes are migrations (:data:`SQLITE_MIGRATIONS`): numbered steps recorded in a
``schema_version`` table, each step idempotent (``CREATE ... IF NOT EXISTS``), so a database
written before the table existed, or one being migrated by another replica, is safe.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Literal, Protocol

from reasonwire.errors import ConfigError, PolicyRefusal, StoreUnavailable
from reasonwire.wire.model import Usage

UsageStatus = Literal["reported", "unavailable"]
CostStatus = Literal["confirmed", "estimated", "unavailable"]
Outcome = Literal["pending", "forwarded", "refused", "upstream-error"]
StreamState = Literal["complete", "cut-by-upstream", "cut-by-client", "malformed"]
"""How a relayed stream ended: every upstream byte relayed to its terminal event; the upstream
connection cut or ended before its terminal event; the client gone before the end; bytes that
are not the dialect's stream."""


_RANDOM_BYTES = 4096
"""Random bytes read at once for call ids (409 ids a read: ``os.urandom`` is a system call
each, a few microseconds on a loaded VM, one per call otherwise)."""


class _RandomBytes:
    """Random bytes from ``os.urandom``, read in blocks and each handed out once (under a
    lock: store threads make ids too). A forked child drops the parent's block, so two
    processes never hand out the same bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._block = b""
        self._at = 0

    def take(self, n: int) -> bytes:
        with self._lock:
            at = self._at
            if at + n > len(self._block):
                self._block, at = os.urandom(_RANDOM_BYTES), 0
            self._at = at + n
            return self._block[at : at + n]

    def forked(self) -> None:
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._block, self._at = b"", 0


_random = _RandomBytes()
os.register_at_fork(after_in_child=_random.forked)


def new_call_id() -> str:
    """A new call id: a time-ordered (version 7, RFC 9562) UUID's 32 hex digits: the Unix
    time in milliseconds, then 74 random bits. Why not a random (version 4) one: the
    evidence table's unique index on ``call_id`` then takes each new row at a random place,
    so a group commit of n rows rewrote about n index pages in the WAL; ids that grow with
    time go to the index's last page (measured: a third of the WAL bytes, and a grouped
    statement under wrk ~13 -> ~10 us). The random part is what makes two ids differ
    (74 bits; the time is the evidence row's ``ts`` anyway)."""
    b = bytearray(_random.take(10))
    b[0] = b[0] & 0x0F | 0x70  # version 7
    b[2] = b[2] & 0x3F | 0x80  # the RFC 9562 variant
    return (time.time_ns() // 1_000_000).to_bytes(6, "big").hex() + b.hex()


@dataclass
class EvidenceRow:
    outcome: Outcome
    conversation_id: str | None
    reason: str | None = None
    call_id: str = field(default_factory=new_call_id)
    ts: float = field(default_factory=time.time)
    task_id: str | None = None
    attempt: int | None = None
    runtime_id: str | None = None
    runtime_version: str | None = None
    runtime_qualification: str | None = None
    route_id: str | None = None
    route_qualification: str | None = None
    dialect: str | None = None
    key_id: str | None = None
    requested: str | None = None
    resolved: str | None = None
    controls_removed: str = ""
    carriers_reattached: int = 0
    stream: bool = False
    status_code: int | None = None
    usage_status: UsageStatus = "unavailable"
    input_uncached: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_status: CostStatus = "unavailable"
    cost_usd: float | None = None
    latency_ms: float | None = None
    ttfb_ms: float | None = None
    stream_state: StreamState | None = None
    """None for a JSON call or one that never reached the upstream."""


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(EvidenceRow))
"""The evidence table's columns, in :class:`EvidenceRow` order."""
_COLUMNS = list(COLUMNS)
_V1_COLUMNS = [c for c in _COLUMNS if c != "stream_state"]
"""The columns of schema version 1 (later versions add columns by migration)."""
OUTCOME_COLUMNS: tuple[str, ...] = (
    "status_code",
    "usage_status",
    "input_uncached",
    "cache_read",
    "cache_write",
    "output_tokens",
    "reasoning_tokens",
    "cost_status",
    "cost_usd",
    "latency_ms",
    "ttfb_ms",
    "stream_state",
)
"""The columns only a call's end gives (the upstream's answer, its figures, its timing): a
row recorded before the upstream call (``pending``) holds their defaults."""
COMPLETED_COLUMNS: tuple[str, ...] = tuple(
    c for c in COLUMNS if c in ("outcome", "reason") or c in OUTCOME_COLUMNS
)
"""The columns a completion writes, in :data:`COLUMNS` order: the outcome, its reason and the
:data:`OUTCOME_COLUMNS`. The others are what the call was admitted with (its binding, route,
levels, what the body's making did), fixed when the pending row is recorded, before the
upstream call. Why not rewrite them all: a statement's cost grows with its parameters (each
bound, converted and stored): 29 of them cost ~15 us a completion, 14 ~8 us (measured)."""
_DEFAULTS = {f.name: f.default for f in fields(EvidenceRow)}
_OUTCOME_DEFAULTS = tuple(_DEFAULTS[c] for c in OUTCOME_COLUMNS)
ADMITTED_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if c not in OUTCOME_COLUMNS)
"""The columns a row recorded before its call's end binds (:func:`recording`)."""


Statement = tuple[str, Sequence[object]]
"""SQL and its parameters."""


def _literal(value: object) -> str:
    """An :data:`OUTCOME_COLUMNS` default as an SQL literal (they are None or plain words)."""
    if value is None:
        return "NULL"
    if isinstance(value, str) and value.isalpha():
        return f"'{value}'"
    raise TypeError(f"no SQL literal for the default {value!r}")


class RowSql:
    """One SQL dialect's evidence writes (``?`` for SQLite, ``%s`` for PostgreSQL), made once:
    a row's insert (:meth:`recording`) and its completion (:meth:`completing`), so both
    stores write the same columns the same way."""

    __slots__ = ("_admitted", "_insert", "_update")

    def __init__(self, mark: str, insert: str, conflict: str = "") -> None:
        into = f"{insert} INTO evidence"
        self._insert = (
            f"{into} ({', '.join(COLUMNS)}) VALUES ({', '.join(mark for _ in COLUMNS)}){conflict}"
        )
        defaults = ", ".join(_literal(v) for v in _OUTCOME_DEFAULTS)
        self._admitted = (
            f"{into} ({', '.join(ADMITTED_COLUMNS + OUTCOME_COLUMNS)}) "
            f"VALUES ({', '.join(mark for _ in ADMITTED_COLUMNS)}, {defaults}){conflict}"
        )
        sets = ", ".join(f"{c} = {mark}" for c in COMPLETED_COLUMNS)
        self._update = f"UPDATE evidence SET {sets} WHERE call_id = {mark}"

    def recording(self, row: EvidenceRow) -> Statement:
        """``row``'s insert. A row whose :data:`OUTCOME_COLUMNS` hold their defaults (every
        pending row) gets them as literals in the statement, binding only the
        :data:`ADMITTED_COLUMNS` (a third fewer parameters: ~10 -> ~6.5 us, measured)."""
        if outcome_values(row) == _OUTCOME_DEFAULTS:
            return self._admitted, admitted_values(row)
        return self._insert, insert_values(row)

    def completing(self, row: EvidenceRow) -> Statement:
        """``row``'s completion by ``call_id`` (its last parameter): the
        :data:`COMPLETED_COLUMNS`."""
        return self._update, update_values(row)


insert_values: Callable[[EvidenceRow], tuple[object, ...]] = operator.attrgetter(*_COLUMNS)
"""A row's insert parameters (in :data:`COLUMNS` order), in one C call: a generator of 32
``getattr`` cost more than the statement's own Python side (profiled)."""
admitted_values: Callable[[EvidenceRow], tuple[object, ...]] = operator.attrgetter(
    *ADMITTED_COLUMNS
)
outcome_values: Callable[[EvidenceRow], tuple[object, ...]] = operator.attrgetter(*OUTCOME_COLUMNS)
update_values: Callable[[EvidenceRow], tuple[object, ...]] = operator.attrgetter(
    *COMPLETED_COLUMNS, "call_id"
)
"""A row's completion parameters: the :data:`COMPLETED_COLUMNS`, then ``call_id``."""
_SQL = RowSql("?", "INSERT OR IGNORE")
"""SQLite's evidence writes."""


class EvidenceStore(Protocol):
    """Where evidence rows and fixed conversation efforts and intents live."""

    def record(self, row: EvidenceRow) -> None:
        """Insert ``row``, committed when this returns (a row with its ``call_id`` already
        stored is left as it is); :class:`StoreUnavailable` when it cannot be."""
        ...

    def complete(self, row: EvidenceRow) -> None:
        """Rewrite the stored row with ``row.call_id`` with ``row``'s outcome
        (:data:`COMPLETED_COLUMNS`; what the call was admitted with stays as recorded),
        committed when this returns; :class:`StoreUnavailable` when it cannot be."""
        ...

    def fix_effort(self, conversation_id: str, level: str) -> str:
        """Fix ``level`` for a new conversation; return the level it was fixed with."""
        ...

    def fix_intent(self, conversation_id: str, requested: str) -> str:
        """Fix the requested product intent (``auto``, ``low``...) for a new conversation;
        return the intent it was fixed with."""
        ...

    def rows(self, conversation_id: str | None = None) -> list[EvidenceRow]: ...

    def close(self) -> None: ...


def check_intent(store: EvidenceStore, conversation_id: str, requested: str) -> None:
    """Fix ``requested`` for a new conversation, or refuse a later turn asking for another
    intent (``intent-changed``), even when both resolve to the same level: a conversation
    created at ``Auto`` stays ``Auto`` (it follows the policy), one created at ``High`` stays
    ``High``."""
    fixed = store.fix_intent(conversation_id, requested)
    if fixed != requested:
        raise PolicyRefusal(
            "intent-changed",
            f"conversation was created asking {fixed}, this binding asks {requested}",
        )


def fill_usage(row: EvidenceRow, usage: Usage | None, prices: Mapping[str, float] | None) -> None:
    """Fill usage and cost evidence: reported figures only, statuses say what is known (the
    gateway and the LiteLLM hook share this rule)."""
    if usage is None:
        return
    uncached, read, written, output = (
        usage.input_uncached,
        usage.cache_read,
        usage.cache_write,
        usage.output,
    )
    if uncached is None and read is None and written is None and output is None:
        return
    row.usage_status = "reported"
    row.input_uncached = uncached
    row.cache_read = read
    row.cache_write = written
    row.output_tokens = output
    row.reasoning_tokens = usage.reasoning
    if usage.cost_usd is not None:
        row.cost_status, row.cost_usd = "confirmed", usage.cost_usd
    elif prices:
        figures = {
            "input_uncached": uncached,
            "cache_read": read,
            "cache_write": written,
            "output": output,
        }
        row.cost_status = "estimated"
        row.cost_usd = sum((figures.get(k) or 0) * p / 1e6 for k, p in prices.items())


def row_from_values(values: Mapping[str, object]) -> EvidenceRow:
    """An :class:`EvidenceRow` from a database row by column name."""
    kw = dict(values)
    kw["stream"] = bool(kw["stream"])
    return EvidenceRow(**kw)  # type: ignore[arg-type]


SQLITE_MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "evidence rows, fixed efforts and intents, vault",
        (
            f"CREATE TABLE IF NOT EXISTS evidence ({', '.join(_V1_COLUMNS)})",
            "CREATE INDEX IF NOT EXISTS evidence_conv ON evidence (conversation_id)",
            "CREATE TABLE IF NOT EXISTS conversation_effort ("
            " conversation_id TEXT PRIMARY KEY, level TEXT NOT NULL, created REAL NOT NULL)",
            "CREATE TABLE IF NOT EXISTS conversation_intent ("
            " conversation_id TEXT PRIMARY KEY, requested TEXT NOT NULL, created REAL NOT NULL)",
            "CREATE TABLE IF NOT EXISTS vault_conversation ("
            " seq INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL UNIQUE)",
            "CREATE TABLE IF NOT EXISTS vault ("
            " seq INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL,"
            " key TEXT NOT NULL, value TEXT NOT NULL, UNIQUE (conversation_id, key))",
        ),
    ),
    (
        2,
        "evidence first: unique call ids, stream state",
        (
            "ALTER TABLE evidence ADD COLUMN stream_state",
            "CREATE UNIQUE INDEX IF NOT EXISTS evidence_call ON evidence (call_id)",
        ),
    ),
)
"""SQLite schema steps by version. The evidence table keeps untyped columns (as files written
before migrations existed have them)."""


def sqlite_migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` (autocommit mode) to the latest schema; return its version. A database
    newer than this code is refused (fail closed)."""
    latest = SQLITE_MIGRATIONS[-1][0]
    db.execute("BEGIN IMMEDIATE")  # one migrating writer at a time, across processes
    try:
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied REAL NOT NULL)"
        )
        (current,) = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
        if current > latest:
            raise ConfigError(
                f"the evidence database has schema version {current}; this reasonwire knows "
                f"up to {latest}"
            )
        for version, description, steps in SQLITE_MIGRATIONS:
            if version > current:
                for step in steps:
                    _sqlite_step(db, step)
                db.execute(
                    "INSERT INTO schema_version VALUES (?, ?, ?)",
                    (version, description, time.time()),
                )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return max(int(current), latest)


def _sqlite_step(db: sqlite3.Connection, step: str) -> None:
    """One migration step, idempotent: SQLite has no ``ADD COLUMN IF NOT EXISTS``, so an
    added column that a table already has (a file written before migrations existed, with
    every column of its day) is skipped."""
    words = step.split()
    if words[:2] == ["ALTER", "TABLE"] and words[3:5] == ["ADD", "COLUMN"]:
        have = {r[1] for r in db.execute(f"PRAGMA table_info({words[2]})")}
        if words[5] in have:
            return
    db.execute(step)


BUSY_TIMEOUT_MS = 30_000
"""How long a waiting write waits for another connection's lock (``sqlite3.connect``'s
``timeout``, :meth:`NoWait.waiting`); a write that must not wait (:meth:`NoWait.run`) runs
with 0."""
CHECKPOINT_EVERY = 1000
"""Commits between two WAL checkpoints (SQLite's own default is every 1000 WAL pages; a
commit of one evidence row writes a few)."""
CATCH_UP_ROUNDS = 20
"""PASSIVE checkpoint rounds at most per checkpoint (:meth:`NoWait.checkpoint`)."""
WAL_SIZE_LIMIT = 64 * 1024 * 1024
"""Bytes the WAL file is cut back to when a write starts it over (``journal_size_limit``:
not to nothing, since a file written over costs less than one grown again)."""


def _wal(db: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, asked again while another connection holds the lock it
    needs, up to the busy timeout. Why: SQLite may answer this pragma ``SQLITE_BUSY`` at once,
    without its busy handler (two gateway replicas started together on one file: the second
    exited with "database is locked" in the gateway bench)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode not in _BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def sqlite_connect(path: str) -> sqlite3.Connection:
    """A migrated autocommit connection (WAL for files; its checkpoints are run by
    :class:`NoWait`, never inside a commit)."""
    db = sqlite3.connect(
        path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
    )
    if path != ":memory:":
        _wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
    sqlite_migrate(db)
    return db


_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def keeps(store: object, base: type, *methods: str) -> bool:
    """Whether ``store``'s class keeps ``base``'s own ``methods``: a store's ``writes_now``
    (its ``_now`` writes do what the waiting ones would) holds only then - a subclass that
    changes one (to audit or fail its writes) may wait, and goes the waiting way."""
    key = (type(store), base, methods)
    kept = _KEPT.get(key)
    if kept is None:
        kept = _KEPT[key] = all(getattr(key[0], m) is getattr(base, m) for m in methods)
    return kept


_KEPT: dict[tuple[type, type, tuple[str, ...]], bool] = {}
""":func:`keeps` by class (asked on every write: a class's methods are fixed once defined)."""


def _all_or_none(statements: Sequence[Statement], db: sqlite3.Connection) -> None:
    """``statements`` in one transaction: on any failure (a lock held elsewhere included)
    it is rolled back, so nothing of it stays, and the failure is raised."""
    if len(statements) == 1:
        db.execute(*statements[0])
        return
    try:
        db.execute("BEGIN IMMEDIATE")
        for sql, values in statements:
            db.execute(sql, values)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


class NoWait:
    """One SQLite connection and the lock its users take, with writes that never wait.

    Why: the gateway's event loop may commit a row itself, without a hop to a store thread
    (a hop costs more than the commit), only if that commit cannot wait. :meth:`run` does the
    work only when the lock is free and with SQLite's busy timeout at 0: another thread's
    statement, another process's write lock (a replica, a checkpoint) make it return False
    at once with nothing written (each statement, or the caller's transaction, is atomic),
    and the caller takes the waiting way on a store thread. With ``synchronous=NORMAL`` in WAL
    mode a commit writes the WAL without fsync (a committed row survives a crash of the
    process, as before); the fsyncs come with checkpoints, which therefore never run inside a
    commit (``wal_autocheckpoint=0``): every :data:`CHECKPOINT_EVERY` commits one runs on a
    thread of its own, on a connection of its own (PASSIVE: it blocks no writer, and it does
    not hold :attr:`lock`, so the writes that must not wait go on during its fsyncs). A
    PASSIVE checkpoint copies back only the frames that were there when it began, and SQLite
    starts the WAL over only when a write finds every frame copied back: under sustained load
    one always came meanwhile, and the WAL grew without end (500 MB in 30 s of the gateway
    bench, though each checkpoint copied back every frame it saw). So a checkpoint goes
    round again, each round copying only what came during the one before, until a round
    finds no new frame (at most :data:`CATCH_UP_ROUNDS`; they converge in a few under the
    bench's load): the next write then starts the WAL over. It never takes the write lock.

    The waiting uses of the connection (the store threads', another tool's) go through
    :meth:`waiting`, which gives it SQLite's busy timeout of :data:`BUSY_TIMEOUT_MS`. The
    connection keeps whichever timeout it was last given: a ``PRAGMA busy_timeout`` runs only
    when a use of the other kind comes, not twice around every commit (on the gateway, whose
    writes are nearly all :meth:`run`, those two statements were a twentieth of its
    sequential CPU, profiled)."""

    __slots__ = ("_checkpointing", "_commits", "_timeout", "db", "lock", "path")

    def __init__(self, path: str) -> None:
        self.lock = threading.Lock()
        with self.lock:
            self.db = sqlite_connect(path)
            self._timeout = BUSY_TIMEOUT_MS  # what sqlite_connect gave it
        self.path = path
        self._commits = 0
        self._checkpointing = threading.Lock()

    def _busy_timeout(self, ms: int) -> sqlite3.Connection:
        """The connection with SQLite's busy timeout at ``ms``, set only if it was not (the
        caller holds :attr:`lock`)."""
        db = self.db
        if self._timeout != ms:
            db.execute(f"PRAGMA busy_timeout={ms}")
            self._timeout = ms
        return db

    @contextlib.contextmanager
    def waiting(self) -> Iterator[sqlite3.Connection]:
        """The connection for work that may wait: :attr:`lock` held (waited for) and a
        lock held elsewhere waited for up to :data:`BUSY_TIMEOUT_MS`."""
        with self.lock:
            yield self._busy_timeout(BUSY_TIMEOUT_MS)

    def transaction(self, statements: Sequence[Statement]) -> bool:
        """:meth:`run` of ``statements``, all in one transaction or none (one statement is a
        transaction by itself in autocommit mode: no ``BEGIN``/``COMMIT`` around it)."""
        return self.run(partial(_all_or_none, statements))

    def run(self, work: Callable[[sqlite3.Connection], object]) -> bool:
        """``work(db)`` now, or False at once (nothing written) when it would wait; a
        database error other than a lock held elsewhere raises :class:`StoreUnavailable`."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            work(self._busy_timeout(0))
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in _BUSY:
                return False
            raise StoreUnavailable(f"evidence store: {type(exc).__name__}") from None
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"evidence store: {type(exc).__name__}") from None
        finally:
            self.lock.release()
        self.committed()
        return True

    def committed(self) -> None:
        """Count a commit; every :data:`CHECKPOINT_EVERY`, checkpoint on a thread."""
        self._commits += 1
        if self.path != ":memory:" and self._commits % CHECKPOINT_EVERY == 0:
            threading.Thread(
                target=self._checkpoint, name="reasonwire-checkpoint", daemon=True
            ).start()

    def _checkpoint(self) -> None:
        if not self._checkpointing.acquire(blocking=False):
            return  # one is running: it takes what was written since
        try:
            with contextlib.suppress(sqlite3.Error):
                self.checkpoint()
        finally:
            self._checkpointing.release()

    def checkpoint(self) -> None:
        """Copy the WAL back into the database, round after round until a round finds no
        frame the one before had not seen (see the class); on a connection of its own."""
        db = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        try:
            seen = -1
            for _ in range(CATCH_UP_ROUNDS):
                _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if frames == seen:
                    return
                seen = frames
        finally:
            db.close()


class FixedOnce:
    """``fix_effort`` and ``fix_intent`` of a store, over its one primitive :meth:`_first`
    (insert the value unless the conversation has one, return the one stored), with a cache:
    a fixed value never changes, so a cache hit is always current."""

    def __init__(self) -> None:
        self._efforts: dict[str, str] = {}
        self._intents: dict[str, str] = {}

    def _first(self, table: str, column: str, conv: str, value: str) -> str:
        raise NotImplementedError

    def _fix(self, table: str, column: str, cache: dict[str, str], conv: str, value: str) -> str:
        known = cache.get(conv)
        if known is None:
            known = cache[conv] = self._first(table, column, conv, value)
        return known

    def fixed(self, conversation_id: str) -> bool:
        """Both fixed values of the conversation are cached: its ``fix_effort`` and
        ``fix_intent`` then read no store, so a caller may run them off the store threads."""
        return conversation_id in self._efforts and conversation_id in self._intents

    def fix_effort(self, conversation_id: str, level: str) -> str:
        return self._fix("conversation_effort", "level", self._efforts, conversation_id, level)

    def fix_intent(self, conversation_id: str, requested: str) -> str:
        return self._fix(
            "conversation_intent", "requested", self._intents, conversation_id, requested
        )


class SQLiteStore(FixedOnce):
    """Embedded store. WAL mode, one connection guarded by a lock (the gateway is one process;
    calls are short). ``path=":memory:"`` for a throwaway store. Database errors (a locked or
    unwritable file) raise :class:`StoreUnavailable`. :meth:`record_now` and
    :meth:`complete_now` are the writes that never wait (:class:`NoWait`)."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        super().__init__()
        self.path = str(path)
        self._conn = NoWait(self.path)
        self._lock = self._conn.lock
        self._db = self._conn.db

    def record(self, row: EvidenceRow) -> None:
        statement = _SQL.recording(row)
        try:
            with self._conn.waiting() as db:
                db.execute(*statement)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"evidence store: {type(exc).__name__}") from None
        self._conn.committed()

    def complete(self, row: EvidenceRow) -> None:
        statement = _SQL.completing(row)
        try:
            with self._conn.waiting() as db:
                db.execute(*statement)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"evidence store: {type(exc).__name__}") from None
        self._conn.committed()

    @property
    def writes_now(self) -> bool:
        """:meth:`record_now` and :meth:`complete_now` write what :meth:`record` and
        :meth:`complete` would: false for a subclass that changes either (a store that
        audits or fails its writes may wait; its writes go the waiting way)."""
        return keeps(self, SQLiteStore, "record", "complete")

    @staticmethod
    def recording(row: EvidenceRow) -> Statement:
        """:meth:`record`'s statement, for :meth:`write_now`."""
        return _SQL.recording(row)

    @staticmethod
    def completing(row: EvidenceRow) -> Statement:
        """:meth:`complete`'s statement, for :meth:`write_now`."""
        return _SQL.completing(row)

    def write_now(self, statements: Sequence[Statement]) -> bool:
        """:meth:`recording` and :meth:`completing` statements (of several rows) committed in
        one transaction if it needs no waiting (:class:`NoWait`): all of them when this
        returns True, none when it returns False or raises :class:`StoreUnavailable`."""
        return self._conn.transaction(statements)

    def record_now(self, row: EvidenceRow) -> bool:
        """:meth:`record` if it needs no waiting, committed when this returns True; False
        (nothing written) when the connection or the file is busy."""
        return self.write_now((self.recording(row),))

    def complete_now(self, row: EvidenceRow) -> bool:
        """:meth:`complete` if it needs no waiting (as :meth:`record_now`)."""
        return self.write_now((self.completing(row),))

    def _first(self, table: str, column: str, conv: str, value: str) -> str:
        try:
            with self._conn.waiting() as db:
                # First writer wins (across processes too: the primary key decides), then
                # every caller reads what won.
                db.execute(
                    f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?)", (conv, value, time.time())
                )
                (fixed,) = db.execute(
                    f"SELECT {column} FROM {table} WHERE conversation_id = ?", (conv,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"evidence store: {type(exc).__name__}") from None
        self._conn.committed()
        return str(fixed)

    def rows(self, conversation_id: str | None = None) -> list[EvidenceRow]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM evidence"
        args: tuple[str, ...] = ()
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            args = (conversation_id,)
        with self._conn.waiting() as db:
            found = db.execute(sql + " ORDER BY ts, rowid", args).fetchall()
        return [row_from_values(dict(zip(_COLUMNS, values, strict=True))) for values in found]

    def close(self) -> None:
        with self._lock:
            self._db.close()
