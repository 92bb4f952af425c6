"""Opening a SQLite evidence file while another connection holds its lock.

SQLite may answer ``PRAGMA journal_mode=WAL`` with ``SQLITE_BUSY`` at once, without calling
its busy handler; the gateway bench saw a second replica started beside the first exit with
"database is locked". The rule: the pragma is asked again until the busy timeout, and any
other error, or busy past the timeout, is raised as it came.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reasonwire.govern import evidence


class _Busy:
    """A connection whose first ``busy`` WAL pragmas fail with ``code``."""

    def __init__(self, real: sqlite3.Connection, busy: int, code: int) -> None:
        self.real, self.left, self.code, self.asked = real, busy, code, 0

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "PRAGMA journal_mode=WAL":
            self.asked += 1
            if self.left:
                self.left -= 1
                exc = sqlite3.OperationalError("database is locked")
                exc.sqlite_errorcode = self.code
                raise exc
        return self.real.execute(sql, *args)


def _open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, busy: int, code: int, made: list[_Busy]
) -> _Busy:
    connect = sqlite3.connect

    def fake(*args: object, **kw: object) -> _Busy:
        made.append(_Busy(connect(*args, **kw), busy, code))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(evidence.sqlite3, "connect", fake)
    monkeypatch.setattr(evidence, "sqlite_migrate", lambda db: None)
    evidence.sqlite_connect(str(tmp_path / "ev.sqlite"))
    return made[0]


def test_a_busy_answer_is_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _open(tmp_path, monkeypatch, busy=3, code=sqlite3.SQLITE_BUSY, made=[])
    assert conn.asked == 4
    assert conn.real.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_another_error_is_raised_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[_Busy] = []
    with pytest.raises(sqlite3.OperationalError):
        _open(tmp_path, monkeypatch, busy=1, code=sqlite3.SQLITE_IOERR, made=made)
    assert made[0].asked == 1


def test_busy_past_the_timeout_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 29.0, 30.0, 31.0, 32.0])  # the deadline is 30 s after the first ask
    monkeypatch.setattr(evidence.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(evidence.time, "sleep", lambda s: None)
    made: list[_Busy] = []
    with pytest.raises(sqlite3.OperationalError):
        _open(tmp_path, monkeypatch, busy=10, code=sqlite3.SQLITE_BUSY, made=made)
    assert made[0].asked == 2  # asked at 0 s and at 29 s; at exactly 30 s it gives up
