"""A client that stops reading at a chunk (an SDK at its last event) before the gateway has
decoded it: the relay sends each chunk's projection before decoding it (the first byte waits
for no decode), so the chunk the client stopped at is decoded when the relay is closed, and
a stream complete in what the client was sent has a complete row. The stream's last bytes (its
held ``[DONE]``, or the error event) come with the end of the body, after the row."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.upstream import UpstreamPool, UpstreamResponse
from tests.govern.conftest import POLICY, World, make_registry, new_conv

# A whole answer in one chunk, finished by its finish_reason (no [DONE] to hold back).
_ANSWER = (
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    b'[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}\n\n'
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    b'[{"index":0,"delta":{},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n'
)


class _Canned(UpstreamResponse):
    def __init__(self) -> None:
        self.status_code = 200
        self.headers = {"content-type": "text/event-stream"}

    async def read(self) -> bytes:
        return _ANSWER

    async def aiter(self) -> AsyncIterator[bytes]:
        yield _ANSWER

    async def aclose(self) -> None:
        return None


class _CannedPool(UpstreamPool):
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, retry_stale: bool = True
    ) -> UpstreamResponse:
        return _Canned()


async def test_the_chunk_a_client_stopped_at_completes_its_row(
    world: World, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(
        make_registry("http://127.0.0.1:9/v1"), POLICY, world.ring, store, upstream=_CannedPool()
    )
    conv = new_conv()
    headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
    body = b'{"model":"sim-deepseek","messages":[{"role":"user","content":"hi"}],"stream":true}'
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
    }
    first = asyncio.Event()
    chunks: list[bytes] = []
    asked = 0

    async def receive() -> dict[str, object]:
        nonlocal asked
        asked += 1
        if asked == 1:
            return {"type": "http.request", "body": body, "more_body": False}
        await first.wait()  # the client leaves once it has its first chunk
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            chunks.append(message["body"])  # type: ignore[arg-type]
            first.set()
            await asyncio.sleep(0.5)  # the disconnect cancels the relay here

    try:
        await gw.app(scope, receive, send)
        deadline = time.monotonic() + 10
        while not [r for r in store.rows(conv) if r.stream_state] and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    finally:
        await gw.aclose()
    assert len(chunks) == 1 and b'"content":"hi"' in chunks[0]
    ((outcome, state, tokens),) = [
        (r.outcome, r.stream_state, r.output_tokens) for r in store.rows(conv)
    ]
    assert (outcome, state, tokens) == ("forwarded", "complete", 2)


class _Answer(UpstreamPool):
    """An upstream answering every call with ``answer``, whole, in one chunk."""

    def __init__(self, answer: bytes) -> None:
        super().__init__()
        self.answer = answer

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, retry_stale: bool = True
    ) -> UpstreamResponse:
        canned = _Canned()
        answer = self.answer

        async def aiter() -> AsyncIterator[bytes]:
            yield answer

        canned.aiter = aiter  # type: ignore[method-assign]
        return canned


async def _relayed(
    world: World, tmp_path: Path, answer: bytes
) -> tuple[list[dict[str, object]], list[list[tuple[str | None, str | None]]]]:
    """The body messages a client is sent, and the call's row (outcome, stream state) as the
    store held it when each message was sent."""
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(
        make_registry("http://127.0.0.1:9/v1"), POLICY, world.ring, store, upstream=_Answer(answer)
    )
    conv = new_conv()
    headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
    body = b'{"model":"sim-deepseek","messages":[{"role":"user","content":"hi"}],"stream":true}'
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
    }
    read = False
    messages: list[dict[str, object]] = []
    rows: list[list[tuple[str | None, str | None]]] = []

    async def receive() -> dict[str, object]:
        nonlocal read
        if not read:
            read = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays to the end
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        if message["type"] == "http.response.body":
            messages.append(message)
            rows.append([(r.outcome, r.stream_state) for r in store.rows(conv)])

    try:
        await gw.app(scope, receive, send)
    finally:
        await gw.aclose()
    return messages, rows


async def test_the_last_event_comes_with_the_end_after_the_row(
    world: World, tmp_path: Path
) -> None:
    """``[DONE]`` (held until the stream is known good) and the end of the body are one
    message, sent once the row is complete: a client that stops at ``[DONE]`` finds it so."""
    messages, rows = await _relayed(world, tmp_path, _ANSWER + b"data: [DONE]\n\n")
    assert [m.get("more_body", False) for m in messages] == [True, False]
    assert b'"content":"hi"' in messages[0]["body"]  # type: ignore[operator]
    assert messages[-1]["body"] == b"data: [DONE]\n\n"
    assert rows[0] == [("pending", None)]  # committed before the upstream call
    assert rows[-1] == [("forwarded", "complete")]


async def test_the_error_event_comes_with_the_end_after_the_row(
    world: World, tmp_path: Path
) -> None:
    """A stream the decoder cannot follow: its allow-listed projection, then the dialect's
    error event with the end of the body, once the row says the stream was malformed."""
    bad = _ANSWER.replace(b'"finish_reason":"stop"}]', b'"finish_reason":"stop"}]]', 1)
    messages, rows = await _relayed(world, tmp_path, bad + b"data: [DONE]\n\n")
    assert [m.get("more_body", False) for m in messages] == [True, False]
    assert b"[DONE]" not in b"".join(m["body"] for m in messages)  # type: ignore[misc]
    assert b'"error"' in messages[-1]["body"]  # type: ignore[operator]
    assert rows[-1] == [("upstream-error", "malformed")]
