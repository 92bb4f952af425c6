"""Append-only JSONL records under ``--out``: ``calls.jsonl``, ``cost.jsonl``, ``runs.jsonl``.

One JSON object per line. Each record is written with a single ``os.write`` on a descriptor
opened with ``O_APPEND``, so concurrent writers (several processes sharing ``--out``) never
interleave bytes inside a line, and a record is on disk (in the page cache) as soon as the
call returns. A process killed mid-write leaves at most a torn last line: readers skip any
line that does not parse. Every record passes :func:`reasonwire.credentials.redact_obj`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from reasonwire.credentials import redact_obj
from reasonwire.errors import ConfigError

CALLS = "calls.jsonl"
COST = "cost.jsonl"
RUNS = "runs.jsonl"


def request_key(route: str, url: str, body: Any, attempt: int) -> str:
    """The resume key of a call: route, endpoint URL (Gemini puts the model there), the exact
    request body and the lane attempt."""
    blob = json.dumps([route, url, body, attempt], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


class Records:
    """Writers for the three record files of one output directory."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out).expanduser()
        self._lock = threading.Lock()
        self._fds: dict[str, int] = {}
        self.check_writable()

    def check_writable(self) -> None:
        """Fail before any call when ``out`` cannot hold the records."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            for name in (CALLS, COST, RUNS):
                fd = os.open(self.out / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                self._fds[name] = fd
        except OSError as exc:
            self.close()
            raise ConfigError(f"--out {self.out} is not writable: {exc.strerror}") from None

    def append(self, name: str, record: Mapping[str, Any]) -> None:
        line = json.dumps(redact_obj(dict(record)), ensure_ascii=False, separators=(",", ":"))
        data = (line + "\n").encode("utf-8")
        with self._lock:
            fd = self._fds[name]
            written = os.write(fd, data)
            if written != len(data):  # pragma: no cover - regular files write whole
                raise OSError(f"short write to {self.out / name}")

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every record of a JSONL file; unparsable lines (a torn last line) are skipped.

    Parsed with orjson (about 3x the stdlib on these records: the report reads a million of
    them). Callers that keep every record should pause the cyclic GC while they do (see
    :func:`reasonwire.eval.matrix.build_matrix`): a million fresh dicts otherwise trigger
    full collections that cost more than the parsing.
    """
    p = Path(path)
    if not p.exists():
        return
    loads = orjson.loads
    with p.open("rb", buffering=1 << 20) as fh:
        for raw in fh:
            if raw[-1:] != b"\n":
                break  # torn last line of a killed writer
            try:
                rec = loads(raw)
            except orjson.JSONDecodeError:
                try:  # the writer's stdlib json also emits NaN and ints beyond 64 bits
                    rec = json.loads(raw)
                except ValueError:
                    continue
            if isinstance(rec, dict):
                yield rec
