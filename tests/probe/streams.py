"""Small stream builders for the probe tests: real wire shapes, chosen content."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from reasonwire.probe import read_rows
from reasonwire.probe.ledger import LedgerRead


def rows_now(directory: Path) -> LedgerRead:
    """The ledger as it is on disk right now: no flush, no wait. A call's row must be there
    as soon as its response is closed."""
    return read_rows(directory)


def chat_stream(parts: list[tuple[str, str]], usage: bool = True) -> bytes:
    """``parts``: (field, text) with field in reasoning_content | content | arguments."""
    out = []
    for field, text in parts:
        if field == "arguments":
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "f", "arguments": text}}  # fmt: skip
            delta: dict[str, Any] = {"tool_calls": [call]}
        else:
            delta = {field: text}
        out.append({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta}]})
    end = [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    last: dict[str, Any] = {"id": "c1", "model": "m", "choices": end}
    if usage:
        last["usage"] = {"prompt_tokens": 100, "completion_tokens": 20,
                         "prompt_tokens_details": {"cached_tokens": 40},
                         "completion_tokens_details": {"reasoning_tokens": 7}}  # fmt: skip
    out.append(last)
    body = "".join("data: " + json.dumps(e, ensure_ascii=False) + "\n\n" for e in out)
    return (body + "data: [DONE]\n\n").encode("utf-8")


def anthropic_stream(thinking: list[str], text: list[str]) -> bytes:
    evs: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
         "model": "claude-x", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    ]  # fmt: skip
    evs += [{"type": "content_block_delta", "index": 0,
             "delta": {"type": "thinking_delta", "thinking": t}} for t in thinking]  # fmt: skip
    evs += [
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "sig=="}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    ]  # fmt: skip
    evs += [{"type": "content_block_delta", "index": 1,
             "delta": {"type": "text_delta", "text": t}} for t in text]  # fmt: skip
    evs += [
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return "".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in evs
    ).encode("utf-8")


def chunked(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(body)})
    edges = [0, *points, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


class ChunkStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes], fail_after: int | None = None) -> None:
        self.chunks = chunks
        self.fail_after = fail_after
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for i, c in enumerate(self.chunks):
            if self.fail_after is not None and i == self.fail_after:
                raise httpx.RemoteProtocolError("peer closed connection")
            yield c

    async def __aiter__(self) -> Any:
        for c in self.chunks:
            yield c

    def close(self) -> None:
        self.closed = True


def mock(chunks: list[bytes], fail_after: int | None = None,
         ctype: str = "text/event-stream") -> httpx.MockTransport:  # fmt: skip
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": ctype},
                              stream=ChunkStream(chunks, fail_after))  # fmt: skip

    return httpx.MockTransport(handler)


flushed_rows = rows_now
"""The old name (other test packages import it): rows no longer wait for a flush."""
