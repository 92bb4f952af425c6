"""The probe ledger: one JSONL file per session, appended one whole line per call.

Concurrency: each row is one ``os.write`` of one complete line on a descriptor opened with
``O_APPEND``, so rows from many threads and processes never interleave. A shared ``flock`` is
held while writing and the rotator takes an exclusive one, so a row written while its file is
being archived is never lost (the writer notices the file was moved and writes to the new one).

Growth: when the ``*.jsonl`` files in the directory pass the size cap, the least recently
written sessions (never the one just written) move into ``archive/<session>.<stamp>.jsonl.gz``.
Nothing is deleted: the archive holds every row, and :func:`read_rows` reads archives too.

Readers skip a line that does not parse (a torn last line from a crash, or a row cut short by
a full disk) and count it. Rows of both schemas are read: the method's (``usage.inputTokens``,
``cacheReadTokens``, ...; see :mod:`reasonwire.probe.call`) and the one written before it
(``usage.uncached``, ``cacheRead``, ``billedInput``...); :func:`row_usage` reads either.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

ARCHIVE = "archive"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def session_file_name(session_id: str) -> str:
    """A file name for ``session_id`` that cannot escape the directory."""
    name = _SAFE.sub("_", session_id)[:200] or "_"
    return name.lstrip(".") or "_"


def encode_row(row: dict[str, Any]) -> bytes:
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _lock(fd: int, exclusive: bool) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)


def append_row(
    directory: Path, session_id: str, row: dict[str, Any], cap_bytes: int, rotate: bool = True
) -> Path:
    """Append ``row`` to the session file (one write), then rotate if the cap is passed
    (``rotate=False``: the caller rotates later, see :func:`rotate_later`).

    Raises OSError on I/O failure; the caller (the probe) swallows it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (session_file_name(session_id) + ".jsonl")
    line = encode_row(row)
    for _attempt in range(5):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _lock(fd, exclusive=False)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                continue  # rotated away between open and lock: write to the new file
            written = os.write(fd, line)
            if written != len(line):
                # A short write (disk full): end the torn line so the next row stays whole.
                with contextlib.suppress(OSError):
                    os.write(fd, b"\n")
                raise OSError(errno.ENOSPC, "short write to probe ledger", str(path))
            break
        finally:
            os.close(fd)
    if rotate:
        with contextlib.suppress(OSError):  # the row is written; the next writer retries
            rotate_if_needed(directory, cap_bytes, keep=path)
    return path


def rotate_later(directory: Path, cap_bytes: int, keep: Path) -> Callable[[], None]:
    """A task that rotates ``directory`` if needed (for the probe's housekeeping thread)."""

    def task() -> None:
        with contextlib.suppress(OSError):
            rotate_if_needed(directory, cap_bytes, keep=keep)

    return task


def rotate_if_needed(directory: Path, cap_bytes: int, keep: Path | None = None) -> list[Path]:
    """Archive the oldest sessions while the live files exceed ``cap_bytes``.

    Stops at half the cap so rotation does not run on every call once the cap is reached.
    """
    files: list[tuple[float, int, Path]] = []
    total = 0
    with os.scandir(directory) as it:
        for entry in it:
            if entry.name.endswith(".jsonl"):
                try:
                    st = entry.stat()
                except FileNotFoundError:  # another process archived it just now
                    continue
                files.append((st.st_mtime, st.st_size, Path(entry.path)))
                total += st.st_size
    if total <= cap_bytes:
        return []
    archived: list[Path] = []
    for _mtime, size, path in sorted(files):
        if total <= cap_bytes // 2:
            break
        if keep is not None and path == keep:
            continue
        out = archive_session(path)
        if out is not None:
            archived.append(out)
            total -= size
    return archived


def archive_session(path: Path) -> Path | None:
    """Move one session file into a gzip archive; None if another process took it first."""
    arch = path.parent / ARCHIVE
    arch.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    moving = arch / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.rotating"
    try:
        os.rename(path, moving)  # atomic: exactly one rotator wins
    except FileNotFoundError:
        return None
    out = arch / f"{path.stem}.{stamp}.{time.monotonic_ns() % 1_000_000:06d}.jsonl.gz"
    with open(moving, "rb") as src:
        _lock(src.fileno(), exclusive=True)  # wait for writers that opened before the move
        with gzip.open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    os.unlink(moving)
    return out


@dataclass
class LedgerRead:
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    files: int = 0


def _lines(path: Path) -> Iterator[bytes]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        yield from f


def read_rows(directory: Path, include_archives: bool = True) -> LedgerRead:
    """Every parseable row under ``directory`` (live files, then archives)."""
    result = LedgerRead()
    if not directory.is_dir():
        return result
    paths = sorted(directory.glob("*.jsonl"))
    if include_archives and (directory / ARCHIVE).is_dir():
        paths += sorted((directory / ARCHIVE).glob("*.jsonl.gz"))
    for path in paths:
        result.files += 1
        try:
            for raw in _lines(path):
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                except ValueError:
                    result.skipped += 1
                    continue
                if isinstance(row, dict):
                    result.rows.append(row)
                else:
                    result.skipped += 1
        except (OSError, EOFError):
            result.skipped += 1
    return result


@dataclass(frozen=True, slots=True)
class RowUsage:
    """A row's usage, whichever schema wrote it. ``billed_input`` is uncached input + cache
    read + cache write; ``total`` is the provider's own total (None when not in the row)."""

    input_uncached: int
    cache_read: int
    cache_write: int
    output: int
    reasoning: int | None
    total: int | None

    @property
    def billed_input(self) -> int:
        return self.input_uncached + self.cache_read + self.cache_write


def _n(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def row_usage(row: dict[str, Any]) -> RowUsage | None:
    """The usage of a ledger row of either schema; None when the row has none."""
    usage = row.get("usage")
    if not isinstance(usage, dict):
        return None
    if "inputTokens" in usage or "outputTokens" in usage:  # the method's schema
        return RowUsage(
            _n(usage.get("inputTokens")) or 0,
            _n(usage.get("cacheReadTokens")) or 0,
            _n(usage.get("cacheWriteTokens")) or 0,
            _n(usage.get("outputTokens")) or 0,
            _n(usage.get("reasoningTokens")),
            _n(usage.get("totalTokens")),
        )
    # the schema before it: uncached, cacheRead, cacheWrite, billedInput, output, reasoning
    uncached, read, write = (_n(usage.get(k)) for k in ("uncached", "cacheRead", "cacheWrite"))
    billed = _n(usage.get("billedInput"))
    if uncached is None and billed is not None:
        uncached = billed - (read or 0) - (write or 0)
    return RowUsage(
        uncached or 0, read or 0, write or 0, _n(usage.get("output")) or 0,
        _n(usage.get("reasoning")), None,
    )  # fmt: skip
