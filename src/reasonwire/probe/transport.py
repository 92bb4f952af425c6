"""httpx transports that observe model calls and pass every byte through unchanged.

``httpx.Client(transport=ProbeTransport(session_id="s1"))`` (or an SDK's ``http_client``)
is all a user writes. Per call the transport reads the settings once, works out the dialect
from the URL path (``wire.request_carriers.dialect_for_path``), reads the carriers in the
outgoing body, and wraps the response byte stream: each chunk is counted and then yielded as
the same object, in order. Nothing is buffered for a streamed answer. The row is written when
the stream ends, is closed, fails or is abandoned (whichever comes first), exactly once.

Calls to other endpoints (model lists, token counting) and calls the settings exclude go to
the inner transport untouched.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from reasonwire.probe.observer import CallObserver, make_writer, parse_request_body
from reasonwire.probe.settings import ProbeSettings, ledger_dir, load_settings
from reasonwire.wire.model import Dialect
from reasonwire.wire.request_carriers import dialect_for_path, model_in_request

_STREAM_TYPES = ("text/event-stream",)


def provider_for(url: httpx.URL) -> str:
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
    return url.netloc.decode("ascii", "replace")


def _is_stream(request: httpx.Request, response: httpx.Response, dialect: Dialect) -> bool:
    ctype = response.headers.get("content-type", "").lower()
    if ctype.startswith(_STREAM_TYPES):
        return True
    # Gemini without ?alt=sse streams one JSON array over application/json.
    return dialect == "gemini" and ":streamgeneratecontent" in request.url.path.lower()


class _Probe:
    """What both transports share: settings, ledger location and the per-call observer."""

    def __init__(
        self,
        session_id: str,
        purpose: str | None,
        ledger_dir_: str | os.PathLike[str] | None,
    ) -> None:
        self.session_id = session_id
        self.purpose = purpose
        self._ledger_dir = ledger_dir_

    def start(self, request: httpx.Request) -> tuple[dict[str, Any], ProbeSettings] | None:
        """Call-start decisions (settings read once here). None: do not observe."""
        try:
            dialect = dialect_for_path(request.url.path)
            if dialect is None:
                return None
            settings = load_settings()
            provider = provider_for(request.url)
            host = urlsplit(str(request.url)).netloc
            if not settings.observes(provider, host):
                return None
            try:
                content: bytes | None = request.content
            except httpx.RequestNotRead:
                content = None
            body, sent = parse_request_body(content, dialect)
            return (
                {
                    "dialect": dialect,
                    "provider": provider,
                    "model": model_in_request(dialect, request.url.path, body),
                    "sent": sent,
                },
                settings,
            )
        except Exception:
            return None

    def observer(
        self,
        info: dict[str, Any],
        settings: ProbeSettings,
        request: httpx.Request,
        response: httpx.Response | None,
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
            writer=make_writer(directory, self.session_id, settings.cap_bytes),
            **info,
        )


def _already_read(response: httpx.Response, obs: CallObserver) -> bool:
    """A transport may return a response whose body is already in memory (a mock, a cache):
    count it now, since the client will never iterate the stream."""
    if not hasattr(response, "_content"):
        return False
    obs.feed(response.content)
    obs.mark_complete()
    obs.finish()
    return True


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, obs: CallObserver) -> None:
        self._inner = inner
        self._obs = obs

    def __iter__(self) -> Iterator[bytes]:
        obs = self._obs
        try:
            for chunk in self._inner:
                obs.feed(chunk)
                yield chunk
            obs.mark_complete()
        except GeneratorExit:  # the consumer walked away: record what it saw
            raise
        except BaseException as exc:
            obs.mark_failed(exc)
            raise
        finally:
            obs.finish()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._obs.finish()


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, obs: CallObserver) -> None:
        self._inner = inner
        self._obs = obs

    async def __aiter__(self) -> AsyncIterator[bytes]:
        obs = self._obs
        try:
            async for chunk in self._inner:
                obs.feed(chunk)
                yield chunk
            obs.mark_complete()
        except GeneratorExit:  # the consumer walked away: record what it saw
            raise
        except BaseException as exc:
            obs.mark_failed(exc)
            raise
        finally:
            obs.finish()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._obs.finish()


class ProbeTransport(httpx.BaseTransport):
    """A sync httpx transport that records one ledger row per model call.

    ``inner`` defaults to ``httpx.HTTPTransport()``; the ledger directory is ``ledger_dir``,
    else ``$REASONWIRE_HOME/probe``, else the user data directory.
    """

    def __init__(
        self,
        session_id: str,
        purpose: str | None = None,
        ledger_dir: str | os.PathLike[str] | None = None,
        inner: httpx.BaseTransport | None = None,
    ) -> None:
        self._inner = inner if inner is not None else httpx.HTTPTransport()
        self._probe = _Probe(session_id, purpose, ledger_dir)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        start = self._probe.start(request)
        if start is None:
            return self._inner.handle_request(request)
        info, settings = start
        try:
            response = self._inner.handle_request(request)
        except BaseException as exc:
            try:
                obs = self._probe.observer(info, settings, request, None)
                obs.mark_failed(exc)
                obs.finish()
            except Exception:
                pass
            raise
        try:
            obs = self._probe.observer(info, settings, request, response)
            if _already_read(response, obs):
                return response
            assert isinstance(response.stream, httpx.SyncByteStream)
            response.stream = _SyncStream(response.stream, obs)
        except Exception:
            pass
        return response

    def close(self) -> None:
        self._inner.close()


class AsyncProbeTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`ProbeTransport` (default inner: ``httpx.AsyncHTTPTransport``)."""

    def __init__(
        self,
        session_id: str,
        purpose: str | None = None,
        ledger_dir: str | os.PathLike[str] | None = None,
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._inner = inner if inner is not None else httpx.AsyncHTTPTransport()
        self._probe = _Probe(session_id, purpose, ledger_dir)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        start = self._probe.start(request)
        if start is None:
            return await self._inner.handle_async_request(request)
        info, settings = start
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException as exc:
            try:
                obs = self._probe.observer(info, settings, request, None)
                obs.mark_failed(exc)
                obs.finish()
            except Exception:
                pass
            raise
        try:
            obs = self._probe.observer(info, settings, request, response)
            if _already_read(response, obs):
                return response
            assert isinstance(response.stream, httpx.AsyncByteStream)
            response.stream = _AsyncStream(response.stream, obs)
        except Exception:
            pass
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
