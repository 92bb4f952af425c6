"""Send one prepared request and read the answer as wire events ending with its :class:`Done`.

:func:`exchange` and :func:`aexchange` yield each :class:`~reasonwire.wire.model.StreamEvent`
of a streamed answer as it is decoded, the last one always the :class:`Done` that holds the
:class:`~reasonwire.wire.model.Turn`; a whole (non-streamed) answer is that one ``Done``. Being
pulled, they read no further than their caller: a caller that stops iterating closes the
request in flight (the ``with`` around the response exits).

Retries (429, 5xx, connection failures before a response head) happen in
:mod:`reasonwire.http`, which encodes nothing itself here: the body is the session's cached
bytes, so every attempt is byte-identical. An error status the policy does not retry (a 400
for a rejected option) is raised at once as a typed ``ProviderError`` with the provider's
status and message. A provider error reported inside a 200 stream becomes
:class:`StreamFailed`, also a ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Iterator

import httpx

from reasonwire.agent.models import Model
from reasonwire.agent.session import Prepared
from reasonwire.errors import StreamFailed, TruncatedStream
from reasonwire.http import apost_json, astream_post, post_json, stream_post
from reasonwire.wire.model import Done, StreamError, StreamEvent, Turn

EventSink = Callable[[StreamEvent], None]


def _checked(events: Iterable[StreamEvent]) -> Iterator[StreamEvent]:
    """``events`` as decoded; a provider error inside the stream is raised typed."""
    for ev in events:
        if isinstance(ev, StreamError):
            raise StreamFailed(200, str(ev.raw or ""), provider_message=ev.message)
        yield ev


def answer(last: StreamEvent | None) -> Turn:
    """The turn of an exchange, from its last event."""
    if isinstance(last, Done):
        return last.turn
    raise TruncatedStream("stream ended without a final answer", partial=None)  # pragma: no cover


def exchange(
    model: Model, req: Prepared, client: httpx.Client | None = None
) -> Generator[StreamEvent, None, None]:
    """Send ``req`` synchronously; yield the answer's wire events, the last one its ``Done``."""
    c = client or model.sync_client()
    headers = model.headers()
    dialect = model.dialect
    if not req.stream:
        resp = post_json(
            c, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
        )
        yield Done(dialect.parse_response(resp.content))
        return
    decoder = dialect.stream_decoder()
    with stream_post(
        c, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
    ) as resp:
        for chunk in resp.iter_bytes():
            yield from _checked(decoder.feed(chunk))
    yield from _checked(decoder.close())


async def aexchange(
    model: Model, req: Prepared, client: httpx.AsyncClient
) -> AsyncGenerator[StreamEvent, None]:
    """The async twin of :func:`exchange` (the caller owns ``client``)."""
    headers = model.headers()
    dialect = model.dialect
    if not req.stream:
        resp = await apost_json(
            client, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
        )
        yield Done(dialect.parse_response(resp.content))
        return
    decoder = dialect.stream_decoder()
    async with astream_post(
        client, req.url, req.body, headers, retries=model.retries, timeout=model.timeout
    ) as resp:
        async for chunk in resp.aiter_bytes():
            for ev in _checked(decoder.feed(chunk)):
                yield ev
    for ev in _checked(decoder.close()):
        yield ev


def send(
    model: Model,
    req: Prepared,
    on_event: EventSink | None = None,
    client: httpx.Client | None = None,
) -> Turn:
    """Send ``req`` and return the parsed (or assembled) answer; ``on_event`` sees each event
    of a streamed one."""
    last: StreamEvent | None = None
    for last in exchange(model, req, client):
        if on_event is not None and req.stream:
            on_event(last)
    return answer(last)


__all__ = ["EventSink", "aexchange", "answer", "exchange", "send"]
