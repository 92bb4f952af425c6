"""Carrying a conversation's binding to the gateway from any httpx-based SDK client.

A :class:`Carry` belongs to one conversation: its transports add the binding header
(:data:`~reasonwire.govern.binding.HEADER`) and the conversation header to every request the
client sends, replacing whatever the caller put there. Nothing is process-global (no
contextvar, no module state): two conversations in one process use two carries, and so two
clients, and never see each other's binding.

The binding is per turn. Give a token, or a callable that mints one (for example
:func:`reasonwire.govern.control.minter`): the callable is called for the first request, on
:meth:`Carry.new_turn` (a resumed turn gets a fresh binding) and when the current token is
about to expire. The SDK's own retries carry ``x-reasonwire-attempt`` (from the retry count
the OpenAI and Anthropic SDKs send), so evidence tells a retry from a new call.

    c = carry("conv-1", minter(registry, policy, ring, conversation_id="conv-1", ...))
    client = openai.OpenAI(base_url=gateway + "/v1", api_key="unused", http_client=c.client())
    client.chat.completions.create(...)      # turn 1
    c.new_turn()
    client.chat.completions.create(...)      # turn 2, a new binding
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx
import orjson

from reasonwire._wrapping import (
    AsyncInner,
    AsyncWrappingTransport,
    Flow,
    SyncInner,
    WrappingTransport,
)
from reasonwire.govern.binding import HEADER

CONVERSATION_HEADER = "x-reasonwire-conversation"
"""The gateway's conversation header (``gateway.CONVERSATION_HEADER``; a test keeps them equal:
this module does not import the gateway)."""
ATTEMPT_HEADER = "x-reasonwire-attempt"
_RETRY_HEADER = "x-stainless-retry-count"  # sent by the OpenAI and Anthropic SDKs
_REFRESH_BEFORE = 30.0  # seconds: a minted token this close to expiry is replaced

Minter = Callable[[], str]

__all__ = [
    "ATTEMPT_HEADER",
    "CONVERSATION_HEADER",
    "AsyncCarryTransport",
    "Carry",
    "CarryTransport",
    "carry",
]


def _expiry(token: str) -> float | None:
    """The ``exp`` claim of a compact JWS, unverified (the gateway verifies; this only decides
    when to mint again). ``None`` when it cannot be read."""
    try:
        payload = token.split(".")[1]
        claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = claims.get("exp") if isinstance(claims, dict) else None
    except (IndexError, ValueError, orjson.JSONDecodeError):
        return None
    return float(exp) if isinstance(exp, int | float) else None


class Carry:
    """One conversation's binding and headers (thread-safe)."""

    def __init__(self, conversation_id: str, binding: str | Minter) -> None:
        if not conversation_id:
            raise ValueError("a conversation id is required")
        self.conversation_id = conversation_id
        self._mint: Minter | None = None if isinstance(binding, str) else binding
        self._token: str | None = binding if isinstance(binding, str) else None
        self._lock = threading.Lock()
        self.turns = 1 if isinstance(binding, str) else 0
        """Turns so far (one per binding minted or given; a refresh near expiry is not one)."""

    @property
    def token(self) -> str:
        """The current turn's binding (minted on first use)."""
        with self._lock:
            if self._token is None:
                self._minted(turn=True)
            elif self._stale(self._token):
                self._minted(turn=False)  # the same turn, a token that is still valid
            assert self._token is not None
            return self._token

    def _stale(self, token: str) -> bool:
        if self._mint is None:
            return False  # a fixed token is sent as it is: the gateway says when it expired
        exp = _expiry(token)
        return exp is not None and exp - time.time() < _REFRESH_BEFORE

    def _minted(self, *, turn: bool) -> None:
        if self._mint is None:
            raise RuntimeError("this carry holds one fixed binding: give a minter to resume")
        token = self._mint()
        if not isinstance(token, str) or not token:
            raise TypeError("the minter must return a binding token (str)")
        self._token = token
        self.turns += turn

    def new_turn(self, binding: str | None = None) -> str:
        """Start a resumed turn: use ``binding``, or mint a fresh one. Returns the token."""
        with self._lock:
            if binding is not None:
                self._token = binding
                self.turns += 1
            else:
                self._minted(turn=True)
            assert self._token is not None
            return self._token

    def headers(self) -> dict[str, str]:
        """The headers a governed request carries."""
        return {HEADER: self.token, CONVERSATION_HEADER: self.conversation_id}

    def apply(self, request: httpx.Request) -> None:
        """Set this conversation's headers on ``request`` (replacing any the caller set)."""
        for name, value in self.headers().items():
            request.headers[name] = value
        retries = request.headers.get(_RETRY_HEADER, "")
        if retries.isdigit() and len(retries) <= 3:
            request.headers[ATTEMPT_HEADER] = str(int(retries) + 1)

    def flow(self, request: httpx.Request) -> Flow:
        """The transports' policy (:mod:`reasonwire._wrapping`): carry, then send unchanged."""
        self.apply(request)
        return (yield request)

    def transport(self, inner: SyncInner | None = None) -> CarryTransport:
        return CarryTransport(self, inner)

    def async_transport(self, inner: AsyncInner | None = None) -> AsyncCarryTransport:
        return AsyncCarryTransport(self, inner)

    def client(self, *, package: ModuleType = httpx, **kw: Any) -> Any:
        """A client of ``package`` (httpx, or the ``httpx2`` fork some SDKs require: pass
        ``package=httpx2``) carrying this conversation, for an SDK's ``http_client``;
        ``transport=`` wraps that transport instead of a new default one."""
        return package.Client(transport=self.transport(kw.pop("transport", None)), **kw)

    def async_client(self, *, package: ModuleType = httpx, **kw: Any) -> Any:
        return package.AsyncClient(transport=self.async_transport(kw.pop("transport", None)), **kw)


class CarryTransport(WrappingTransport[Carry]):
    """A sync transport that adds a :class:`Carry`'s headers, then sends with ``inner``
    (by default a new ``HTTPTransport`` of the request's package: httpx or its fork)."""

    def __init__(self, carry: Carry, inner: SyncInner | None = None) -> None:
        super().__init__(carry, inner)
        self.carry = carry


class AsyncCarryTransport(AsyncWrappingTransport[Carry]):
    """The async twin of :class:`CarryTransport` (its inner transport, too, is made once under
    a lock, by the shared base)."""

    def __init__(self, carry: Carry, inner: AsyncInner | None = None) -> None:
        super().__init__(carry, inner)
        self.carry = carry


def carry(conversation_id: str, binding: str | Minter) -> Carry:
    """A :class:`Carry` for ``conversation_id`` with a fixed ``binding`` or a minter."""
    return Carry(conversation_id, binding)
