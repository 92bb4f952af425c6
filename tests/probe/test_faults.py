"""Faults: the caller sees exactly what it would without the probe; a row with partial counts
exists where the filesystem allows."""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.probe import ProbeTransport
from reasonwire.probe import ledger as ledger_mod
from tests.probe.indep import count
from tests.probe.streams import chat_stream, chunked, mock, rows_now

URL = "http://up/v1/chat/completions"
BODY = chat_stream([("reasoning_content", "deep thought ")] * 20 + [("content", "answer ")] * 20)
CHUNKS = chunked(BODY, list(range(97, len(BODY), 97)))


def _run(transport: httpx.BaseTransport, limit: int | None = None) -> tuple[list[bytes], Any]:
    """Stream a call, keep the chunks seen and the exception raised (if any)."""
    got: list[bytes] = []
    err: Any = None
    try:
        with (
            httpx.Client(transport=transport) as client,
            client.stream("POST", URL, json={"model": "m"}) as r,
        ):
            for chunk in r.iter_raw():
                got.append(chunk)
                if limit is not None and len(got) >= limit:
                    break
    except Exception as exc:
        err = (type(exc), str(exc))
    return got, err


def test_read_only_ledger_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    real_open = os.open

    def ro_open(path: Any, flags: int, *a: Any) -> int:  # root ignores chmod: refuse like EROFS
        if str(path).startswith(str(d)) and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(ledger_mod.os, "open", ro_open)
    plain = _run(mock(CHUNKS))
    probed = _run(ProbeTransport("ro", ledger_dir=d, inner=mock(CHUNKS)))
    assert probed == plain and plain[1] is None and b"".join(plain[0]) == BODY
    assert list(d.iterdir()) == []


def test_ledger_dir_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    probed = _run(ProbeTransport("f", ledger_dir=blocker / "probe", inner=mock(CHUNKS)))
    assert probed == _run(mock(CHUNKS))


def test_disk_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ledger_mod.os, "write", full)
    probed = _run(ProbeTransport("full", ledger_dir=tmp_path, inner=mock(CHUNKS)))
    assert probed == _run(mock(CHUNKS))
    assert rows_now(tmp_path).rows == []


def test_short_write_keeps_next_row_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls = {"n": 0}

    def half(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, data[: len(data) // 2])
        return real_write(fd, data)

    monkeypatch.setattr(ledger_mod.os, "write", half)
    for _ in range(2):
        _run(ProbeTransport("short", ledger_dir=tmp_path, inner=mock(CHUNKS)))
    read = rows_now(tmp_path)
    assert len(read.rows) == 1 and read.skipped == 1


def test_consumer_abandons_halfway(tmp_path: Path) -> None:
    half = len(CHUNKS) // 2
    probed = _run(ProbeTransport("ab", ledger_dir=tmp_path, inner=mock(CHUNKS)), limit=half)
    assert probed == _run(mock(CHUNKS), limit=half)
    (row,) = rows_now(tmp_path).rows
    seen = b"".join(CHUNKS[:half])
    assert row["status"] == "aborted" and row["wireBytes"] == len(seen)
    full_r, full_t, _ = count("chat", BODY)
    assert 0 < row["reasoningBytes"] <= full_r and row["textBytes"] < full_t
    assert "usage" not in row


def test_mock_upstream_fails_mid_stream(tmp_path: Path) -> None:
    k = len(CHUNKS) // 3
    plain = _run(mock(CHUNKS, fail_after=k))
    probed = _run(ProbeTransport("mid", ledger_dir=tmp_path, inner=mock(CHUNKS, fail_after=k)))
    assert probed == plain and plain[1] is not None
    (row,) = rows_now(tmp_path).rows
    assert row["status"] == "failed" and "RemoteProtocolError" in row["error"]
    assert row["wireBytes"] == sum(map(len, CHUNKS[:k])) and row["reasoningBytes"] > 0


@pytest.fixture
def dropping_server() -> Iterator[str]:
    """Loopback HTTP server: headers announce the whole body, then half is sent and the
    connection is closed."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += conn.recv(65536)
                head, _, rest = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                cl = next(ln for ln in lines if ln.lower().startswith(b"content-length"))
                length = int(cl.split(b":")[1])
                while len(rest) < length:
                    rest += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"content-length: %d\r\n\r\n" % len(BODY))  # fmt: skip
                conn.sendall(BODY[: len(BODY) // 2])

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1/chat/completions"
    stop.set()
    srv.close()


def _real(url: str, transport: httpx.BaseTransport) -> tuple[bytes, Any]:
    got = b""
    err: Any = None
    try:
        with (
            httpx.Client(transport=transport) as c,
            c.stream("POST", url, json={"model": "m"}) as r,
        ):
            for chunk in r.iter_raw():
                got += chunk
    except Exception as exc:
        err = (type(exc), str(exc))
    return got, err


def test_upstream_drops_connection(dropping_server: str, tmp_path: Path) -> None:
    plain = _real(dropping_server, httpx.HTTPTransport())
    probed = _real(dropping_server, ProbeTransport("drop", ledger_dir=tmp_path))
    assert probed == plain
    assert plain[1] is not None and plain[0] == BODY[: len(BODY) // 2]
    (row,) = rows_now(tmp_path).rows
    assert row["status"] == "failed" and row["wireBytes"] == len(BODY) // 2
    assert row["reasoningBytes"] > 0


def test_probe_internal_failure_is_swallowed(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from reasonwire.wire.chat import _stream as cs

    def boom(self: Any, data: bytes) -> Any:
        raise RuntimeError("decoder bug")

    monkeypatch.setattr(cs.ChatStreamDecoder, "feed", boom)
    monkeypatch.setattr(cs.ChatStreamDecoder, "absorb", boom)  # the probe's bulk feed
    probed = _run(ProbeTransport("bug", ledger_dir=tmp_path, inner=mock(CHUNKS)))
    assert probed == _run(mock(CHUNKS))
    (row,) = rows_now(tmp_path).rows
    assert "decoder bug" in row["probeError"] and row["wireBytes"] == len(BODY)


def test_flag_is_read_once_per_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONWIRE_PROBE", "1")
    with httpx.Client(
        transport=ProbeTransport("flag", ledger_dir=tmp_path, inner=mock(CHUNKS))
    ) as c:
        with c.stream("POST", URL, json={"model": "m"}) as r:
            it = r.iter_raw()
            first = next(it)
            monkeypatch.setenv("REASONWIRE_PROBE", "0")  # flipped mid-call
            rest = b"".join(it)
        assert first + rest == BODY
        (row,) = rows_now(tmp_path).rows
        assert row["status"] == "ok" and row["wireBytes"] == len(BODY)
        with c.stream("POST", URL, json={"model": "m"}) as r:  # next call: off
            assert r.read() == BODY
    assert len(rows_now(tmp_path).rows) == 1


def test_provider_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONWIRE_PROBE_PROVIDERS", "openai, up")
    for host in ("up", "other"):
        t = ProbeTransport("pf", ledger_dir=tmp_path, inner=mock(CHUNKS))
        with httpx.Client(transport=t) as c:
            c.post(f"http://{host}/v1/chat/completions", json={"model": "m"}).read()
    assert [r["provider"] for r in rows_now(tmp_path).rows] == ["up"]


def test_toml_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "probe.toml"
    cfg.write_text("probe = false\n")
    monkeypatch.setenv("REASONWIRE_PROBE_CONFIG", str(cfg))
    _run(ProbeTransport("toml", ledger_dir=tmp_path / "l", inner=mock(CHUNKS)))
    assert rows_now(tmp_path / "l").rows == []
    monkeypatch.setenv("REASONWIRE_PROBE", "1")  # the environment wins over the file
    _run(ProbeTransport("toml", ledger_dir=tmp_path / "l", inner=mock(CHUNKS)))
    assert len(rows_now(tmp_path / "l").rows) == 1
