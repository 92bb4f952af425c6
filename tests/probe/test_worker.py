"""The background worker: rows land after flush(), in call order, even for abandoned streams
and for calls large enough to be handed over in batches while they stream."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx
import pytest

from reasonwire.probe import ProbeTransport, flush, observe_bytes
from reasonwire.probe import observer as observer_mod
from tests.probe.indep import count
from tests.probe.streams import chat_stream, chunked, flushed_rows, mock

URL = "http://up/v1/chat/completions"
BODY = chat_stream([("reasoning_content", "pensée 😀 ")] * 40 + [("content", "答え ")] * 40)
CHUNKS = chunked(BODY, list(range(61, len(BODY), 61)))


def test_abandoned_stream_row_lands_after_flush(tmp_path: Path) -> None:
    """The consumer stops halfway and drops the iterator without closing it."""
    half = len(CHUNKS) // 2
    it = observe_bytes(iter(CHUNKS), dialect="chat", session_id="gone", ledger_dir=tmp_path)
    got = [next(it) for _ in range(half)]
    assert all(a is b for a, b in zip(got, CHUNKS, strict=False))  # the very same objects
    del it
    gc.collect()
    assert flush(timeout=30)
    (row,) = flushed_rows(tmp_path).rows
    seen = b"".join(CHUNKS[:half])
    r, t, _ = count("chat", seen[: seen.rfind(b"\n\n") + 2])  # whole events seen
    assert row["status"] == "aborted" and row["wireBytes"] == len(seen)
    assert row["reasoningBytes"] == r and row["textBytes"] == t and r > 0


def test_spilled_batches_count_like_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call over the hold cap is decoded in batches while it streams: same bytes for the
    caller, same counts as an independent count of the whole stream."""
    monkeypatch.setattr(observer_mod, "SPILL_BYTES", 300)
    transport = ProbeTransport("spill", ledger_dir=tmp_path, inner=mock(CHUNKS))
    with (
        httpx.Client(transport=transport) as c,
        c.stream("POST", URL, json={"model": "m"}) as resp,
    ):
        got = list(resp.iter_raw())
    assert got == CHUNKS
    (row,) = flushed_rows(tmp_path).rows
    r, t, k = count("chat", BODY)
    assert (row["reasoningBytes"], row["textBytes"], row["toolBytes"]) == (r, t, k)
    assert row["status"] == "ok" and row["wireBytes"] == len(BODY) and "usage" in row


def test_rows_keep_call_order(tmp_path: Path) -> None:
    for i in range(20):
        body = chat_stream([("content", "x" * i)])
        list(observe_bytes([body], dialect="chat", session_id="order", ledger_dir=tmp_path))
    rows = flushed_rows(tmp_path).rows
    assert [row["textBytes"] for row in rows] == list(range(20))
