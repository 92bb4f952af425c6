"""Model handles: a route (data), a model id, and the request options that go with them.

A :class:`Model` says where to send (``route``: dialect, base URL, profile, auth header shape)
and what to ask for (effort, store, max_tokens, extra_body). The constructors (:func:`openai`,
:func:`openrouter`, :func:`openai_compatible`, :func:`anthropic`, :func:`gemini`,
:func:`from_route`) pick a route record and follow the official SDK's conventions, which are
data (:class:`Convention`, one per constructor in :data:`CONVENTIONS`), never an ``if``:

- **Keys like the SDKs.** ``api_key="..."`` is the key itself. Without it the key is read at
  call time from, in order of precedence, ``key=`` (a ``credentials`` source object, a route
  ``KeySource`` or a callable returning the key), ``key_env="NAME"`` (an environment variable),
  or the SDK's own variable(s) (``OPENAI_API_KEY``; ``ANTHROPIC_API_KEY``; ``GOOGLE_API_KEY``
  then ``GEMINI_API_KEY``, as google-genai prefers ``GOOGLE_API_KEY``; ``OPENROUTER_API_KEY``).
  An environment variable that is not set is then looked up under the same name in
  :data:`DOTENV_FALLBACK` (``credentials.DEFAULT_DOTENV``, ``~/.hermes/.env`` unless
  ``REASONWIRE_DOTENV`` says otherwise).
  A plain string passed to ``key=`` is refused: it could be a key or a variable name.
- **Base URLs like the SDKs.** ``base_url`` has the official SDK's meaning: OpenAI's includes
  ``/v1`` (``http://host/v1``); Anthropic's has none (``http://host``; ``/v1`` is appended, as
  the SDK posts to ``/v1/messages``); Gemini's is the SDK's base URL and ``api_version``
  (default ``v1beta``) is appended. When no ``base_url`` is passed the SDK's environment
  variable is honoured (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``,
  ``GOOGLE_GEMINI_BASE_URL``); precedence: argument > environment > built-in.

No error message, ``repr``, log line or record carries a key value: a key handed over as
``api_key`` is registered with :func:`reasonwire.credentials.register_secret` so every
redaction step removes it, and a string refused as a key source is described by kind and
length only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TypeAlias, cast

import httpx

from reasonwire import credentials
from reasonwire.errors import ConfigError, CredentialError
from reasonwire.http import DEFAULT_RETRY, RetryPolicy, make_client
from reasonwire.routes import BUILTIN_ROUTES, Route, get_route, load_routes
from reasonwire.routes import KeySource as RouteKeySource
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import get_dialect

DOTENV_FALLBACK = credentials.DEFAULT_DOTENV
"""Where a key environment variable that is not set is looked up next, under the same name
(read at call time, so tests and users may point it elsewhere)."""

KeyLike: TypeAlias = RouteKeySource | credentials.KeySource | Callable[[], str] | None
"""What ``key=`` takes: a route's key source, a ``credentials`` source object, or a callable
returning the key (called at every request). Never a plain string (see ``api_key=`` and
``key_env=``)."""

HttpClient: TypeAlias = httpx.Client | httpx.AsyncClient


# --------------------------------------------------------------------------------------------
# Describing without revealing
# --------------------------------------------------------------------------------------------

# Prefixes of well-known key formats (OpenAI/Anthropic/OpenRouter/DeepSeek sk-, xAI, Google
# API keys, Hugging Face, GitHub, GitLab, Slack, AWS access key ids, JWTs).
_KEY_PREFIXES = (
    "sk-", "sk_", "xai-", "AIza", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "glpat-", "xox", "AKIA", "ASIA", "eyJ",
)  # fmt: skip
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def _has_key_shape(text: str) -> bool:
    return text.startswith(_KEY_PREFIXES) or credentials.redact(text) != text


def _looks_like_key(text: str) -> bool:
    """True for a string that may be a secret: a known key prefix, a shape the redaction
    step knows, or a long mix of lower case, upper case and digits (environment variable
    names are words)."""
    if _has_key_shape(text):
        return True
    mixed = (
        any(c.islower() for c in text)
        and any(c.isupper() for c in text)
        and any(c.isdigit() for c in text)
    )
    return len(text) >= 20 and mixed


def describe(text: str) -> str:
    """``text`` by kind and length only (``a key-shaped string of 51 characters``)."""
    kind = "a key-shaped string" if _looks_like_key(text) else "a string"
    return f"{kind} of {len(text)} character{'' if len(text) == 1 else 's'}"


def _refuse(what: str, text: str) -> ConfigError:
    """A refusal naming ``text`` by kind and length; a string that may be a key is registered
    so that no later redaction step lets it through either."""
    if _looks_like_key(text) or not _ENV_NAME.fullmatch(text):
        credentials.register_secret(text)
    return ConfigError(f"{what} (got {describe(text)})")


def _check_value(value: str, where: str) -> str:
    """A key value as it will go in a header: stripped, non-empty, visible ASCII only."""
    credentials.register_secret(value)
    stripped = value.strip()
    if not stripped or not _HEADER_SAFE.fullmatch(stripped):
        raise CredentialError(
            f"the key from {where} cannot be sent in a header ({describe(value)}, empty or "
            "with spaces, control or non-ASCII characters)"
        )
    credentials.register_secret(stripped)
    return stripped


def _check_name(text: str, what: str, *, path: bool = False) -> None:
    """Refuse a variable name, path or key path that may be a key pasted in the wrong place
    (it would otherwise be named in a 'not set' message). A file path is judged by key
    prefixes and shapes only: paths mix cases and digits."""
    if _looks_like_key(text) if not path else _has_key_shape(text):
        raise _refuse(f"{what} looks like a key, not a name; pass the key itself as api_key=", text)


# --------------------------------------------------------------------------------------------
# Key sources built by the constructors
# --------------------------------------------------------------------------------------------


class GivenKey:
    """A key handed over by value (``api_key=``). The value is registered for redaction and
    never shown: ``repr`` says only that a key was given."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        if not isinstance(value, str):
            raise ConfigError(f"api_key must be a str, not {type(value).__name__}")
        try:
            self._value = _check_value(value, "api_key=")
        except CredentialError as exc:
            raise ConfigError(str(exc)) from None

    def read(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "GivenKey(<hidden>)"


@dataclass(frozen=True, slots=True)
class EnvChain:
    """Environment variables tried in order, then the same names in :data:`DOTENV_FALLBACK`.

    ``required`` False: none set means no key (an OpenAI-compatible server that needs none).
    """

    names: tuple[str, ...]
    required: bool = True

    def read(self) -> str | None:
        for name in self.names:
            value = os.environ.get(name)
            if value is not None and value.strip():
                return _check_value(value, f"environment variable {name}")
        for name in self.names:
            try:
                value = credentials.read_key(credentials.DotenvKey(DOTENV_FALLBACK, name))
            except CredentialError:
                continue
            return _check_value(value, f"{name} in {DOTENV_FALLBACK}")
        if not self.required:
            return None
        raise CredentialError(
            f"no key: environment variable {' or '.join(self.names)} is not set (nor in "
            f"{DOTENV_FALLBACK}); pass api_key=..., key_env=... or key=..."
        )


KeySpec: TypeAlias = KeyLike | GivenKey | EnvChain
"""What a :class:`Model` holds: a source, never a key value (``GivenKey`` hides its value)."""


def _read_source(k: KeySpec, route: Route) -> str | None:
    if k is None:
        return _read_source(_route_chain(route.key), route)
    if isinstance(k, GivenKey | EnvChain):
        return k.read()
    if isinstance(k, RouteKeySource):
        return _read_source(_route_chain(k), route)
    if isinstance(k, credentials.EnvKey | credentials.DotenvKey | credentials.AuthFileKey):
        return _check_value(credentials.read_key(k), k.describe())
    value = k()
    if not isinstance(value, str) or not value.strip():
        raise CredentialError("the key callable returned no key")
    return _check_value(value, "the key callable")


def _route_chain(src: RouteKeySource) -> KeySpec:
    """A route record's key source: its auth file, or its variable with the dotenv fallback."""
    if src.auth_file:
        return credentials.AuthFileKey(src.auth_file, src.key_paths)
    if src.env:
        return EnvChain((src.env,))
    return EnvChain((), required=False)


# --------------------------------------------------------------------------------------------
# SDK conventions (data)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Convention:
    """How the official SDK a constructor mirrors finds its key and reads its base URL."""

    sdk: str
    """The SDK whose convention this is (documentation)."""
    key_env: tuple[str, ...] = ()
    """Variables the SDK reads the key from when none is passed, first set wins."""
    key_required: bool = True
    """False: no key found means none is sent (servers on loopback often need none)."""
    env_key_needs_env_base: bool = False
    """True: the variable's key is sent only to a base URL that also came from the
    environment. An explicit ``base_url`` names a server of the caller's choosing, which must
    not receive a key meant for another (``openai_compatible`` with ``OPENAI_API_KEY`` set)."""
    base_env: str | None = None
    """The variable the SDK reads a base URL from when none is passed (same meaning)."""
    default_base: str | None = None
    """The SDK's built-in base URL (None: the route record's)."""
    path_prefix: str = ""
    """What the SDK puts between its base URL and the endpoint path: ``/v1`` for Anthropic
    (the SDK posts to ``/v1/messages``), ``/{api_version}`` for google-genai. The route's
    base URL is the SDK's base URL plus this."""
    api_version: str | None = None
    """The default for ``{api_version}`` (None: the convention has no API version)."""
    version_env: str | None = None
    """The variable the SDK reads the API version from (google-genai:
    ``GOOGLE_GENAI_API_VERSION``)."""
    version_aliases: Mapping[str, str] = field(default_factory=dict)
    """Short forms the SDK accepts in ``version_env`` (google-genai: ``beta`` is ``v1beta``)."""


OPENAI = Convention(
    sdk="openai",
    key_env=("OPENAI_API_KEY",),
    base_env="OPENAI_BASE_URL",
    default_base="https://api.openai.com/v1",
)
ANTHROPIC = Convention(
    sdk="anthropic",
    key_env=("ANTHROPIC_API_KEY",),
    base_env="ANTHROPIC_BASE_URL",
    default_base="https://api.anthropic.com",
    path_prefix="/v1",
)
GEMINI = Convention(
    sdk="google-genai",
    key_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    base_env="GOOGLE_GEMINI_BASE_URL",
    default_base="https://generativelanguage.googleapis.com",
    path_prefix="/{api_version}",
    # google-genai's own default is v1; reasonwire's Gemini dialect asks for thinking
    # controls documented on v1beta, so v1beta is the default here.
    api_version="v1beta",
    version_env="GOOGLE_GENAI_API_VERSION",
    version_aliases=MappingProxyType({"beta": "v1beta"}),
)
OPENROUTER = Convention(
    # OpenRouter documents the openai SDK with its own base URL and OPENROUTER_API_KEY; no SDK
    # defines a base URL variable, OPENROUTER_BASE_URL is named by analogy with the openai one.
    sdk="openai (OpenRouter)",
    key_env=("OPENROUTER_API_KEY",),
    base_env="OPENROUTER_BASE_URL",
    default_base="https://openrouter.ai/api/v1",
)
COMPATIBLE = Convention(
    sdk="openai (any compatible server)",
    key_env=("OPENAI_API_KEY",),
    key_required=False,
    env_key_needs_env_base=True,
    base_env="OPENAI_BASE_URL",
)

CONVENTIONS: Mapping[str, Convention] = MappingProxyType(
    {
        "openai": OPENAI,
        "openrouter": OPENROUTER,
        "openai_compatible": COMPATIBLE,
        "anthropic": ANTHROPIC,
        "gemini": GEMINI,
        "gemini_interactions": GEMINI,
    }
)
"""One convention per constructor."""

ROUTE_CONVENTIONS: Mapping[str, Convention] = MappingProxyType(
    {
        "openai-responses": OPENAI,
        "openai-chat": OPENAI,
        "openrouter": OPENROUTER,
        "anthropic": ANTHROPIC,
        "gemini-native": GEMINI,
        "gemini-interactions": GEMINI,
    }
)
"""Built-in routes that :func:`from_route` reads with an SDK's convention (a route from a
routes file or a :class:`Route` object keeps its own base URL meaning and key source)."""


def _env(name: str | None) -> str | None:
    if name is None:
        return None
    value = os.environ.get(name)
    return value.strip() if value is not None and value.strip() else None


def _base_url(
    conv: Convention, base_url: str | None, api_version: str | None, route: Route
) -> tuple[str, bool]:
    """The route base URL (SDK base URL plus its path prefix) and whether it came from the
    environment. Precedence: argument > the SDK's variable > built-in."""
    given, origin = base_url, "base_url="
    if given is None and conv.base_env is not None:
        given, origin = _env(conv.base_env), conv.base_env
    from_env = base_url is None and given is not None
    if given is None:
        given, origin = conv.default_base, "default"
    if given is None:
        if not route.base_url:
            raise ConfigError(
                "no base URL: pass base_url=..."
                + (f" or set {conv.base_env}" if conv.base_env else "")
            )
        return route.base_url, False
    if not given.startswith(("http://", "https://")):
        raise ConfigError(
            f"the base URL from {origin} must be an http(s) URL, not {credentials.redact(given)!r}"
        )
    version = None
    if conv.api_version is not None:
        env_version = _env(conv.version_env)
        if env_version is not None:
            env_version = conv.version_aliases.get(env_version, env_version)
        version = (api_version or env_version or conv.api_version).strip("/")
    elif api_version is not None:
        raise ConfigError(f"api_version= does not apply to the {conv.sdk} convention")
    return given.rstrip("/") + conv.path_prefix.format(api_version=version), from_env


def _key_spec(
    conv: Convention | None,
    api_key: str | None,
    key: object,
    key_env: str | None,
    base_from_env: bool,
) -> KeySpec:
    pairs = (("api_key=", api_key), ("key=", key), ("key_env=", key_env))
    given = [n for n, v in pairs if v is not None]
    if len(given) > 1:
        raise ConfigError(f"pass one key source, not {' and '.join(given)}")
    if api_key is not None:
        return GivenKey(api_key)
    if key is not None:
        return _check_key_arg(key)
    if key_env is not None:
        if not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env):
            text = key_env if isinstance(key_env, str) else type(key_env).__name__
            raise _refuse(
                "key_env= takes the name of an environment variable; pass a key as api_key=",
                text,
            )
        _check_name(key_env, "key_env=")
        return EnvChain((key_env,))
    if conv is None:
        return None
    if conv.env_key_needs_env_base and not base_from_env:
        return EnvChain((), required=False)
    return EnvChain(conv.key_env, required=conv.key_required)


def _check_key_arg(key: object) -> KeySpec:
    if isinstance(key, str):
        raise _refuse(
            "key= takes a key source object or a callable, not a string; pass the key itself "
            "as api_key=..., the name of its environment variable as key_env=..., or a "
            "one-line source as key=credentials.parse_source('dotenv:PATH#NAME')",
            key,
        )
    if isinstance(key, credentials.EnvKey):
        _check_name(key.name, "the EnvKey variable")
        return key
    if isinstance(key, credentials.DotenvKey):
        _check_name(key.name, "the DotenvKey name")
        _check_name(key.path, "the DotenvKey path", path=True)
        return key
    if isinstance(key, credentials.AuthFileKey):
        _check_name(key.path, "the AuthFileKey path", path=True)
        for p in key.key_paths:
            _check_name(p, "an AuthFileKey key path")
        return key
    if isinstance(key, RouteKeySource):
        if key.env:
            _check_name(key.env, "the KeySource variable")
        if key.auth_file:
            _check_name(key.auth_file, "the KeySource auth file", path=True)
        for p in key.key_paths:
            _check_name(p, "a KeySource key path")
        return key
    if isinstance(key, GivenKey | EnvChain):
        return key
    if callable(key):
        return cast(Callable[[], str], key)
    raise ConfigError(
        f"key= takes a credentials source, a routes.KeySource or a callable, not "
        f"{type(key).__name__}"
    )


# --------------------------------------------------------------------------------------------
# The handle
# --------------------------------------------------------------------------------------------


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
        return _read_source(self.key, self.route)

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


@dataclass(frozen=True)
class _Common:
    """The options every constructor takes, passed through unchanged."""

    effort: str | None
    store: bool | None
    extra_body: Mapping[str, JSON] | None
    max_tokens: int | None
    http_client: HttpClient | None
    retries: RetryPolicy | int | None
    timeout: float | None


def _build(
    route: Route,
    conv: Convention | None,
    model: str,
    opts: _Common,
    *,
    base_url: str | None,
    api_version: str | None,
    api_key: str | None,
    key: object,
    key_env: str | None,
) -> Model:
    if not model:
        raise ConfigError("a model id is required")
    base_from_env = False
    if conv is not None:
        url, base_from_env = _base_url(conv, base_url, api_version, route)
        route = route.with_base_url(url)
    elif api_version is not None:
        raise ConfigError(f"api_version= does not apply to route {route.name!r}")
    elif base_url is not None:
        route = route.with_base_url(base_url)
    spec = _key_spec(conv, api_key, key, key_env, base_from_env)
    retries = opts.retries
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
        effort=opts.effort,
        store=opts.store,
        max_tokens=opts.max_tokens,
        extra_body=dict(opts.extra_body or {}),
        key=spec,
        http_client=opts.http_client,
        retries=policy,
        timeout=opts.timeout,
    )


def from_route(
    route: str | Route,
    model: str,
    *,
    effort: str | None = None,
    store: bool | None = None,
    base_url: str | None = None,
    api_version: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
    routes_file: str | Path | None = None,
) -> Model:
    """A model on a named route (built-in or from ``routes_file``) or on a :class:`Route`.

    A built-in route with an SDK convention (:data:`ROUTE_CONVENTIONS`: ``openai-responses``,
    ``openai-chat``, ``openrouter``, ``anthropic``, ``gemini-native``) reads ``base_url``, the
    base URL variable and the key variables as that SDK does; any other route takes
    ``base_url`` as its full base URL and its key from the route record."""
    r = route if isinstance(route, Route) else get_route(route, load_routes(routes_file))
    conv = ROUTE_CONVENTIONS.get(r.name) if BUILTIN_ROUTES.get(r.name) == r else None
    return _build(
        r,
        conv,
        model,
        _Common(effort, store, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=api_version,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )


def openai(
    model: str,
    *,
    store: bool = True,
    effort: str | None = "medium",
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """OpenAI Responses. ``store=True`` continues with ``previous_response_id``;
    ``store=False`` replays every output item with its encrypted reasoning.

    As the openai SDK: ``base_url`` includes ``/v1`` (default ``https://api.openai.com/v1``,
    else ``OPENAI_BASE_URL``); the key is ``api_key``, else ``OPENAI_API_KEY``."""
    return _build(
        get_route("openai-responses"),
        CONVENTIONS["openai"],
        model,
        _Common(effort, store, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=None,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )


def openrouter(
    model: str,
    *,
    effort: str | None = "none",
    api: str = "responses",
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """OpenRouter: its Responses endpoint by default (``store`` false, every raw output item
    replayed), or ``api="chat"`` for Chat Completions with ``reasoning_details`` back whole.

    As OpenRouter documents with the openai SDK: ``base_url`` includes ``/api/v1`` (default
    ``https://openrouter.ai/api/v1``, else ``OPENROUTER_BASE_URL``); the key is ``api_key``,
    else ``OPENROUTER_API_KEY``."""
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
    store = False if get_dialect(route.dialect).server_state is not None else None
    return _build(
        route,
        CONVENTIONS["openrouter"],
        model,
        _Common(effort, store, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=None,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )


def openai_compatible(
    *,
    model: str,
    base_url: str | None = None,
    profile: str | None = None,
    dialect: str = "chat",
    effort: str | None = None,
    store: bool | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
    name: str = "openai-compatible",
) -> Model:
    """Any OpenAI-compatible server: Chat Completions with a vendor ``profile`` (the chat
    dialect's profiles), or ``dialect="responses"``.

    ``base_url`` has the openai SDK's meaning (``http://host/v1``), else ``OPENAI_BASE_URL``.
    The key is ``api_key`` / ``key`` / ``key_env``; with none of them, ``OPENAI_API_KEY`` is
    sent only when the base URL came from ``OPENAI_BASE_URL`` too (the SDK's environment
    pair), and no key at all when none is set."""
    wire = get_dialect(dialect)  # unknown dialect -> UnknownDialect now
    wire.profile(profile)  # unknown profile -> ConfigError now, not at the first call
    route = Route(name=name, dialect=wire.name, base_url="", profile=profile, local=True)
    built = _build(
        route,
        CONVENTIONS["openai_compatible"],
        model,
        _Common(effort, store, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=None,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )
    keyed = not isinstance(built.key, EnvChain) or bool(built.key.names)
    return replace(built, route=replace(built.route, local=not keyed))


def anthropic(
    model: str,
    *,
    effort: str | None = None,
    base_url: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """Anthropic Messages. ``effort=None`` asks for adaptive thinking; ``"none"`` for none.

    As the anthropic SDK: ``base_url`` has no ``/v1`` (default ``https://api.anthropic.com``,
    else ``ANTHROPIC_BASE_URL``; requests go to ``{base_url}/v1/messages``); the key is
    ``api_key``, else ``ANTHROPIC_API_KEY``."""
    level = "adaptive" if effort is None else effort
    return _build(
        get_route("anthropic"),
        CONVENTIONS["anthropic"],
        model,
        _Common(level, None, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=None,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )


def gemini(
    model: str,
    *,
    effort: str | None = None,
    base_url: str | None = None,
    api_version: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """Gemini ``generateContent``; ``effort`` becomes ``thinkingLevel`` (None: model default).

    As google-genai: ``base_url`` is the SDK's (default
    ``https://generativelanguage.googleapis.com``, else ``GOOGLE_GEMINI_BASE_URL``) and
    ``api_version`` is appended (else ``GOOGLE_GENAI_API_VERSION``, else ``v1beta``); the key
    is ``api_key``, else ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``."""
    return _build(
        get_route("gemini-native"),
        CONVENTIONS["gemini"],
        model,
        _Common(effort, None, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=api_version,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )


def gemini_interactions(
    model: str,
    *,
    store: bool = True,
    effort: str | None = None,
    base_url: str | None = None,
    api_version: str | None = None,
    extra_body: Mapping[str, JSON] | None = None,
    max_tokens: int | None = None,
    api_key: str | None = None,
    key: KeyLike = None,
    key_env: str | None = None,
    http_client: HttpClient | None = None,
    retries: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Model:
    """The Gemini Interactions API (``POST {base}/interactions``). ``store=True`` (the API's
    default) continues with ``previous_interaction_id``; ``store=False`` resends every step
    with its thought signature. ``effort`` becomes ``thinking_level`` (None: model default).

    The base URL, API version and key follow google-genai, as for :func:`gemini`."""
    return _build(
        get_route("gemini-interactions"),
        CONVENTIONS["gemini_interactions"],
        model,
        _Common(effort, store, extra_body, max_tokens, http_client, retries, timeout),
        base_url=base_url,
        api_version=api_version,
        api_key=api_key,
        key=key,
        key_env=key_env,
    )


__all__ = [
    "ANTHROPIC",
    "COMPATIBLE",
    "CONVENTIONS",
    "DOTENV_FALLBACK",
    "GEMINI",
    "OPENAI",
    "OPENROUTER",
    "ROUTE_CONVENTIONS",
    "Convention",
    "EnvChain",
    "GivenKey",
    "KeyLike",
    "KeySpec",
    "Model",
    "anthropic",
    "describe",
    "from_route",
    "gemini",
    "gemini_interactions",
    "openai",
    "openai_compatible",
    "openrouter",
]
