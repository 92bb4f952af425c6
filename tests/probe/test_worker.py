"""Durability: a call's row is on disk when its response is closed (no flush, no wait), in
call order, for finished, abandoned and closed-early streams; counting happens as the chunks
pass (nothing is left to decode when the call ends)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.probe import ProbeTransport, observe_bytes
from reasonwire.probe import call as call_mod
from reasonwire.wire.chat import _stream as chat_stream_mod
from tests.probe.indep import count
from tests.probe.streams import chat_stream, chunked, mock, rows_now

URL = "http://up/v1/chat/completions"
BODY = chat_stream([("reasoning_content", "pensée 😀 ")] * 40 + [("content", "答え ")] * 40)
CHUNKS = chunked(BODY, list(range(61, len(BODY), 61)))


def test_abandoned_stream_row_on_disk_when_collected(tmp_path: Path) -> None:
    """The consumer stops halfway and drops the iterator without closing it."""
    half = len(CHUNKS) // 2
    it = observe_bytes(iter(CHUNKS), dialect="chat", session_id="gone", ledger_dir=tmp_path)
    got = [next(it) for _ in range(half)]
    assert all(a is b for a, b in zip(got, CHUNKS, strict=False))  # the very same objects
    assert rows_now(tmp_path).rows == []  # still open
    del it
    gc.collect()
    (row,) = rows_now(tmp_path).rows
    seen = b"".join(CHUNKS[:half])
    r, t, _ = count("chat", seen[: seen.rfind(b"\n\n") + 2])  # whole events seen
    assert row["status"] == "aborted" and row["wireBytes"] == len(seen)
    assert row["reasoningBytes"] == r and row["textBytes"] == t and r > 0


def test_row_on_disk_when_response_closes(tmp_path: Path) -> None:
    transport = ProbeTransport("dur", ledger_dir=tmp_path, inner=mock(CHUNKS))
    with httpx.Client(transport=transport) as c:
        with c.stream("POST", URL, json={"model": "m"}) as resp:
            it = resp.iter_raw()
            next(it)
            assert rows_now(tmp_path).rows == []
        (row,) = rows_now(tmp_path).rows  # closed early: on disk now
        assert row["status"] == "aborted"
        with c.stream("POST", URL, json={"model": "m"}) as resp:
            got = list(resp.iter_raw())
            (_, row2) = rows_now(tmp_path).rows  # exhausted: on disk before the close
        assert got == CHUNKS and row2["status"] == "ok"
        assert (row2["reasoningBytes"], row2["textBytes"], row2["toolBytes"]) == count("chat", BODY)


def test_counting_happens_as_chunks_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every byte reaches the decoder within 32 KB (the documented batch) of being handed to
    the caller, and all of it by the time the response is closed: no end-of-call decode of
    more than one batch."""
    fed: list[int] = []
    caller_saw: list[int] = []
    real = chat_stream_mod.ChatStreamDecoder.absorb  # the probe's feed (no events read)

    def spy(self: Any, data: bytes) -> Any:
        fed.append(len(data))
        return real(self, data)

    big = chat_stream([("reasoning_content", f"thought {i} " * 20) for i in range(1500)])
    chunks = [big[i : i + 700] for i in range(0, len(big), 700)]  # one event-ish per chunk
    assert len(big) > 5 * 32 * 1024
    monkeypatch.setattr(chat_stream_mod.ChatStreamDecoder, "absorb", spy)
    transport = ProbeTransport("inc", ledger_dir=tmp_path, inner=mock(chunks))
    with (
        httpx.Client(transport=transport) as c,
        c.stream("POST", URL, json={"model": "m"}) as resp,
    ):
        for chunk in resp.iter_raw():
            caller_saw.append(len(chunk))
            assert sum(caller_saw) - sum(fed) < 32 * 1024  # counted as it passes, bounded lag
        assert len(fed) > 5  # decoded in several batches during the stream, not once at the end
    assert sum(fed) == len(big)
    (row,) = rows_now(tmp_path).rows
    assert row["reasoningBytes"] == count("chat", big)[0]


def test_rows_keep_call_order(tmp_path: Path) -> None:
    for i in range(20):
        body = chat_stream([("content", "x" * i)])
        list(observe_bytes([body], dialect="chat", session_id="order", ledger_dir=tmp_path))
    rows = rows_now(tmp_path).rows
    assert [row["textBytes"] for row in rows] == list(range(20))


def test_large_non_stream_body_not_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call_mod, "MAX_PARSE_BYTES", 100)
    body = b'{"choices":[{"message":{"role":"assistant","content":"' + b"x" * 200 + b'"}}]}'
    list(observe_bytes([body[:90], body[90:]], dialect="chat", session_id="big",
                       ledger_dir=tmp_path, stream=False))  # fmt: skip
    (row,) = rows_now(tmp_path).rows
    assert row["wireBytes"] == len(body) and "too large" in row["probeError"]
