"""Hypothesis: any stream, any chunking -> the caller gets the same bytes, the same chunks in
the same order, and the row's counts do not depend on the chunking."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire.probe import AsyncProbeTransport, ProbeTransport, observe_bytes
from reasonwire.probe.call import CallObserver
from tests.probe.indep import count
from tests.probe.streams import anthropic_stream, chat_stream, chunked, mock, rows_now

texts = st.text(min_size=0, max_size=40)
fields = st.sampled_from(["reasoning_content", "content", "arguments"])
cuts = st.lists(st.integers(min_value=1, max_value=4000), max_size=30)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


def _rows(d: Path) -> list[dict[str, object]]:
    return rows_now(d).rows


@SETTINGS
@given(parts=st.lists(st.tuples(fields, texts), max_size=12), a=cuts, b=cuts)
def test_chat_any_chunking(parts: list[tuple[str, str]],
                           a: list[int], b: list[int]) -> None:  # fmt: skip
    import tempfile

    d = Path(tempfile.mkdtemp())
    body = chat_stream(parts)
    seen = []
    for cut in (a, b):
        chunks = chunked(body, cut)
        client = httpx.Client(transport=ProbeTransport("h", ledger_dir=d, inner=mock(chunks)))
        with client.stream("POST", "http://up/v1/chat/completions", json={"model": "m"}) as r:
            got = list(r.iter_raw())
        assert got == chunks  # same chunks, same order, nothing added or merged
        assert b"".join(got) == body
        seen.append(_rows(d)[-1])
    r1, r2 = seen
    keys = ("reasoningBytes", "textBytes", "toolBytes", "wireBytes", "usage", "status")
    assert {k: r1[k] for k in keys} == {k: r2[k] for k in keys}
    assert (r1["reasoningBytes"], r1["textBytes"], r1["toolBytes"]) == count("chat", body)
    assert r1["status"] == "ok" and r1["wireBytes"] == len(body)


@SETTINGS
@given(thinking=st.lists(texts, max_size=8), text=st.lists(texts, max_size=8), a=cuts)
async def test_anthropic_async_any_chunking(thinking: list[str], text: list[str],
                                            a: list[int]) -> None:  # fmt: skip
    import tempfile

    d = Path(tempfile.mkdtemp())
    body = anthropic_stream(thinking, text)
    chunks = chunked(body, a)
    transport = AsyncProbeTransport("h", ledger_dir=d, inner=mock(chunks))
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", "http://up/v1/messages", json={"model": "x"}) as r,
    ):
        got = [c async for c in r.aiter_raw()]
    assert got == chunks
    (row,) = _rows(d)
    assert (row["reasoningBytes"], row["textBytes"], row["toolBytes"]) == count("anthropic", body)
    # Anthropic reports neither a total nor reasoning tokens: both absent, never computed
    assert row["usage"] == {"inputTokens": 10, "outputTokens": 9, "cacheReadTokens": 5,
                            "cacheWriteTokens": 0}  # fmt: skip


@SETTINGS
@given(parts=st.lists(st.tuples(fields, texts), max_size=12), a=cuts)
def test_observe_bytes_any_chunking(parts: list[tuple[str, str]], a: list[int]) -> None:
    import tempfile

    d = Path(tempfile.mkdtemp())
    body = chat_stream(parts)
    chunks = chunked(body, a)
    out = list(observe_bytes(iter(chunks), dialect="chat", session_id="o", ledger_dir=d))
    assert out == chunks
    (row,) = _rows(d)
    assert (row["reasoningBytes"], row["textBytes"], row["toolBytes"]) == count("chat", body)
    u = row["usage"]  # prompt_tokens 100 of which 40 cached: uncached input is 60
    assert (u["inputTokens"], u["cacheReadTokens"], u["cacheWriteTokens"]) == (60, 40, 0)
    assert "totalTokens" not in u  # the stream reported no total_tokens


# -- batched decoding: counts are exact across batch boundaries; the lag is bounded ----------

BATCH = 32 * 1024  # the documented bound (probe/call.py): decoded within 32 KB of passing


def _observer() -> CallObserver:
    return CallObserver(session_id="s", dialect="chat", provider=None, model=None,
                        purpose=None, stream=True, http_status=200)  # fmt: skip


def test_decoding_lags_at_most_the_batch() -> None:
    obs = _observer()
    obs.feed(b"x" * (BATCH - 1))
    assert obs.decoded_bytes == 0  # one byte short of the bound: it waits
    obs.feed(b":")  # a comment byte completes the batch
    assert obs.decoded_bytes == BATCH
    obs.feed(b"\n\n")
    assert obs.decoded_bytes == BATCH  # the next batch waits again


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(min_value=100, max_value=3 * BATCH), min_size=1, max_size=8))
def test_large_stream_counts_exact_across_batches(sizes: list[int]) -> None:
    parts = [(f, f"step é 😀 {i} " * 9) for i in range(600)
             for f in ("reasoning_content", "content", "arguments")]  # fmt: skip
    body = chat_stream(parts)
    assert len(body) > 8 * BATCH
    points = list(itertools.accumulate(itertools.islice(itertools.cycle(sizes), len(body) // 100)))
    obs = _observer()
    for chunk in chunked(body, points):
        obs.feed(chunk)
        assert obs.wire_bytes - obs.decoded_bytes < BATCH
    obs.mark_complete()
    obs.finish()
    assert obs.row is not None
    row = obs.row
    assert (row["reasoningBytes"], row["textBytes"], row["toolBytes"]) == count("chat", body)
    assert row["status"] == "ok" and row["usage"]["inputTokens"] == 60
