"""Usage evidence per gateway call, behind a store interface (SQLite by default).

One row per call the gateway answered, refusals included (with their reason). A row holds ids,
levels, figures and statuses only, never a message or reasoning text, never a binding token.
Usage figures are ``None`` (SQL NULL) when the provider did not report them, and
``usage_status`` says ``unavailable``: a missing figure is never written as 0.

The store also fixes each conversation's effort at creation (the first verified call), so
several gateway replicas sharing one database agree on it. :class:`EvidenceStore` is the
interface; :class:`SQLiteStore` the embedded implementation. A PostgreSQL store would
implement the same four methods; none ships here.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, Protocol

UsageStatus = Literal["reported", "unavailable"]
CostStatus = Literal["confirmed", "estimated", "unavailable"]
Outcome = Literal["forwarded", "refused", "upstream-error"]


@dataclass
class EvidenceRow:
    outcome: Outcome
    conversation_id: str | None
    reason: str | None = None
    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
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


_COLUMNS = [f.name for f in fields(EvidenceRow)]


class EvidenceStore(Protocol):
    """Where evidence rows and fixed conversation efforts live."""

    def record(self, row: EvidenceRow) -> None: ...

    def fix_effort(self, conversation_id: str, level: str) -> str:
        """Fix ``level`` for a new conversation; return the level it was fixed with."""
        ...

    def rows(self, conversation_id: str | None = None) -> list[EvidenceRow]: ...

    def close(self) -> None: ...


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS evidence ({", ".join(_COLUMNS)});
CREATE INDEX IF NOT EXISTS evidence_conv ON evidence (conversation_id);
CREATE TABLE IF NOT EXISTS conversation_effort (
    conversation_id TEXT PRIMARY KEY, level TEXT NOT NULL, created REAL NOT NULL
);
"""


class SQLiteStore:
    """Embedded store. WAL mode, one connection guarded by a lock (the gateway is one process;
    calls are short). ``path=":memory:"`` for a throwaway store."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._efforts: dict[str, str] = {}
        with self._lock:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        self._insert = (
            f"INSERT INTO evidence ({', '.join(_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in _COLUMNS)})"
        )

    def record(self, row: EvidenceRow) -> None:
        values = tuple(getattr(row, c) for c in _COLUMNS)
        with self._lock:
            self._db.execute(self._insert, values)

    def fix_effort(self, conversation_id: str, level: str) -> str:
        known = self._efforts.get(conversation_id)
        if known is not None:
            return known  # fixed levels never change: a cache hit is always current
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO conversation_effort VALUES (?, ?, ?)",
                (conversation_id, level, time.time()),
            )
            (fixed,) = self._db.execute(
                "SELECT level FROM conversation_effort WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
        self._efforts[conversation_id] = str(fixed)
        return str(fixed)

    def rows(self, conversation_id: str | None = None) -> list[EvidenceRow]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM evidence"
        args: tuple[str, ...] = ()
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            args = (conversation_id,)
        with self._lock:
            found = self._db.execute(sql + " ORDER BY ts, rowid", args).fetchall()
        out = []
        for values in found:
            kw = dict(zip(_COLUMNS, values, strict=True))
            kw["stream"] = bool(kw["stream"])
            out.append(EvidenceRow(**kw))
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()
