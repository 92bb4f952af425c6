"""Send one prepared request and turn the answer into a :class:`~reasonwire.wire.model.Turn`.

Retries (429, 5xx, connection failures before a response head) happen in
:mod:`reasonwire.http`, which encodes nothing itself here: the body is the session's cached
bytes, so every attempt is byte-identical. An error status the policy does not retry (a 400
for a rejected option) is raised at once as a typed ``ProviderError`` with the provider's
status and message. A provider error reported inside a 200 stream becomes
:class:`StreamFailed`, also a ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from reasonwire.agent.models import Model
from reasonwire.agent.session import Prepared
from reasonwire.errors import StreamFailed, TruncatedStream
from reasonwire.http import apost_json, astream_post, post_json, stream_post
from reasonwire.wire.dialect import StreamDecoder
from reasonwire.wire.model import Done, StreamError, StreamEvent, Turn

EventSink = Callable[[StreamEvent], None]


def _drain(events: list[StreamEvent], on_event: EventSink | None, state: list[Turn]) -> None:
    for ev in events:
        if isinstance(ev, StreamError):
            raise StreamFailed(200, str(ev.raw or ""), provider_message=ev.message)
        if isinstance(ev, Done):
            state.append(ev.turn)
        if on_event is not None:
            on_event(ev)


def _finish(decoder: StreamDecoder, on_event: EventSink | None, state: list[Turn]) -> Turn:
    _drain(decoder.close(), on_event, state)
    if not state:  # pragma: no cover - the decoder contract ends with Done or raises
        raise TruncatedStream("stream ended without a final answer", partial=None)
    return state[-1]


def send(
    model: Model,
    req: Prepared,
    on_event: EventSink | None = None,
    client: httpx.Client | None = None,
) -> Turn:
    """Send ``req`` synchronously and return the parsed (or assembled) answer."""
    c = client or model.sync_client()
    headers = model.headers()
    dialect = model.dialect
    if not req.stream:
        resp = post_json(
            c, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
        )
        return dialect.parse_response(resp.content)
    decoder = dialect.stream_decoder()
    done: list[Turn] = []
    with stream_post(
        c, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
    ) as resp:
        for chunk in resp.iter_bytes():
            _drain(decoder.feed(chunk), on_event, done)
    return _finish(decoder, on_event, done)


async def asend(
    model: Model,
    req: Prepared,
    client: httpx.AsyncClient,
    on_event: EventSink | None = None,
) -> Turn:
    """The async twin of :func:`send` (the caller owns ``client``)."""
    headers = model.headers()
    dialect = model.dialect
    if not req.stream:
        resp = await apost_json(
            client, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
        )
        return dialect.parse_response(resp.content)
    decoder = dialect.stream_decoder()
    done: list[Turn] = []
    async with astream_post(
        client, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
    ) as resp:
        async for chunk in resp.aiter_bytes():
            _drain(decoder.feed(chunk), on_event, done)
    return _finish(decoder, on_event, done)


__all__ = ["EventSink", "asend", "send"]
