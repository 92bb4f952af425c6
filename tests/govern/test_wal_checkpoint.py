"""The evidence store's WAL stays bounded while writes keep coming (``NoWait.checkpoint``).

SQLite starts a WAL over only when a write finds every frame copied back into the database;
a PASSIVE checkpoint copies back the frames it saw when it began, so a commit that lands
while it runs leaves the WAL to grow (the gateway bench: 500 MB in 30 s). The checkpoint
goes round until a round finds nothing new, at most ``CATCH_UP_ROUNDS`` rounds, and the WAL
file is cut back to ``WAL_SIZE_LIMIT`` when a write starts it over.

A commit "during" a round is made deterministic here: another connection holds a write
transaction open while the round runs and commits right after it (PASSIVE takes no write
lock, so it runs beside that writer and sees none of its frames). Whether the WAL started
over is read from the WAL file's own header (https://sqlite.org/fileformat2.html#walformat:
bytes 12-15, the checkpoint sequence number, big-endian, one more at each start-over).
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reasonwire.govern import evidence
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore


def _sequence(db_path: Path) -> int:
    raw = Path(f"{db_path}-wal").read_bytes()[:32]
    return int(struct.unpack(">I", raw[12:16])[0])


def _wal_size(db_path: Path) -> int:
    return Path(f"{db_path}-wal").stat().st_size


class _Rounds:
    """Counts the checkpoint's PASSIVE rounds; during the first ``busy`` of them another
    connection commits a row (opened before the round, committed after it)."""

    def __init__(self, db_path: Path, busy: int) -> None:
        self.count = 0
        self.busy = busy
        self.other = sqlite3.connect(db_path, isolation_level=None)
        self.other.execute("CREATE TABLE IF NOT EXISTS pad (x)")

    def round(self, run: Callable[[], Any]) -> Any:
        self.count += 1
        if self.count > self.busy:
            return run()
        self.other.execute("BEGIN IMMEDIATE")
        self.other.execute("INSERT INTO pad VALUES (?)", (b"x" * 2000,))
        try:
            return run()
        finally:
            self.other.execute("COMMIT")


@pytest.fixture
def rounds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path, int], _Rounds]]:
    """Make the checkpoint's own connection (``timeout=0``) count, and be raced by, a
    writer (the checkpoint is the only caller that connects with ``timeout=0``)."""
    made: list[_Rounds] = []
    real = sqlite3.connect

    def install(db_path: Path, busy: int) -> _Rounds:
        r = _Rounds(db_path, busy)
        made.append(r)

        class Counted(sqlite3.Connection):
            def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
                if sql.startswith("PRAGMA wal_checkpoint"):
                    run = super().execute
                    cursor: sqlite3.Cursor = r.round(lambda: run(sql, *args))
                    return cursor
                return super().execute(sql, *args)

        def connect(path: Any, *a: Any, **kw: Any) -> sqlite3.Connection:
            if kw.get("timeout") == 0:
                kw["factory"] = Counted
            return real(path, *a, **kw)

        monkeypatch.setattr(sqlite3, "connect", connect)
        return r

    yield install
    for r in made:
        r.other.close()


def _store_with_rows(db_path: Path, n: int) -> SQLiteStore:
    store = SQLiteStore(db_path)
    for _ in range(n):
        assert store.record_now(EvidenceRow(outcome="pending", conversation_id="c"))
    return store


def test_a_commit_during_the_checkpoint_still_lets_the_next_write_start_the_wal_over(
    tmp_path: Path, rounds: Callable[[Path, int], _Rounds]
) -> None:
    db = tmp_path / "ev.sqlite"
    store = _store_with_rows(db, 50)
    before = _sequence(db)
    r = rounds(db, 2)  # a commit lands during each of the first two rounds
    store._conn.checkpoint()
    assert r.count == 4  # two raced rounds, one that caught up, one that found nothing new
    assert store.record_now(EvidenceRow(outcome="pending", conversation_id="c"))
    assert _sequence(db) == before + 1


def test_a_checkpoint_raced_by_every_round_stops_after_the_last_round(
    tmp_path: Path, rounds: Callable[[Path, int], _Rounds]
) -> None:
    db = tmp_path / "ev.sqlite"
    store = _store_with_rows(db, 5)
    before = _sequence(db)
    r = rounds(db, evidence.CATCH_UP_ROUNDS)
    store._conn.checkpoint()
    assert r.count == evidence.CATCH_UP_ROUNDS
    assert store.record_now(EvidenceRow(outcome="pending", conversation_id="c"))
    assert _sequence(db) == before  # the last round was raced too: the WAL goes on


def test_one_round_more_than_the_races_catches_up(
    tmp_path: Path, rounds: Callable[[Path, int], _Rounds]
) -> None:
    """The boundary: raced in all rounds but the last, the last one catches up (and finds
    frames the one before had not seen, so it is the last only because of the cap)."""
    db = tmp_path / "ev.sqlite"
    store = _store_with_rows(db, 5)
    before = _sequence(db)
    r = rounds(db, evidence.CATCH_UP_ROUNDS - 1)
    store._conn.checkpoint()
    assert r.count == evidence.CATCH_UP_ROUNDS
    assert store.record_now(EvidenceRow(outcome="pending", conversation_id="c"))
    assert _sequence(db) == before + 1


def test_the_wal_file_is_cut_back_to_its_limit_when_a_write_starts_it_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "WAL_SIZE_LIMIT", 64 * 1024)
    db = tmp_path / "ev.sqlite"
    store = _store_with_rows(db, 300)
    grown = _wal_size(db)
    assert grown > 64 * 1024
    store._conn.checkpoint()
    assert _wal_size(db) == grown  # copied back, not yet started over
    assert store.record_now(EvidenceRow(outcome="pending", conversation_id="c"))
    assert _wal_size(db) <= 64 * 1024
