"""HTTP plumbing: httpx clients, timeouts, a bounded retry policy and typed errors.

Every request reasonwire sends is JSON it built itself (no vendor SDK in the request path), so
this module is small: :func:`post_json` / :func:`apost_json` for whole answers and
:func:`stream_post` / :func:`astream_post` for streams. They retry 429, 5xx and connection
failures with exponential backoff and jitter, honouring ``Retry-After`` (seconds or an HTTP
date, capped). A stream is retried only until its response head arrives; once the caller holds
a 2xx response nothing is re-sent (the provider may already be generating and billing).

The retry policy is written once, in httpx's auth-flow shape: :meth:`RetryPolicy.flow` is a
generator that yields the next :class:`Attempt` (its number and the seconds to wait first) and
receives the typed failure of the attempt before; the four calls above are thin sync and async
drivers around it that only send, sleep and read.

Errors are the types of :mod:`reasonwire.errors`: a :class:`~reasonwire.errors.ProviderError`
subclass for an error status (status, redacted body excerpt, the provider's own message, the
request id header), :class:`~reasonwire.errors.TransportError` when no answer came. Keys travel
only in the headers the caller passes and never appear in an exception: every message goes
through :func:`reasonwire.credentials.redact` and URLs lose their query values.

The transport is the extension point (as in httpx itself): :func:`make_client` takes an
optional ``transport`` so tests, the probe and the gateway can put their own under the client.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC
from typing import TypeAlias, TypedDict

import httpx

from reasonwire.credentials import SECRET_FIELDS, redact, register_secret
from reasonwire.errors import ProviderError, TransportError, provider_error_for
from reasonwire.wire.dialect import read_error
from reasonwire.wire.model import JSON

REQUEST_ID_HEADERS: tuple[str, ...] = (
    "x-request-id",
    "request-id",
    "x-goog-request-id",
    "openai-request-id",
    "x-amzn-requestid",
    "cf-ray",
)
"""Response headers that carry the provider's request id, first match wins."""


def default_timeout(
    *, connect: float = 10.0, read: float = 300.0, write: float = 60.0, pool: float = 30.0
) -> httpx.Timeout:
    """Timeouts for LLM calls: a quick connect, a long read (reasoning models think a while
    before the first byte)."""
    return httpx.Timeout(connect=connect, read=read, write=write, pool=pool)


_Failure: TypeAlias = ProviderError | TransportError
"""How an attempt without a usable answer ends: an error status or no answer at all."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """A decision of :meth:`RetryPolicy.flow`: send attempt ``number`` (0 is the first),
    after sleeping ``delay`` seconds (a retry sleeps even for 0: the driver's ``sleep`` is
    where a caller sees every retry)."""

    number: int
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry a request that got no usable answer.

    ``retries`` is the number of extra attempts (0 = try once). The n-th retry waits
    ``min(backoff_max, backoff_base * 2**n)`` scaled by a random factor in
    ``[1 - jitter, 1 + jitter]``, or the provider's ``Retry-After`` capped at
    ``retry_after_cap`` when it sent one.
    """

    retries: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    jitter: float = 0.25
    retry_after_cap: float = 60.0
    retry_statuses: frozenset[int] = field(
        default_factory=lambda: frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})
    )
    retry_connection_errors: bool = True

    def should_retry_status(self, status: int) -> bool:
        return status in self.retry_statuses

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_cap))
        base: float = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        if self.jitter:
            base *= random.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        return max(0.0, base)

    def flow(self) -> Generator[Attempt, ProviderError | TransportError, None]:
        """The retry decisions, without I/O: yields the first :class:`Attempt`, then for each
        failure sent in either the next attempt or the end (``StopIteration``: the failure is
        final and the driver raises it). A 2xx needs no decision, the driver returns it.

        A connection failure is retried when ``retry_connection_errors``; an error status
        when it is one of ``retry_statuses``, after the failure's ``retry_after`` (capped)
        or else the jittered backoff; never more than ``retries`` times."""
        failure = yield Attempt(0)
        for number in range(1, self.retries + 1):
            if isinstance(failure, TransportError):
                if not self.retry_connection_errors:
                    return
                wait = self.delay(number - 1)
            elif self.should_retry_status(failure.status):
                wait = self.delay(number - 1, failure.retry_after)
            else:
                return
            failure = yield Attempt(number, wait)


NO_RETRY = RetryPolicy(retries=0)
DEFAULT_RETRY = RetryPolicy()


def _policy(retries: RetryPolicy | int | None) -> RetryPolicy:
    if retries is None:
        return DEFAULT_RETRY
    if isinstance(retries, int):
        return RetryPolicy(retries=max(0, retries))
    return retries


# --------------------------------------------------------------------------------------------
# Clients
# --------------------------------------------------------------------------------------------


class _ClientOptions(TypedDict):
    base_url: str
    timeout: httpx.Timeout | float
    http2: bool
    headers: dict[str, str]
    limits: httpx.Limits
    follow_redirects: bool


def _client_options(
    base_url: str,
    timeout: httpx.Timeout | float | None,
    http2: bool,
    headers: Mapping[str, str] | None,
    limits: httpx.Limits | None,
) -> _ClientOptions:
    """What the sync and async clients share: our timeouts, pool limits, no redirects."""
    return {
        "base_url": base_url,
        "timeout": timeout if timeout is not None else default_timeout(),
        "http2": http2,
        "headers": dict(headers or {}),
        "limits": limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
        "follow_redirects": False,
    }


def make_client(
    *,
    base_url: str = "",
    timeout: httpx.Timeout | float | None = None,
    transport: httpx.BaseTransport | None = None,
    http2: bool = True,
    headers: Mapping[str, str] | None = None,
    limits: httpx.Limits | None = None,
) -> httpx.Client:
    """A sync client: HTTP/2 when the server offers it (ALPN), our default timeouts.

    ``transport`` replaces the network layer (a mock, a recorder, an ASGI app).
    """
    return httpx.Client(
        transport=transport, **_client_options(base_url, timeout, http2, headers, limits)
    )


def make_async_client(
    *,
    base_url: str = "",
    timeout: httpx.Timeout | float | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    http2: bool = True,
    headers: Mapping[str, str] | None = None,
    limits: httpx.Limits | None = None,
) -> httpx.AsyncClient:
    """The async twin of :func:`make_client`."""
    return httpx.AsyncClient(
        transport=transport, **_client_options(base_url, timeout, http2, headers, limits)
    )


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def safe_url(url: httpx.URL | str) -> str:
    """The URL without its query values (a key may ride there) and redacted."""
    u = httpx.URL(str(url))
    if u.query:
        names = [k for k, _ in u.params.multi_items()]
        u = u.copy_with(query=None)
        return redact(str(u) + "?" + "&".join(f"{n}=..." for n in names))
    return redact(str(u))


def retry_after_seconds(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, ``Retry-After`` in seconds or
    as an HTTP date; None when absent or unparsable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    ref = now if now is not None else time.time()
    return max(0.0, when.timestamp() - ref)


def provider_message(body: bytes | str) -> str | None:
    """The error message a provider put in its JSON error body, if any.

    Understands ``{"error": {"message": ..}}`` (OpenAI, Anthropic, Gemini), ``{"error": ".."}``,
    ``{"message": ..}``, ``{"detail": ..}`` and a list holding one such object (Gemini): the
    error shapes of :func:`reasonwire.wire.dialect.read_error`.
    """
    try:
        data = json.loads(body)
    except (ValueError, TypeError):
        return None
    info = read_error(data)
    return info.message if info is not None else None


def request_id(headers: httpx.Headers) -> str | None:
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return redact(value)
    return None


def error_from_response(response: httpx.Response, body: bytes) -> ProviderError:
    """The typed error for an error-status response whose body has been read."""
    text = body.decode("utf-8", "replace")
    cls = provider_error_for(response.status_code)
    return cls(
        response.status_code,
        text,
        provider_message=provider_message(body),
        request_id=request_id(response.headers),
        url=safe_url(response.request.url) if _has_request(response) else None,
        retry_after=retry_after_seconds(response.headers),  # any status may (503 often does)
    )


def _has_request(response: httpx.Response) -> bool:
    try:
        response.request  # noqa: B018  (raises when the response was built without one)
    except RuntimeError:
        return False
    return True


def _transport_error(exc: httpx.TransportError, url: httpx.URL | str) -> TransportError:
    kind = type(exc).__name__
    detail = redact(str(exc)) if str(exc) else ""
    msg = f"{kind} on POST {safe_url(url)}" + (f": {detail}" if detail else "")
    return TransportError(msg)


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


def encode_body(body: JSON | bytes) -> bytes:
    """JSON bytes of ``body`` as we send it: key order kept, UTF-8, compact. ``bytes`` pass
    through unchanged (an already-encoded body)."""
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Request headers; credential values are registered for redaction on the way through,
    so a server that echoes the key cannot put it into one of our exceptions."""
    out = {"content-type": "application/json"}
    if headers:
        for name, value in headers.items():
            if name.lower().replace("-", "_") in SECRET_FIELDS:
                register_secret(value)
                scheme, _, token = value.partition(" ")
                if token and scheme.lower() in ("bearer", "basic", "token"):
                    register_secret(token)
        out.update(headers)
    return out


_Outcome: TypeAlias = httpx.Response | _Failure  # one attempt: the 2xx response, or why not


@dataclass(frozen=True, slots=True)
class _Call:
    """One POST as every attempt sends it: encoded once, so each retry sends the same bytes."""

    url: str
    content: bytes
    headers: dict[str, str]
    timeout: httpx.Timeout | float | None
    policy: RetryPolicy

    @classmethod
    def of(
        cls,
        url: str,
        body: JSON | bytes,
        headers: Mapping[str, str] | None,
        retries: RetryPolicy | int | None,
        timeout: httpx.Timeout | float | None,
    ) -> _Call:
        return cls(url, encode_body(body), _headers(headers), timeout, _policy(retries))

    def request(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        timeout = self.timeout if self.timeout is not None else httpx.USE_CLIENT_DEFAULT
        return client.build_request(
            "POST", self.url, content=self.content, headers=self.headers, timeout=timeout
        )


def _next(flow: Generator[Attempt, _Failure, None], failure: _Failure) -> Attempt:
    """The flow's next attempt after ``failure``; raises ``failure`` when the flow ends."""
    try:
        return flow.send(failure)
    except StopIteration:
        pass
    raise failure


def _attempt(client: httpx.Client, call: _Call, stream: bool) -> _Outcome:
    """Send once; an error status is read (for its message) and closed."""
    try:
        response = client.send(call.request(client), stream=stream)
    except httpx.TransportError as exc:
        return _transport_error(exc, call.url)
    if response.status_code >= 400:
        return _error(response)
    return response


def _error(response: httpx.Response) -> ProviderError:
    """The typed error of an error-status response: its body read (empty when the read
    fails: the status still says what happened), the response closed."""
    try:
        body = response.read()
    except httpx.TransportError:
        body = b""
    finally:
        response.close()
    return error_from_response(response, body)


async def _aattempt(client: httpx.AsyncClient, call: _Call, stream: bool) -> _Outcome:
    """The async :func:`_attempt`."""
    try:
        response = await client.send(call.request(client), stream=stream)
    except httpx.TransportError as exc:
        return _transport_error(exc, call.url)
    if response.status_code >= 400:
        return await _aerror(response)
    return response


async def _aerror(response: httpx.Response) -> ProviderError:
    """The async :func:`_error`."""
    try:
        body = await response.aread()
    except httpx.TransportError:
        body = b""
    finally:
        await response.aclose()
    return error_from_response(response, body)


def _send(
    client: httpx.Client, call: _Call, stream: bool, sleep: Callable[[float], None]
) -> httpx.Response:
    """The sync driver of :meth:`RetryPolicy.flow`: a 2xx response, or the final failure raised."""
    flow = call.policy.flow()
    attempt = next(flow)
    while True:
        if attempt.number:
            sleep(attempt.delay)
        outcome = _attempt(client, call, stream)
        if isinstance(outcome, httpx.Response):
            return outcome
        attempt = _next(flow, outcome)


async def _asend(
    client: httpx.AsyncClient,
    call: _Call,
    stream: bool,
    sleep: Callable[[float], Awaitable[None]],
) -> httpx.Response:
    """The async driver of :meth:`RetryPolicy.flow`."""
    flow = call.policy.flow()
    attempt = next(flow)
    while True:
        if attempt.number:
            await sleep(attempt.delay)
        outcome = await _aattempt(client, call, stream)
        if isinstance(outcome, httpx.Response):
            return outcome
        attempt = _next(flow, outcome)


def post_json(
    client: httpx.Client,
    url: str,
    body: JSON | bytes,
    headers: Mapping[str, str] | None = None,
    *,
    retries: RetryPolicy | int | None = None,
    timeout: httpx.Timeout | float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Response:
    """POST ``body`` as JSON and return the (read) 2xx response, retrying per ``retries``.

    Raises a :class:`~reasonwire.errors.ProviderError` subclass for an error status and
    :class:`~reasonwire.errors.TransportError` when no answer came, after the retries.
    """
    return _send(client, _Call.of(url, body, headers, retries, timeout), False, sleep)


async def apost_json(
    client: httpx.AsyncClient,
    url: str,
    body: JSON | bytes,
    headers: Mapping[str, str] | None = None,
    *,
    retries: RetryPolicy | int | None = None,
    timeout: httpx.Timeout | float | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> httpx.Response:
    """The async twin of :func:`post_json`."""
    return await _asend(client, _Call.of(url, body, headers, retries, timeout), False, sleep)


@contextmanager
def stream_post(
    client: httpx.Client,
    url: str,
    body: JSON | bytes,
    headers: Mapping[str, str] | None = None,
    *,
    retries: RetryPolicy | int | None = None,
    timeout: httpx.Timeout | float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[httpx.Response]:
    """POST ``body`` and yield the 2xx response unread, for ``iter_bytes()``.

    Error statuses and connection failures before the response head are retried and then
    raised typed. After the head has arrived nothing is retried; a connection failure while
    the caller reads the body is raised as :class:`~reasonwire.errors.TransportError`.
    """
    call = _Call.of(url, body, headers, retries, timeout)
    response = _send(client, call, True, sleep)
    try:
        yield response
    except httpx.TransportError as exc:
        raise _transport_error(exc, url) from None
    finally:
        response.close()


@asynccontextmanager
async def astream_post(
    client: httpx.AsyncClient,
    url: str,
    body: JSON | bytes,
    headers: Mapping[str, str] | None = None,
    *,
    retries: RetryPolicy | int | None = None,
    timeout: httpx.Timeout | float | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncIterator[httpx.Response]:
    """The async twin of :func:`stream_post` (``async for chunk in resp.aiter_bytes()``)."""
    call = _Call.of(url, body, headers, retries, timeout)
    response = await _asend(client, call, True, sleep)
    try:
        yield response
    except httpx.TransportError as exc:
        raise _transport_error(exc, url) from None
    finally:
        await response.aclose()


__all__ = [
    "DEFAULT_RETRY",
    "NO_RETRY",
    "REQUEST_ID_HEADERS",
    "Attempt",
    "RetryPolicy",
    "apost_json",
    "astream_post",
    "default_timeout",
    "encode_body",
    "error_from_response",
    "make_async_client",
    "make_client",
    "post_json",
    "provider_message",
    "request_id",
    "retry_after_seconds",
    "safe_url",
    "stream_post",
]
