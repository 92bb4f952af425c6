"""One wrapping httpx transport: each policy written once, thin sync and async drivers.

The probe (:mod:`reasonwire.probe.transport`) and the fold (:mod:`reasonwire.fold.transport`)
each wrap an inner transport and do something around each request. Why one base: what a
wrapper does to a request does not depend on whether the client is sync or async, so it is
written once, in httpx's own shape (``httpx.Auth.auth_flow``): a generator, :data:`Flow`,
that yields the request to send and receives the response (or has the transport's exception
thrown in), then returns the response the caller gets. :class:`WrappingTransport` and
:class:`AsyncWrappingTransport` only drive that generator over the inner transport's
``handle_request`` / ``handle_async_request``.

The inner transport defaults to the package's own ``HTTPTransport()`` /
``AsyncHTTPTransport()``, created on the first request from the package that request comes
from (``httpx`` or its ``httpx2`` fork, see :mod:`reasonwire._httpcompat`), so one wrapper
serves either kind of client. Requests and responses are typed as httpx's; the fork's objects
have the same shape.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypeVar

import httpx

from reasonwire._httpcompat import ASYNC_TRANSPORTS, SYNC_TRANSPORTS, package_of

Flow = Generator[httpx.Request, httpx.Response, httpx.Response]
"""One request's policy: yields what to send, receives what came back, returns the answer."""


class Policy(Protocol):
    """What a wrapper does around one request (see :data:`Flow`)."""

    def flow(self, request: httpx.Request) -> Flow: ...


class SyncInner(Protocol):
    """The inner transport of a sync wrapper (an ``httpx`` or ``httpx2`` transport)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response: ...

    def close(self) -> None: ...


class AsyncInner(Protocol):
    """The inner transport of an async wrapper."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response: ...

    async def aclose(self) -> None: ...


P = TypeVar("P", bound=Policy)
I = TypeVar("I", SyncInner, AsyncInner)  # noqa: E741


@dataclass(frozen=True)
class _Done:
    response: httpx.Response


def _advance(
    flow: Flow, outcome: httpx.Response | BaseException | None = None
) -> httpx.Request | _Done:
    """Run ``flow`` to its next request, handing it ``outcome`` (None: start it)."""
    try:
        if outcome is None:
            return next(flow)
        if isinstance(outcome, BaseException):
            return flow.throw(outcome)
        return flow.send(outcome)
    except StopIteration as stop:
        return _Done(stop.value)


def _call(
    send: Callable[[httpx.Request], httpx.Response], request: httpx.Request
) -> httpx.Response | BaseException:
    try:
        return send(request)
    except BaseException as exc:  # handed to the flow, which re-raises it to the caller
        return exc


async def _acall(
    send: Callable[[httpx.Request], Awaitable[httpx.Response]], request: httpx.Request
) -> httpx.Response | BaseException:
    try:
        return await send(request)
    except BaseException as exc:  # cancellation too: the flow sees it, then re-raises it
        return exc


def drive(flow: Flow, send: Callable[[httpx.Request], httpx.Response]) -> httpx.Response:
    """Run ``flow`` with a sync ``send``."""
    step = _advance(flow)
    while not isinstance(step, _Done):
        step = _advance(flow, _call(send, step))
    return step.response


async def adrive(
    flow: Flow, send: Callable[[httpx.Request], Awaitable[httpx.Response]]
) -> httpx.Response:
    """Run ``flow`` with an async ``send``."""
    step = _advance(flow)
    while not isinstance(step, _Done):
        step = _advance(flow, await _acall(send, step))
    return step.response


class Wrapping(Generic[P, I]):
    """The state both drivers share: the policy, and the inner transport, made on first use."""

    _factory: ClassVar[str]  # the package's default inner transport class
    _policy: P
    _inner: I | None
    _lock: threading.Lock

    def _wrap(self, policy: P, inner: I | None) -> None:
        self._policy = policy
        self._inner = inner
        self._lock = threading.Lock()

    def _transport(self, request: httpx.Request) -> I:
        if self._inner is None:
            with self._lock:
                if self._inner is None:
                    made: I = getattr(package_of(request), self._factory)()
                    self._inner = made
        return self._inner


class WrappingTransport(Wrapping[P, SyncInner], *SYNC_TRANSPORTS):  # type: ignore[misc]
    """A sync transport that runs its policy's flow around the inner transport."""

    _factory = "HTTPTransport"

    def __init__(self, policy: P, inner: SyncInner | None = None) -> None:
        self._wrap(policy, inner)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return drive(self._policy.flow(request), self._transport(request).handle_request)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


class AsyncWrappingTransport(Wrapping[P, AsyncInner], *ASYNC_TRANSPORTS):  # type: ignore[misc]
    """An async transport that runs its policy's flow around the inner transport."""

    _factory = "AsyncHTTPTransport"

    def __init__(self, policy: P, inner: AsyncInner | None = None) -> None:
        self._wrap(policy, inner)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._transport(request)
        return await adrive(self._policy.flow(request), inner.handle_async_request)

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


def route_name(url: httpx.URL) -> str:
    """The built-in route whose base URL the request goes to, else the host (and port): how
    both wrappers name the route of a request nobody named."""
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


__all__ = [
    "AsyncInner",
    "AsyncWrappingTransport",
    "Flow",
    "Policy",
    "SyncInner",
    "Wrapping",
    "WrappingTransport",
    "adrive",
    "drive",
    "route_name",
]
