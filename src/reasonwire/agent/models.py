"""Model handles: a route (data), a model id, the request options, and where the key is read.

A :class:`Model` says where to send (``route``: dialect, base URL, profile, auth header shape),
what to ask for (effort, store, max_tokens, extra_body) and where its key comes from (a
:data:`KeySpec`: a source, never a value in sight). The constructors that make one the way the
official SDKs do are in :mod:`reasonwire.agent.constructors`; the key model itself (sources,
reading, the secret heuristics) is :mod:`reasonwire.credentials`.

No error message, ``repr``, log line or record carries a key value: a key handed over as
``api_key`` is registered with :func:`reasonwire.credentials.register_secret` so every
redaction step removes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

import httpx

from reasonwire import credentials
from reasonwire.errors import ConfigError, CredentialError
from reasonwire.http import DEFAULT_RETRY, RetryPolicy, make_client
from reasonwire.routes import Route
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import get_dialect

DOTENV_FALLBACK = credentials.DEFAULT_DOTENV
"""Where a key environment variable that is not set is looked up next, under the same name
(read at call time, so tests and users may point it elsewhere)."""

KeyLike: TypeAlias = credentials.KeySource | Callable[[], str] | None
"""What ``key=`` takes: a :data:`reasonwire.credentials.KeySource` or a callable returning the
key (called at every request). Never a plain string (see ``api_key=`` and ``key_env=``)."""

HttpClient: TypeAlias = httpx.Client | httpx.AsyncClient


class GivenKey:
    """A key handed over by value (``api_key=``). The value is registered for redaction and
    never shown: ``repr`` says only that a key was given."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        if not isinstance(value, str):
            raise ConfigError(f"api_key must be a str, not {type(value).__name__}")
        try:
            self._value = credentials.check_key(value, "api_key=")
        except CredentialError as exc:
            raise ConfigError(str(exc)) from None

    def read(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "GivenKey(<hidden>)"


@dataclass(frozen=True, slots=True)
class EnvChain:
    """An SDK's key variables, tried in order, then the same names in :data:`DOTENV_FALLBACK`.

    ``required`` False: none set means no key (an OpenAI-compatible server that needs none).
    """

    names: tuple[str, ...]
    required: bool = True

    def read(self) -> str | None:
        sources = [credentials.EnvKey(name) for name in self.names]
        value = credentials.read_first(sources, dotenv=DOTENV_FALLBACK)
        if value is not None or not self.required:
            return value
        raise CredentialError(
            f"no key: environment variable {' or '.join(self.names)} is not set (nor in "
            f"{DOTENV_FALLBACK}); pass api_key=..., key_env=... or key=..."
        )


KeySpec: TypeAlias = KeyLike | GivenKey | EnvChain
"""What a :class:`Model` holds: a source, never a key value (``GivenKey`` hides its value).
None: the route record's own key source."""


def read_spec(spec: KeySpec, route: Route) -> str | None:
    """The key of ``spec`` (or of ``route`` when it is None), read now; None for no key. A
    variable that is not set is looked up in :data:`DOTENV_FALLBACK`, whatever names it."""
    source = route.key if spec is None else spec
    if source is None:
        return None
    if isinstance(source, GivenKey | EnvChain):
        return source.read()
    if isinstance(source, credentials.EnvKey | credentials.DotenvKey | credentials.AuthFileKey):
        return credentials.read_key(source, dotenv=DOTENV_FALLBACK)
    value = source()
    if not isinstance(value, str) or not value.strip():
        raise CredentialError("the key callable returned no key")
    return credentials.check_key(value, "the key callable")


@dataclass(frozen=True)
class Model:
    """Everything needed to call one model on one route (no key value visible inside)."""

    route: Route
    name: str
    effort: str | None = None
    store: bool | None = None
    max_tokens: int | None = None
    extra_body: Mapping[str, JSON] = field(default_factory=dict)
    key: KeySpec = field(default=None, repr=False, compare=False)
    http_client: HttpClient | None = field(default=None, repr=False, compare=False)
    retries: RetryPolicy = DEFAULT_RETRY
    timeout: float | None = None
    fold: FoldSettings | None = None
    """Stage 1 fold of replayed reasoning text (``wire.fold``); None: off (the default)."""

    @property
    def dialect(self) -> Dialect:
        return get_dialect(self.route.dialect)

    @property
    def base_url(self) -> str:
        """The route's base URL: the one request paths are appended to."""
        return self.route.base_url

    def read_key(self) -> str | None:
        """The key, read now from its source (None for a route without one)."""
        return read_spec(self.key, self.route)

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


__all__ = [
    "DOTENV_FALLBACK",
    "EnvChain",
    "GivenKey",
    "HttpClient",
    "KeyLike",
    "KeySpec",
    "Model",
    "read_spec",
]
