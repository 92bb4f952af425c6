"""httpx transports that observe model calls and pass every byte through unchanged.

``httpx.Client(transport=ProbeTransport(session_id="s1"))`` (or an SDK's ``http_client``)
is all a user writes. Per call the transport reads the settings once, works out the dialect
from the URL path (``wire.dialect_for_path``), reads the carriers in the
outgoing body, and wraps the response byte stream: each chunk is counted as it passes (the
dialect's incremental decoder) and yielded as the same object, in order. The row is written
once, in a ``finally``, when the stream ends, is closed, fails or is abandoned (whichever
comes first): it is on disk by the time the caller's response is closed.

Calls to other endpoints (model lists, token counting) and calls the settings exclude go to
the inner transport untouched. The sync and async transports share the one policy,
:class:`_Probe` (the wrapping itself: :mod:`reasonwire._wrapping`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import cast
from urllib.parse import urlsplit

import httpx

from reasonwire import _wrapping as wrapping
from reasonwire._httpcompat import ASYNC_STREAMS, SYNC_STREAMS
from reasonwire.probe.call import CallObserver, arelay, relay
from reasonwire.probe.carriers import PromptCounter, Tokenizer, bind_counter, off_the_loop
from reasonwire.probe.recorder import CallStart, Recorder, RowHook
from reasonwire.wire.model import DialectName
from reasonwire.wire.registry import dialect_for_path, get_dialect

_STREAM_TYPES = ("text/event-stream",)


def _is_stream(request: httpx.Request, response: httpx.Response, dialect: DialectName) -> bool:
    ctype = response.headers.get("content-type", "").lower()
    if ctype.startswith(_STREAM_TYPES):
        return True
    return get_dialect(dialect).streams_as_json(request.url.path)


class _ObservedStream(*SYNC_STREAMS, *ASYNC_STREAMS):  # type: ignore[misc]
    """The response's byte stream, counted as it passes: one class for both kinds of client
    (as httpx's own ``ByteStream``), since only the iteration differs."""

    def __init__(self, inner: httpx.SyncByteStream | httpx.AsyncByteStream, obs: CallObserver):
        self._inner = inner
        self._obs = obs

    def __iter__(self) -> Iterator[bytes]:
        return relay(cast(Iterable[bytes], self._inner), self._obs)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return arelay(cast(httpx.AsyncByteStream, self._inner), self._obs)

    def close(self) -> None:
        try:
            cast(httpx.SyncByteStream, self._inner).close()
        finally:
            self._obs.finish()

    async def aclose(self) -> None:
        try:
            await cast(httpx.AsyncByteStream, self._inner).aclose()
        finally:
            self._obs.finish()


class _Probe:
    """The probe's policy: observe the call of a dialect endpoint the settings include."""

    def __init__(self, recorder: Recorder, provider: str | None) -> None:
        self.recorder = recorder
        self.provider = provider

    def flow(self, request: httpx.Request) -> wrapping.Flow:
        return self.observe(request, self._start(request))

    def observe(
        self, request: httpx.Request, begun: tuple[CallStart, str | None] | None
    ) -> wrapping.Flow:
        """The flow around one call whose start (``begun``, None: not observed) is decided."""
        if begun is None:
            return (yield request)
        start, model = begun
        try:
            response = yield request
        except BaseException as exc:
            self._failed(start, model, exc)
            raise
        self._watch(start, model, request, response)
        return response

    def _start(self, request: httpx.Request) -> tuple[CallStart, str | None] | None:
        """Call-start decisions (settings read once here). None: do not observe."""
        try:
            found = dialect_for_path(request.url.path)
            if found is None:
                return None
            provider = self.provider or wrapping.route_name(request.url)
            host = urlsplit(str(request.url)).netloc
            try:
                content: bytes | None = request.content
            except Exception:  # a streamed upload that was not read: no request side
                content = None
            counter = bind_counter(self.recorder.tokenizer, request, found)
            start = self.recorder.start(found.name, provider, host, content, counter)
            if start is None:
                return None
            return start, found.model_in_request(request.url.path, start.body)
        except Exception:
            return None

    def _failed(self, start: CallStart, model: str | None, exc: BaseException) -> None:
        """A row for a call that got no response (the caller still sees ``exc``)."""
        try:
            obs = self.recorder.observer(start, model, stream=False, http_status=None)
            obs.mark_failed(exc)
            obs.finish()
        except Exception:
            pass

    def _watch(
        self, start: CallStart, model: str | None, request: httpx.Request, response: httpx.Response
    ) -> None:
        """Count ``response``: now if its body is already read, else by wrapping its stream."""
        try:
            obs = self.recorder.observer(
                start, model,
                stream=_is_stream(request, response, start.dialect),
                http_status=response.status_code,
                content_encoding=response.headers.get("content-encoding"),
            )  # fmt: skip
            if hasattr(response, "_content"):
                # a body already in memory (a mock, a cache): the client will never iterate
                # the stream, so count it now
                with obs as feed:
                    feed(response.content)
            else:
                response.stream = _ObservedStream(response.stream, obs)
        except Exception:
            pass


class _ProbeFront(wrapping.Wrapping[_Probe, wrapping.I]):
    """The constructor both probe transports show."""

    def __init__(
        self,
        session_id: str,
        purpose: str | None = None,
        ledger_dir: str | os.PathLike[str] | None = None,
        inner: wrapping.I | None = None,
        provider: str | None = None,
        tokenizer: Tokenizer | PromptCounter | None = None,
        on_row: RowHook | None = None,
    ) -> None:
        recorder = Recorder(session_id, purpose, ledger_dir, tokenizer, on_row)
        self._wrap(_Probe(recorder, provider), inner)


class ProbeTransport(_ProbeFront[wrapping.SyncInner], wrapping.WrappingTransport[_Probe]):
    """A sync httpx transport that records one ledger row per model call.

    ``inner`` defaults to the package's own ``HTTPTransport()`` (created on first use, for
    ``httpx`` or its ``httpx2`` fork, whichever the client is); the ledger directory is
    ``ledger_dir``, else ``$REASONWIRE_HOME/probe``, else the user data directory.
    ``provider`` names the route in the rows (default: the built-in route whose base URL the
    call goes to, else the host), e.g. a custom route's name so ``fold plan`` can match it.
    ``tokenizer`` is the route's own token counter, when known: re-sent reasoning text is then
    counted in tokens (measured) instead of estimated from its bytes; a :class:`PromptCounter`
    (a server's count endpoint, e.g. :func:`reasonwire.localserver.count.llama_server_counter`)
    counts what each re-sent text carrier adds to the prompt as the server renders it, its
    template's framing included. ``on_row`` is called
    with each row once it is written, off the caller's path (e.g. an OTel live exporter).
    """


class AsyncProbeTransport(
    _ProbeFront[wrapping.AsyncInner], wrapping.AsyncWrappingTransport[_Probe]
):
    """The async twin of :class:`ProbeTransport` (default inner: ``AsyncHTTPTransport()``).
    Its call start runs off the event loop when the counter may make network calls (a count
    endpoint), so other tasks go on meanwhile (:func:`~reasonwire.probe.carriers.off_the_loop`)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._transport(request)
        probe = self._policy
        begun = await off_the_loop(probe.recorder.tokenizer, probe._start, request)
        return await wrapping.adrive(probe.observe(request, begun), inner.handle_async_request)


__all__ = ["AsyncProbeTransport", "ProbeTransport"]
