"""The model constructors: a route record plus the official SDK's conventions.

:func:`openai`, :func:`openrouter`, :func:`openai_compatible`, :func:`anthropic`,
:func:`gemini`, :func:`gemini_interactions` and :func:`from_route` each pick a route record and
follow the official SDK's conventions, which are data (:mod:`reasonwire.agent.conventions`),
never an ``if``. Besides their own arguments they all take the same keywords,
:class:`ModelOptions`, declared once:

- **Keys like the SDKs.** ``api_key="..."`` is the key itself. Without it the key is read at
  call time from, in order of precedence, ``key=`` (a :data:`reasonwire.credentials.KeySource`
  or a callable returning the key), ``key_env="NAME"`` (an environment variable), or the SDK's
  own variable(s) (``OPENAI_API_KEY``; ``ANTHROPIC_API_KEY``; ``GOOGLE_API_KEY`` then
  ``GEMINI_API_KEY``, as google-genai prefers ``GOOGLE_API_KEY``; ``OPENROUTER_API_KEY``).
  An environment variable that is not set is then looked up under the same name in
  :data:`~reasonwire.agent.models.DOTENV_FALLBACK` (``credentials.DEFAULT_DOTENV``,
  ``~/.hermes/.env`` unless ``REASONWIRE_DOTENV`` says otherwise).
  A plain string passed to ``key=`` is refused: it could be a key or a variable name.
- **Base URLs like the SDKs.** ``base_url`` has the official SDK's meaning: OpenAI's includes
  ``/v1`` (``http://host/v1``); Anthropic's has none (``http://host``; ``/v1`` is appended, as
  the SDK posts to ``/v1/messages``); Gemini's is the SDK's base URL and ``api_version``
  (default ``v1beta``) is appended. When no ``base_url`` is passed the SDK's environment
  variable is honoured (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``,
  ``GOOGLE_GEMINI_BASE_URL``); precedence: argument > environment > built-in.

A string refused as a key source is described by kind and length only
(:func:`reasonwire.credentials.describe`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TypedDict, Unpack, cast

from reasonwire import credentials
from reasonwire.agent.conventions import CONVENTIONS, ROUTE_CONVENTIONS, Convention
from reasonwire.agent.models import EnvChain, GivenKey, HttpClient, KeyLike, KeySpec, Model
from reasonwire.errors import ConfigError
from reasonwire.http import DEFAULT_RETRY, RetryPolicy
from reasonwire.routes import BUILTIN_ROUTES, Route, get_route, load_routes
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import get_dialect


class ModelOptions(TypedDict, total=False):
    """The keywords every constructor takes, with the same meaning everywhere (each one
    optional; what is not given takes the convention's or the route's default)."""

    base_url: str | None
    """The base URL, with the SDK's meaning (see the module docstring)."""
    extra_body: Mapping[str, JSON] | None
    """Fields merged into every request body."""
    max_tokens: int | None
    api_key: str | None
    """The key itself (registered for redaction, never shown)."""
    key: KeyLike
    """Where the key lives: a credentials source or a callable (never a string)."""
    key_env: str | None
    """The environment variable that holds the key."""
    http_client: HttpClient | None
    """The caller's httpx client (sync or async)."""
    retries: RetryPolicy | int | None
    """A retry policy, or a number of retries."""
    timeout: float | None


# --------------------------------------------------------------------------------------------
# Reading the conventions
# --------------------------------------------------------------------------------------------


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


def _key_spec(conv: Convention | None, options: ModelOptions, base_from_env: bool) -> KeySpec:
    api_key, key, key_env = options.get("api_key"), options.get("key"), options.get("key_env")
    pairs = (("api_key=", api_key), ("key=", key), ("key_env=", key_env))
    given = [n for n, v in pairs if v is not None]
    if len(given) > 1:
        raise ConfigError(f"pass one key source, not {' and '.join(given)}")
    if api_key is not None:
        return GivenKey(api_key)
    if key is not None:
        return _check_key_arg(key)
    if key_env is not None:
        return EnvChain((credentials.check_env_name(key_env, "key_env="),))
    if conv is None:
        return None
    if conv.env_key_needs_env_base and not base_from_env:
        return EnvChain((), required=False)
    return EnvChain(conv.key_env, required=conv.key_required)


def _check_key_arg(key: object) -> KeySpec:
    """``key=`` as given: a source whose names are not keys, or a callable."""
    if isinstance(key, str):
        raise credentials.refusal(
            "key= takes a key source object or a callable, not a string; pass the key itself "
            "as api_key=..., the name of its environment variable as key_env=..., or a "
            "one-line source as key=credentials.parse_source('dotenv:PATH#NAME')",
            key,
        )
    if isinstance(key, credentials.EnvKey | credentials.DotenvKey | credentials.AuthFileKey):
        return credentials.check_source(key)
    if callable(key):
        return cast(Callable[[], str], key)  # what it returns is checked at every call
    raise ConfigError(f"key= takes a credentials source or a callable, not {type(key).__name__}")


# --------------------------------------------------------------------------------------------
# The constructors
# --------------------------------------------------------------------------------------------


def _build(
    route: Route,
    conv: Convention | None,
    model: str,
    options: ModelOptions,
    *,
    effort: str | None,
    store: bool | None,
    api_version: str | None = None,
) -> Model:
    """The one place a :class:`Model` is made from a constructor's arguments."""
    unknown = set(options) - ModelOptions.__optional_keys__
    if unknown:
        raise TypeError(f"unexpected keyword argument {', '.join(sorted(unknown))}")
    if not model:
        raise ConfigError("a model id is required")
    base_url = options.get("base_url")
    base_from_env = False
    if conv is not None:
        url, base_from_env = _base_url(conv, base_url, api_version, route)
        route = route.with_base_url(url)
    elif api_version is not None:
        raise ConfigError(f"api_version= does not apply to route {route.name!r}")
    elif base_url is not None:
        route = route.with_base_url(base_url)
    retries = options.get("retries")
    return Model(
        route=route,
        name=model,
        effort=effort,
        store=store,
        max_tokens=options.get("max_tokens"),
        extra_body=dict(options.get("extra_body") or {}),
        key=_key_spec(conv, options, base_from_env),
        http_client=options.get("http_client"),
        retries=(
            DEFAULT_RETRY
            if retries is None
            else RetryPolicy(retries=max(0, retries))
            if isinstance(retries, int)
            else retries
        ),
        timeout=options.get("timeout"),
    )


def from_route(
    route: str | Route,
    model: str,
    *,
    effort: str | None = None,
    store: bool | None = None,
    api_version: str | None = None,
    routes_file: str | Path | None = None,
    **options: Unpack[ModelOptions],
) -> Model:
    """A model on a named route (built-in or from ``routes_file``) or on a :class:`Route`.

    A built-in route with an SDK convention (:data:`ROUTE_CONVENTIONS`: ``openai-responses``,
    ``openai-chat``, ``openrouter``, ``anthropic``, ``gemini-native``) reads ``base_url``, the
    base URL variable and the key variables as that SDK does; any other route takes
    ``base_url`` as its full base URL and its key from the route record."""
    r = route if isinstance(route, Route) else get_route(route, load_routes(routes_file))
    conv = ROUTE_CONVENTIONS.get(r.name) if BUILTIN_ROUTES.get(r.name) == r else None
    return _build(r, conv, model, options, effort=effort, store=store, api_version=api_version)


def openai(
    model: str,
    *,
    store: bool = True,
    effort: str | None = "medium",
    **options: Unpack[ModelOptions],
) -> Model:
    """OpenAI Responses. ``store=True`` continues with ``previous_response_id``;
    ``store=False`` replays every output item with its encrypted reasoning.

    As the openai SDK: ``base_url`` includes ``/v1`` (default ``https://api.openai.com/v1``,
    else ``OPENAI_BASE_URL``); the key is ``api_key``, else ``OPENAI_API_KEY``."""
    route = get_route("openai-responses")
    return _build(route, CONVENTIONS["openai"], model, options, effort=effort, store=store)


def openrouter(
    model: str,
    *,
    effort: str | None = "none",
    api: str = "responses",
    **options: Unpack[ModelOptions],
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
    return _build(route, CONVENTIONS["openrouter"], model, options, effort=effort, store=store)


def openai_compatible(
    *,
    model: str,
    profile: str | None = None,
    dialect: str = "chat",
    effort: str | None = None,
    store: bool | None = None,
    name: str = "openai-compatible",
    **options: Unpack[ModelOptions],
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
    conv = CONVENTIONS["openai_compatible"]
    built = _build(route, conv, model, options, effort=effort, store=store)
    keyed = not isinstance(built.key, EnvChain) or bool(built.key.names)
    return replace(built, route=replace(built.route, local=not keyed))


def anthropic(model: str, *, effort: str | None = None, **options: Unpack[ModelOptions]) -> Model:
    """Anthropic Messages. ``effort=None`` asks for adaptive thinking; ``"none"`` for none.

    As the anthropic SDK: ``base_url`` has no ``/v1`` (default ``https://api.anthropic.com``,
    else ``ANTHROPIC_BASE_URL``; requests go to ``{base_url}/v1/messages``); the key is
    ``api_key``, else ``ANTHROPIC_API_KEY``."""
    level = "adaptive" if effort is None else effort
    route = get_route("anthropic")
    return _build(route, CONVENTIONS["anthropic"], model, options, effort=level, store=None)


def gemini(
    model: str,
    *,
    effort: str | None = None,
    api_version: str | None = None,
    **options: Unpack[ModelOptions],
) -> Model:
    """Gemini ``generateContent``; ``effort`` becomes ``thinkingLevel`` (None: model default).

    As google-genai: ``base_url`` is the SDK's (default
    ``https://generativelanguage.googleapis.com``, else ``GOOGLE_GEMINI_BASE_URL``) and
    ``api_version`` is appended (else ``GOOGLE_GENAI_API_VERSION``, else ``v1beta``); the key
    is ``api_key``, else ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``."""
    route, conv = get_route("gemini-native"), CONVENTIONS["gemini"]
    return _build(route, conv, model, options, effort=effort, store=None, api_version=api_version)


def gemini_interactions(
    model: str,
    *,
    store: bool = True,
    effort: str | None = None,
    api_version: str | None = None,
    **options: Unpack[ModelOptions],
) -> Model:
    """The Gemini Interactions API (``POST {base}/interactions``). ``store=True`` (the API's
    default) continues with ``previous_interaction_id``; ``store=False`` resends every step
    with its thought signature. ``effort`` becomes ``thinking_level`` (None: model default).

    The base URL, API version and key follow google-genai, as for :func:`gemini`."""
    route, conv = get_route("gemini-interactions"), CONVENTIONS["gemini_interactions"]
    return _build(route, conv, model, options, effort=effort, store=store, api_version=api_version)
