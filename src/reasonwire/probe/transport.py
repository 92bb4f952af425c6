"""httpx transports that observe model calls and pass every byte through unchanged.

``httpx.Client(transport=ProbeTransport(session_id="s1"))`` (or an SDK's ``http_client``)
is all a user writes. Per call the transport reads the settings once, works out the dialect
from the URL path (``wire.dialect_for_path``), reads the carriers in the
outgoing body, and wraps the response byte stream: each chunk is counted as it passes (the
dialect's incremental decoder) and yielded as the same object, in order. The row is written
once, in a ``finally``, when the stream ends, is closed, fails or is abandoned (whichever
comes first): it is on disk by the time the caller's response is closed.

Calls to other endpoints (model lists, token counting) and calls the settings exclude go to
the inner transport untouched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reasonwire._httpcompat import (
    ASYNC_STREAMS,
    ASYNC_TRANSPORTS,
    SYNC_STREAMS,
    SYNC_TRANSPORTS,
    package_of,
)
from reasonwire.probe.carriers import PromptCounter, Tokenizer, bind_counter, off_the_loop
from reasonwire.probe.observer import (
    CallObserver,
    RowHook,
    arelay,
    make_writer,
    relay,
    request_side,
)
from reasonwire.probe.settings import ProbeSettings, ledger_dir, load_settings
from reasonwire.wire.model import DialectName
from reasonwire.wire.registry import dialect_for_path, get_dialect

_STREAM_TYPES = ("text/event-stream",)


def provider_for(url: Any) -> str:
    """The built-in route whose base URL the request goes to, else the host (and port)."""
    try:
        from reasonwire.routes import BUILTIN_ROUTES

        target = str(url)
        best = ""
        name = ""
        for route in BUILTIN_ROUTES.values():
            base = route.base_url
            if base and target.startswith(base) and len(base) > len(best):
                best, name = base, route.name
        if name:
            return name
    except Exception:
        pass
    return str(url.netloc.decode("ascii", "replace"))


def _is_stream(request: Any, response: Any, dialect: DialectName) -> bool:
    ctype = response.headers.get("content-type", "").lower()
    if ctype.startswith(_STREAM_TYPES):
        return True
    return get_dialect(dialect).streams_as_json(request.url.path)


class _Probe:
    """What both transports share: settings, ledger location and the per-call observer."""

    def __init__(
        self,
        session_id: str,
        purpose: str | None,
        ledger_dir_: str | os.PathLike[str] | None,
        provider: str | None = None,
        tokenizer: Tokenizer | PromptCounter | None = None,
        on_row: RowHook | None = None,
    ) -> None:
        self.session_id = session_id
        self.purpose = purpose
        self._ledger_dir = ledger_dir_
        self.provider = provider
        self.tokenizer = tokenizer
        self.on_row = on_row

    def start(self, request: Any) -> tuple[dict[str, Any], ProbeSettings] | None:
        """Call-start decisions (settings read once here). None: do not observe."""
        try:
            found = dialect_for_path(request.url.path)
            if found is None:
                return None
            dialect = found.name
            settings = load_settings()
            provider = self.provider or provider_for(request.url)
            host = urlsplit(str(request.url)).netloc
            if not settings.observes(provider, host):
                return None
            try:
                content: bytes | None = request.content
            except Exception:  # a streamed upload that was not read: no request side
                content = None
            counter = bind_counter(self.tokenizer, request, found)
            body, sent, entries = request_side(content, dialect, counter)
            return (
                {
                    "dialect": dialect,
                    "provider": provider,
                    "model": found.model_in_request(request.url.path, body),
                    "sent": sent,
                    "sent_entries": entries,
                },
                settings,
            )
        except Exception:
            return None

    def observer(
        self,
        info: dict[str, Any],
        settings: ProbeSettings,
        request: Any,
        response: Any,
    ) -> CallObserver:
        directory = Path(ledger_dir(self._ledger_dir))
        stream = False
        status = None
        encoding = None
        if response is not None:
            stream = _is_stream(request, response, info["dialect"])
            status = response.status_code
            encoding = response.headers.get("content-encoding")
        return CallObserver(
            session_id=self.session_id,
            purpose=self.purpose,
            stream=stream,
            http_status=status,
            content_encoding=encoding,
            writer=make_writer(directory, self.session_id, settings.cap_bytes, self.on_row),
            **info,
        )

    def record_failure(
        self, info: dict[str, Any], settings: ProbeSettings, request: Any, exc: BaseException
    ) -> None:
        """A row for a call that got no response (the caller still sees ``exc``)."""
        try:
            obs = self.observer(info, settings, request, None)
            obs.mark_failed(exc)
            obs.finish()
        except Exception:
            pass

    def watch(
        self, info: dict[str, Any], settings: ProbeSettings, request: Any, response: Any,
        wrap: Callable[[Any, CallObserver], Any],
    ) -> None:  # fmt: skip
        """Count ``response``: now if its body is already read, else by wrapping its stream."""
        try:
            obs = self.observer(info, settings, request, response)
            if not _already_read(response, obs):
                response.stream = wrap(response.stream, obs)
        except Exception:
            pass


def _already_read(response: Any, obs: CallObserver) -> bool:
    """A transport may return a response whose body is already in memory (a mock, a cache):
    count it now, since the client will never iterate the stream."""
    if not hasattr(response, "_content"):
        return False
    obs.feed(response.content)
    obs.mark_complete()
    obs.finish()
    return True


class _SyncStream(*SYNC_STREAMS):  # type: ignore[misc]
    def __init__(self, inner: Any, obs: CallObserver) -> None:
        self._inner = inner
        self._obs = obs

    def __iter__(self) -> Iterator[bytes]:
        return relay(self._inner, self._obs)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._obs.finish()


class _AsyncStream(*ASYNC_STREAMS):  # type: ignore[misc]
    def __init__(self, inner: Any, obs: CallObserver) -> None:
        self._inner = inner
        self._obs = obs

    def __aiter__(self) -> AsyncIterator[bytes]:
        return arelay(self._inner, self._obs)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._obs.finish()


class ProbeTransport(*SYNC_TRANSPORTS):  # type: ignore[misc]
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

    def __init__(
        self,
        session_id: str,
        purpose: str | None = None,
        ledger_dir: str | os.PathLike[str] | None = None,
        inner: Any = None,
        provider: str | None = None,
        tokenizer: Tokenizer | PromptCounter | None = None,
        on_row: RowHook | None = None,
    ) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._probe = _Probe(session_id, purpose, ledger_dir, provider, tokenizer, on_row)

    def _transport(self, request: Any) -> Any:
        if self._inner is None:
            with self._lock:
                if self._inner is None:
                    self._inner = package_of(request).HTTPTransport()
        return self._inner

    def handle_request(self, request: Any) -> Any:
        inner = self._transport(request)
        start = self._probe.start(request)
        if start is None:
            return inner.handle_request(request)
        info, settings = start
        try:
            response = inner.handle_request(request)
        except BaseException as exc:
            self._probe.record_failure(info, settings, request, exc)
            raise
        self._probe.watch(info, settings, request, response, _SyncStream)
        return response

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


class AsyncProbeTransport(*ASYNC_TRANSPORTS):  # type: ignore[misc]
    """The async twin of :class:`ProbeTransport` (default inner: ``AsyncHTTPTransport()``)."""

    def __init__(
        self,
        session_id: str,
        purpose: str | None = None,
        ledger_dir: str | os.PathLike[str] | None = None,
        inner: Any = None,
        provider: str | None = None,
        tokenizer: Tokenizer | PromptCounter | None = None,
        on_row: RowHook | None = None,
    ) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._probe = _Probe(session_id, purpose, ledger_dir, provider, tokenizer, on_row)

    def _transport(self, request: Any) -> Any:
        if self._inner is None:
            with self._lock:
                if self._inner is None:
                    self._inner = package_of(request).AsyncHTTPTransport()
        return self._inner

    async def handle_async_request(self, request: Any) -> Any:
        inner = self._transport(request)
        start = await off_the_loop(self._probe.tokenizer, self._probe.start, request)
        if start is None:
            return await inner.handle_async_request(request)
        info, settings = start
        try:
            response = await inner.handle_async_request(request)
        except BaseException as exc:
            self._probe.record_failure(info, settings, request, exc)
            raise
        self._probe.watch(info, settings, request, response, _AsyncStream)
        return response

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()
