"""The gateway's ASGI plumbing: a request as the gateway reads it, and its replies.

The gateway answers each request with one ASGI ``http.response.start`` and one
``http.response.body`` (a JSON answer or error, with its ``content-length``), or with a relayed
stream. It needs no framework for that: a framework's request and response objects (Starlette's
``Request``, ``Headers``, ``Response``) cost more per call than the gateway's own checks
(profiled under wrk: the server and framework layer was ~25% of the gateway's CPU per call).
What is here is the part of them the gateway uses, on plain ASGI messages, so the gateway
stays an ASGI app any ASGI server can run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from reasonwire.errors import _ClientDisconnect

Scope = MutableMapping[str, Any]
"""An ASGI connection scope (mixed values by the ASGI spec: strings, bytes, tuples, lists)."""
Message = MutableMapping[str, Any]
"""An ASGI event (mixed values by the ASGI spec)."""
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON_TYPE = b"application/json"
EVENT_STREAM_TYPE = b"text/event-stream; charset=utf-8"
"""What Starlette wrote for ``media_type="text/event-stream"`` (kept byte for byte)."""


class Incoming:
    """One request: its scope, its headers as a dict, its body read on demand.

    ``headers``: lower-case names (ASGI servers send them lower-case) to latin-1 decoded
    values; of a name sent twice, the first value (as Starlette's ``Headers.get`` answered)."""

    __slots__ = ("_headers", "receive", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self.receive = receive
        self._headers: dict[str, str] | None = None

    @property
    def headers(self) -> dict[str, str]:
        found = self._headers
        if found is None:
            # reversed: of a name sent twice, the first value is the one left
            found = {
                k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(self.scope["headers"])
            }
            self._headers = found
        return found

    async def body(self, limit: int) -> bytes | None:
        """The whole body, or None as soon as it passes ``limit`` bytes (the rest is never
        read); :class:`_ClientDisconnect` when the client leaves first."""
        parts: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] != "http.request":
                if message["type"] == "http.disconnect":
                    raise _ClientDisconnect
                continue
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            if not message.get("more_body", False):
                if not parts:
                    return chunk  # the usual case: the whole body in one message
                parts.append(chunk)
                return b"".join(parts)
            parts.append(chunk)


class Reply:
    """A whole answer: status, body, ``content-type`` and ``content-length`` headers and any
    extra ones (lower-case names), sent as one start and one body message."""

    __slots__ = ("body", "headers", "status_code")

    def __init__(
        self,
        body: bytes,
        status_code: int = 200,
        headers: list[tuple[bytes, bytes]] | None = None,
        content_type: bytes = JSON_TYPE,
    ) -> None:
        self.body = body
        self.status_code = status_code
        self.headers = [
            *(headers or ()),
            (b"content-length", b"%d" % len(body)),
            (b"content-type", content_type),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.headers}
        )
        await send({"type": "http.response.body", "body": self.body})


class Final(bytes):
    """A relayed stream's last bytes, yielded last by its body: sent with the end of the body,
    in one message (the chunked body's terminator rides with them: one socket write per
    stream fewer than a write for them and one for the end; a served stream's writes were
    about a third of its CPU, profiled)."""

    __slots__ = ()


class Relayed:
    """A relayed stream (``text/event-stream``, no length: the server frames it), sent from
    the request's own task. A :class:`Final` chunk ends the body with it.

    A client that leaves is seen as ``http.disconnect`` by one plain task listening beside
    it, which then cancels the sending task once (the relay's ``finally`` records
    ``cut-by-client``); that cancellation ends with this response. A cancellation from
    elsewhere (the server stopping) is not ours and propagates. Why not Starlette's
    ``StreamingResponse``: for ASGI spec < 2.4 (as uvicorn speaks) it runs the body in an anyio
    task group beside its listener, a task group per stream, ~14% of a stream's CPU and a
    loop turn before the first byte (profiled)."""

    __slots__ = ("body_iterator", "status_code")

    def __init__(self, content: AsyncIterator[bytes]) -> None:
        self.body_iterator = content
        self.status_code = 200

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        gone = sent = False

        async def listen() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            if not sent:  # a server says disconnect after a whole response too (ASGI)
                gone = True
                task.cancel()

        watcher = asyncio.get_running_loop().create_task(listen())
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": [(b"content-type", EVENT_STREAM_TYPE)],
                }
            )
            async for chunk in self.body_iterator:
                if type(chunk) is Final:
                    sent = True  # the whole response: a disconnect now is no leave
                await send({"type": "http.response.body", "body": chunk, "more_body": not sent})
            if not sent:
                sent = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not gone:  # cancelled from elsewhere (the server stopping): not ours to end
                raise
            task.uncancel()
        finally:
            watcher.cancel()
