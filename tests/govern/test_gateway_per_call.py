"""What the gateway reads on every call although it keeps what it made of it: the upstream
credential (a key changed in the environment is sent on the next call, the upstream headers
made from the old one are not reused), the client headers a dialect forwards, and the
dialect's terminal stream event, held back on every stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import httpx
import pytest

from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.upstream import UpstreamPool, UpstreamResponse
from tests.govern.conftest import POLICY, UPSTREAM_KEY_ENV, World, make_registry, new_conv


def _post(world: World, path: str, body: dict[str, object], headers: dict[str, str]) -> int:
    """A call through the served gateway (its own server and event loop)."""
    return httpx.post(world.url + path, json=body, headers=headers, timeout=30).status_code


def test_a_changed_upstream_key_is_sent_on_the_next_call(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = new_conv()
    headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
    body = {"model": "sim-deepseek", "messages": [{"role": "user", "content": f"[{conv}] hi"}]}
    first, second = "sk-first-rotated-upstream-0001", "sk-second-rotated-upstream-02"
    keys = [first, second, first]
    for key in keys:
        monkeypatch.setenv(UPSTREAM_KEY_ENV, key)
        assert _post(world, "/v1/chat/completions", body, headers) == 200
    sent = [seen["headers"].get("authorization") for seen in world.recorder.find(conv)]
    # compared, never shown: a failure must not print a key
    assert [s == f"Bearer {k}" for s, k in zip(sent, keys, strict=True)] == [True, True, True]


def test_a_forwarded_client_header_is_sent_as_each_call_has_it(world: World) -> None:
    conv = new_conv()
    headers = world.headers(conv, world.token(conv, "anthropic/sim-claude", "low"))
    body = {
        "model": "sim-claude",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": f"[{conv}] hi"}],
    }
    for version in ("2023-06-01", None, "2023-01-01"):
        extra = {"anthropic-version": version} if version else {}
        status = _post(world, "/v1/messages", body, headers | extra)
        assert status == 200, [(r.outcome, r.reason) for r in world.store.rows(conv)]
    sent = [seen["headers"].get("anthropic-version") for seen in world.recorder.find(conv)]
    assert sent == ["2023-06-01", None, "2023-01-01"]


class _Canned(UpstreamResponse):
    def __init__(self, body: bytes) -> None:
        self.status_code = 200
        self.headers = {"content-type": "text/event-stream"}
        self._body = body

    async def read(self) -> bytes:
        return self._body

    async def aiter(self) -> AsyncIterator[bytes]:
        yield self._body

    async def aclose(self) -> None:
        return None


class _CannedPool(UpstreamPool):
    """An upstream answering every call with one stream, in one chunk."""

    def __init__(self, stream: bytes) -> None:
        super().__init__()
        self.stream = stream

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, retry_stale: bool = True
    ) -> UpstreamResponse:
        return _Canned(self.stream)


@pytest.mark.parametrize("twice", [False, True], ids=["first-stream", "second-stream"])
async def test_a_stream_without_an_answer_ends_with_an_error_not_done(
    world: World, tmp_path: Path, twice: bool
) -> None:
    """The terminal [DONE] is held until the stream is known good (an SDK stops reading at
    it): a stream of no answer's shape ends with the dialect's error event only, on the
    gateway's first stream and on a later one alike."""
    chunk = (
        b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}'
    )
    store = SQLiteStore(tmp_path / "ev.sqlite")
    pool = _CannedPool(chunk + b"\n\ndata: [DONE]\n\n")
    gw = Gateway(make_registry("http://127.0.0.1:9/v1"), POLICY, world.ring, store, upstream=pool)
    body = {
        "model": "sim-deepseek",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }
    transport = httpx.ASGITransport(app=gw.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            for conv in [new_conv(), new_conv()][: 2 if twice else 1]:
                headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
                r = await client.post("/v1/chat/completions", json=body, headers=headers)
    finally:
        await gw.aclose()
    assert r.status_code == 200 and "[DONE]" not in r.text
    *_, last, after = r.text.split("\n\n")
    assert after == "" and last.startswith('data: {"type":"error","error":{"type":"api_error"')
    ((outcome, state),) = [(x.outcome, x.stream_state) for x in store.rows(conv)]
    assert (outcome, state) == ("upstream-error", "malformed")


_ANSWER = (
    b'{"id":"x","object":"chat.completion","created":1,"model":"sim-deepseek","choices":'
    b'[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}'
)


class _CountingPool(UpstreamPool):
    """An upstream answering every call with one JSON answer, counting the calls."""

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, retry_stale: bool = True
    ) -> UpstreamResponse:
        self.posts += 1
        return _Canned(_ANSWER)


async def test_a_call_waits_for_its_conversations_unsettled_stream_and_no_other(
    world: World, tmp_path: Path
) -> None:
    """A stream's vault entries are stored after its last bytes went out, so the client's
    next turn can come first: that turn waits for them before its upstream call (the wait
    is skipped only when the conversation has no stream unsettled); a call of another
    conversation does not wait."""
    pool = _CountingPool()
    store = SQLiteStore(tmp_path / "ev.sqlite")
    gw = Gateway(make_registry("http://127.0.0.1:9/v1"), POLICY, world.ring, store, upstream=pool)
    body = {"model": "sim-deepseek", "messages": [{"role": "user", "content": "hi"}]}
    held, other = new_conv(), new_conv()
    settled = asyncio.Event()

    async def post(client: httpx.AsyncClient, conv: str) -> httpx.Response:
        headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
        return await client.post("/v1/chat/completions", json=body, headers=headers)

    transport = httpx.ASGITransport(app=gw.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            # A first turn fixes the conversation's effort: the next is authorised on the
            # event loop, so nothing but the wait stands between it and its upstream call.
            assert (await post(client, held)).status_code == 200
            gw._unsettled[held] = [settled]  # as _relay notes a stream not yet stored
            waiting = asyncio.create_task(post(client, held))
            assert (await post(client, other)).status_code == 200  # not held by the other
            for _ in range(200):  # loop turns: far more than a call needs to reach upstream
                await asyncio.sleep(0)
            assert pool.posts == 2 and not waiting.done()
            gw._settle(held, settled)
            assert (await waiting).status_code == 200
            assert pool.posts == 3
    finally:
        await gw.aclose()
