"""The gateway's ASGI plumbing (:mod:`reasonwire.govern.asgi`) on hand-written ASGI messages:
what it reads of a request and the exact messages it sends (the ASGI HTTP spec: one
``http.response.start``, then ``http.response.body`` messages, the last without
``more_body``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from reasonwire.errors import _ClientDisconnect
from reasonwire.govern.asgi import Incoming, Relayed, Reply


def _receiver(*messages: dict[str, Any]) -> tuple[Any, list[int]]:
    """A ``receive`` handing out ``messages`` in order (then waiting forever), and the count
    of calls."""
    calls = [0]
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        calls[0] += 1
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive, calls


def test_headers_are_decoded_and_the_first_of_a_repeated_name_wins() -> None:
    """Latin-1 (RFC 9110 §5.5: field values are octets; the obs-text range decodes 1:1), and
    of two fields with one name the first (what Starlette's ``Headers.get`` answered)."""
    scope = {"headers": [(b"x-a", b"first"), (b"x-b", b"caf\xe9"), (b"x-a", b"second")]}
    headers = Incoming(scope, _receiver()[0]).headers
    assert headers == {"x-a": "first", "x-b": "café"}


async def test_a_body_in_one_message_or_many() -> None:
    one, _ = _receiver({"type": "http.request", "body": b"whole", "more_body": False})
    assert await Incoming({}, one).body(100) == b"whole"
    many, _ = _receiver(
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"", "more_body": True},
        {"type": "http.request", "body": b"cd"},
    )
    assert await Incoming({}, many).body(100) == b"abcd"


async def test_a_body_past_the_limit_is_none_and_not_read_further() -> None:
    receive, calls = _receiver(
        {"type": "http.request", "body": b"12345", "more_body": True},
        {"type": "http.request", "body": b"6", "more_body": True},
        {"type": "http.request", "body": b"789", "more_body": False},
    )
    assert await Incoming({}, receive).body(5) is None  # 6 bytes > 5
    assert calls[0] == 2
    exact, _ = _receiver({"type": "http.request", "body": b"12345"})
    assert await Incoming({}, exact).body(5) == b"12345"  # exactly the limit is allowed


async def test_a_client_leaving_during_the_body_is_client_disconnect() -> None:
    receive, _ = _receiver(
        {"type": "http.request", "body": b"12", "more_body": True}, {"type": "http.disconnect"}
    )
    with pytest.raises(_ClientDisconnect):
        await Incoming({}, receive).body(100)


async def test_a_reply_is_one_start_and_one_body_with_its_length() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    body = b'{"error": "x"}'
    await Reply(body, 503, [(b"retry-after", b"1")])({}, _receiver()[0], send)
    assert sent == [
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"retry-after", b"1"),
                (b"content-length", b"14"),
                (b"content-type", b"application/json"),
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


async def test_a_relayed_stream_sends_each_chunk_then_an_empty_last_message() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        yield b"data: 2\n\n"

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await Relayed(chunks())({}, _receiver()[0], send)
    assert sent == [
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream; charset=utf-8")],
        },
        {"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True},
        {"type": "http.response.body", "body": b"data: 2\n\n", "more_body": True},
        {"type": "http.response.body", "body": b"", "more_body": False},
    ]


async def test_a_disconnect_after_the_whole_stream_cancels_nothing() -> None:
    """An ASGI server answers ``receive`` with ``http.disconnect`` once the response is
    complete: that is no client leaving, and the sending task is not cancelled for it."""
    told = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await told.wait()
        return {"type": "http.disconnect"}

    done: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        if not message.get("more_body", True):
            told.set()
            await asyncio.sleep(0)  # the listener runs before this send returns
        done.append(message)

    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"

    await Relayed(chunks())({}, receive, send)
    assert done[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0
