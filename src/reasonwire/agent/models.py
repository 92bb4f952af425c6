"""Model handles: a route (data), a model id, and the request options that go with them.

A :class:`Model` says where to send (``route``: dialect, base URL, profile, auth header shape,
key source) and what to ask for (effort, store, max_tokens, extra_body). The constructors
(:func:`openai`, :func:`openrouter`, :func:`openai_compatible`, :func:`anthropic`,
:func:`gemini`, :func:`from_route`) only pick a route record and defaults; nothing here
branches on a provider, and the continuation strategy is derived from the dialect and route
in :mod:`reasonwire.agent.strategy`.

Keys are read at call time from the key source (the route's, a ``credentials`` source, its
one-line form, or a callable returning the key) and are never stored: the handle keeps the
source, and ``repr`` hides even that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeAlias

import httpx

from reasonwire import credentials
from reasonwire.errors import ConfigError, CredentialError
from reasonwire.http import DEFAULT_RETRY, RetryPolicy, make_client
from reasonwire.routes import KeySource as RouteKeySource
from reasonwire.routes import Route, get_route, load_routes
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import get_dialect

DOTENV_FALLBACK = "~/.hermes/.env"
"""Where a route's ``env`` key is looked up when the variable is not set (routes.KeySource)."""

KeyLike: TypeAlias = RouteKeySource | credentials.KeySource | str | Callable[[], str] | None
"""A key source: a route's, a credentials source, its one-line form, or a callable."""

HttpClient: TypeAlias = httpx.Client | httpx.AsyncClient


def _route_key(src: RouteKeySource) -> str | None:
    if not src.needs_key:
        return None
    if src.auth_file:
        return credentials.read_key(credentials.AuthFileKey(src.auth_file, src.key_paths))
    assert src.env is not None
    try:
        return credentials.read_key(credentials.EnvKey(src.env))
    except CredentialError:
        try:
            return credentials.read_key(credentials.DotenvKey(DOTENV_FALLBACK, src.env))
        except CredentialError:
            raise CredentialError(
                f"environment variable {src.env} is not set (nor in {DOTENV_FALLBACK})"
            ) from None


@dataclass(frozen=True)
class Model:
    """Everything needed to call one model on one route (no key value inside)."""

    route: Route
    name: str
    effort: str | None = None
    store: bool | None = None
    max_tokens: int | None = None
    extra_body: Mapping[str, JSON] = field(default_factory=dict)
    key: KeyLike = field(default=None, repr=False, compare=False)
    http_client: HttpClient | None = field(default=None, repr=False, compare=False)
    retries: RetryPolicy = DEFAULT_RETRY
    timeout: float | None = None

    @property
    def dialect(self) -> Dialect:
        return get_dialect(self.route.dialect)

    def read_key(self) -> str | None:
        """The key, read now from its source (None for a route without one)."""
        k = self.key
        if k is None:
            return _route_key(self.route.key)
        if isinstance(k, RouteKeySource):
            return _route_key(k)
        if isinstance(k, credentials.EnvKey | credentials.DotenvKey | credentials.AuthFileKey):
            return credentials.read_key(k)
        if isinstance(k, str):
            return credentials.read_key(k)
        value = k()
        if not isinstance(value, str) or not value:
            raise CredentialError("the key callable returned no key")
        credentials.register_secret(value)
        return value

    def headers(self) -> dict[str, str]:
        """Request headers with the key read at call time."""
        return self.route.auth_headers(self.read_key())

    def url(self, path: str) -> str:
        if not self.route.base_url:
            raise ConfigError(f"route {self.route.name!r} has no base_url; pass base_url=...")
        return self.route.base_url + path

    def sync_client(self) -> httpx.Client:
        if isinstance(self.http_client, httpx.Client):
            return self.http_client
        return _default_sync()

    def own_async_client(self) -> httpx.AsyncClient | None:
        """The caller's async client, or None (then a run opens and closes its own)."""
        return self.http_client if isinstance(self.http_client, httpx.AsyncClient) else None


_SYNC: list[httpx.Client] = []


def _default_sync() -> httpx.Client:
    """One shared sync client for handles without their own (connection reuse)."""
    if not _SYNC:
        _SYNC.append(make_client())
    return _SYNC[0]


def _build(
    route: Route,
    model: str,
    *,
    effort: str | None,
    store: bool | None,
    base_url: str | None,
    extra_body: Mapping[str, JSON] | None,
    max_tokens: int | None,
    key: KeyLike,
    http_client: HttpClient | None,
    retries: RetryPolicy | int | None,
    timeout: float | None,
) -> Model:
    if not model:
        raise ConfigError("a model id is required")
    if base_url is not None:
        route = route.with_base_url(base_url)
    policy = (
        DEFAULT_RETRY
        if retries is None
        else RetryPolicy(retries=max(0, retries))
        if isinstance(retries, int)
        else retries
    )
    return Model(
        route=route,
        name=model,
        effort=effort,
        store=store,
        max_tokens=max_tokens,
        extra_body=dict(extra_body or {}),
        key=key,
        http_client=http_client,
        retries=policy,
        timeout=timeout,
    )


def from_route(
    route: str | Route,
    model: str,
    *,
    effort: str | None = None,
    store: bool | None = None,
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    key: KeyLike = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
    routes_file: str | Path | None = None,
) -> Model:
    """A model on a named route (built-in or from ``routes_file``) or on a :class:`Route`."""
    r = route if isinstance(route, Route) else get_route(route, load_routes(routes_file))
    return _build(
        r,
        model,
        effort=effort,
        store=store,
        base_url=base_url,
        extra_body=extra_body,
        max_tokens=max_tokens,
        key=key,
        http_client=http_client,
        retries=retries,
        timeout=timeout,
    )


def openai(
    model: str,
    *,
    store: bool = True,
    effort: str | None = "medium",
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    key: KeyLike = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """OpenAI Responses. ``store=True`` continues with ``previous_response_id``;
    ``store=False`` replays every output item with its encrypted reasoning."""
    return from_route(
        "openai-responses",
        model,
        effort=effort,
        store=store,
        base_url=base_url,
        extra_body=extra_body,
        max_tokens=max_tokens,
        key=key,
        http_client=http_client,
        retries=retries,
        timeout=timeout,
    )


def openrouter(
    model: str,
    *,
    effort: str | None = "none",
    api: str = "responses",
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    key: KeyLike = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """OpenRouter: its Responses endpoint by default (``store`` false, every raw output item
    replayed), or ``api="chat"`` for Chat Completions with ``reasoning_details`` back whole."""
    chat_route = get_route("openrouter")
    routes = {
        "chat": chat_route,
        "responses": replace(
            chat_route, name="openrouter-responses", dialect="responses", profile=None
        ),
    }
    route = routes.get(api)
    if route is None:
        raise ConfigError(f"api must be one of {', '.join(sorted(routes))}, not {api!r}")
    stateful = get_dialect(route.dialect).server_state is not None
    return _build(
        route,
        model,
        effort=effort,
        store=False if stateful else None,
        base_url=base_url,
        extra_body=extra_body,
        max_tokens=max_tokens,
        key=key,
        http_client=http_client,
        retries=retries,
        timeout=timeout,
    )


def openai_compatible(
    *,
    base_url: str,
    model: str,
    profile: str | None = None,
    dialect: str = "chat",
    effort: str | None = None,
    store: bool | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    key: KeyLike = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
    name: str = "openai-compatible",
) -> Model:
    """Any OpenAI-compatible server: Chat Completions with a vendor ``profile`` (the chat
    dialect's profiles), or ``dialect="responses"``. No key unless ``key`` is given."""
    wire = get_dialect(dialect)  # unknown dialect -> UnknownDialect now
    wire.profile(profile)  # unknown profile -> ConfigError now, not at the first call
    route = Route(
        name=name,
        dialect=wire.name,
        base_url=base_url.rstrip("/"),
        profile=profile,
        local=key is None,
    )
    return _build(
        route,
        model,
        effort=effort,
        store=store,
        base_url=None,
        extra_body=extra_body,
        max_tokens=max_tokens,
        key=key,
        http_client=http_client,
        retries=retries,
        timeout=timeout,
    )


def anthropic(
    model: str,
    *,
    effort: str | None = None,
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    key: KeyLike = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """Anthropic Messages. ``effort=None`` asks for adaptive thinking; ``"none"`` for none."""
    return from_route(
        "anthropic",
        model,
        effort="adaptive" if effort is None else effort,
        base_url=base_url,
        extra_body=extra_body,
        max_tokens=max_tokens,
        key=key,
        http_client=http_client,
        retries=retries,
        timeout=timeout,
    )


def gemini(
    model: str,
    *,
    effort: str | None = None,
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    key: KeyLike = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """Gemini ``generateContent``; ``effort`` becomes ``thinkingLevel`` (None: model default)."""
    return from_route(
        "gemini-native",
        model,
        effort=effort,
        base_url=base_url,
        extra_body=extra_body,
        max_tokens=max_tokens,
        key=key,
        http_client=http_client,
        retries=retries,
        timeout=timeout,
    )


__all__ = [
    "KeyLike",
    "Model",
    "anthropic",
    "from_route",
    "gemini",
    "openai",
    "openai_compatible",
    "openrouter",
]
