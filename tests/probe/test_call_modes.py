"""The observer's three ways of counting (``probe.call.Mode``), each from a literal stream.

The rules (``reasonwire.probe.call``): a stream is decoded as it passes, a JSON body is kept
and parsed at the end, and anything the probe cannot decode - an error status, a content
encoding other than gzip/deflate/identity, a decoder that failed - is counted in bytes only,
with a ``probeError`` note; a stream decoder that failed keeps what it had read before.
Expected figures are read off the literal bytes below (``hello`` is 5 bytes of text).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest

from reasonwire.probe import ProbeTransport
from reasonwire.probe.call import CallObserver
from reasonwire.wire.model import JsonObject

from .streams import rows_now


def _event(delta: dict[str, str], finish: str | None = None) -> bytes:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m-1",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


STREAM = [_event({"content": "hello"}), _event({}, "stop"), b"data: [DONE]\n\n"]
ANSWER = {"id": "c1", "object": "chat.completion", "model": "m-1",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                       "finish_reason": "stop"}]}  # fmt: skip
BODY = json.dumps(ANSWER).encode()


def _row(
    chunks: list[bytes], *, stream: bool, status: int = 200, encoding: str | None = None
) -> JsonObject:
    rows: list[JsonObject] = []
    obs = CallObserver(session_id="s", dialect="chat", provider=None, model=None, purpose=None,
                       stream=stream, http_status=status, content_encoding=encoding,
                       writer=rows.append)  # fmt: skip
    with obs as feed:
        for chunk in chunks:
            feed(chunk)
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize(
    ("chunks", "stream", "encoding"),
    [
        (STREAM, True, None),
        ([gzip.compress(b"".join(STREAM))], True, "gzip"),
        ([BODY[:10], BODY[10:]], False, None),
        ([gzip.compress(BODY)], False, "gzip"),
    ],
    ids=["stream", "gzip-stream", "body", "gzip-body"],
)
def test_decoded_stream_and_body_count_the_text(
    chunks: list[bytes], stream: bool, encoding: str | None
) -> None:
    row = _row(chunks, stream=stream, encoding=encoding)
    assert (row["status"], row["textBytes"], row["model"]) == ("ok", 5, "m-1")
    assert row["wireBytes"] == sum(map(len, chunks))
    assert "probeError" not in row


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_an_encoding_not_decoded_counts_bytes_only(stream: bool) -> None:
    chunks = STREAM if stream else [BODY]  # plain bytes, labelled brotli: never read as text
    row = _row(chunks, stream=stream, encoding="br")
    assert (row["textBytes"], row["model"]) == (0, None)
    assert row["wireBytes"] == sum(map(len, chunks))
    assert "content-encoding br" in row["probeError"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_an_error_status_counts_bytes_only(stream: bool) -> None:
    chunks = STREAM if stream else [BODY]
    row = _row(chunks, stream=stream, status=500)
    assert (row["status"], row["textBytes"], row["error"]) == ("http_error", 0, "HTTP 500")
    assert row["wireBytes"] == sum(map(len, chunks))


def test_a_failed_decoder_keeps_what_it_read_before() -> None:
    chunks = [STREAM[0], b"data: {not json\n\n", *STREAM[1:]]
    row = _row(chunks, stream=True)
    assert (row["textBytes"], row["model"]) == (5, "m-1")  # the event before the bad one
    assert row["wireBytes"] == sum(map(len, chunks))
    assert "not JSON" in row["probeError"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_a_body_already_read_is_counted_at_once(tmp_path: Path, stream: bool) -> None:
    """An inner transport may answer with the body already in memory (a mock, a cache): the
    client never iterates it, so the probe counts it when the response comes back."""
    content = b"".join(STREAM) if stream else BODY
    ctype = "text/event-stream" if stream else "application/json"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": ctype}, content=content)

    probe = ProbeTransport("s", ledger_dir=tmp_path, inner=httpx.MockTransport(answer))
    with httpx.Client(transport=probe) as client:
        client.post("http://127.0.0.1:9/v1/chat/completions", json={"model": "m-1"})
    (row,) = rows_now(tmp_path).rows
    assert (row["status"], row["textBytes"], row["wireBytes"]) == ("ok", 5, len(content))
