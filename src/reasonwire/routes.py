"""Routes as data: where a provider lives, which dialect it speaks, how it authenticates.

A route is everything reasonwire needs to call a provider without an ``if`` on its name: the
wire dialect, the chat field profile, the base URL, the credential source, the auth header
shape, the catalog path and the lane rule (which response ids mean which upstream lane on a
routing gateway). Users add routes in a TOML file (``[routes.NAME]`` tables with the same
keys; the key source as ``key_env = "NAME"``, ``auth_file`` with ``key_paths``, or ``key`` in
the one-line form ``dotenv:PATH#NAME``) or on the command line with ``--route custom``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from reasonwire import credentials
from reasonwire.credentials import AuthFileKey, EnvKey, KeySource
from reasonwire.errors import ConfigError, CredentialError
from reasonwire.wire.model import DIALECTS, DialectName


@dataclass(frozen=True)
class LaneRule:
    """Response id prefix -> lane name; an id matching none is the ``default`` lane."""

    prefixes: Mapping[str, str] = field(default_factory=dict)
    default: str = "direct"

    def lane(self, response_id: str | None) -> str:
        for prefix, name in self.prefixes.items():
            if response_id and response_id.startswith(prefix):
                return name
        return self.default


@dataclass(frozen=True)
class Route:
    """One provider endpoint as data: everything a caller needs to send to it without an ``if``
    on its name. The eval runner, the agent's model handles and the gateway's registrations
    (:attr:`reasonwire.govern.registry.RouteRegistration.upstream`) all send through one, so
    reading its key (:meth:`read_key`) and putting it in a header (:meth:`auth_headers`) are
    written once."""

    name: str
    dialect: DialectName
    base_url: str
    key: KeySource | None = None
    """Where the route's key lives (read at call time); None: the route needs none."""
    profile: str | None = None
    auth_header: str = "authorization"
    auth_scheme: str = "Bearer"
    headers: Mapping[str, str] = field(default_factory=dict)
    catalog_path: str | None = "/models"
    lanes: LaneRule = LaneRule()
    local: bool = False
    slots: int | None = None
    """Requests the server runs at once (its slots); None: ask a loopback server (llama.cpp's
    ``/props`` ``total_slots``), else the run's ``--workers``. More requests in flight than
    slots only queue, and on llama-server they can stall (see ``reasonwire.eval._executor``)."""
    price: tuple[float, float] | None = None
    """USD per (prompt, completion) token, when the route declares it (TOML ``price``)."""
    free: bool = False
    """The route costs nothing (TOML ``free = true``); loopback and ``local`` routes always."""

    @property
    def loopback(self) -> bool:
        """The base URL is this machine (or the route is ``local``): nothing is paid."""
        host = urlsplit(self.base_url).hostname or ""
        return self.local or host in _LOOPBACK_HOSTS or host.startswith("127.")

    def read_key(self, *, dotenv: str | None) -> str | None:
        """The route's key, read now (None when the route needs none); a variable that is not
        set is looked up under the same name in ``dotenv`` (None: the environment only)."""
        return None if self.key is None else credentials.read_key(self.key, dotenv=dotenv)

    def auth_headers(self, key: str | None) -> dict[str, str]:
        """The route's headers, with ``key`` as ``auth_header: auth_scheme key`` (the one
        place this rule is written; the header is never logged, see credentials.redact)."""
        out = dict(self.headers)
        if key:
            out[self.auth_header] = f"{self.auth_scheme} {key}" if self.auth_scheme else key
        return out

    def with_base_url(self, base_url: str) -> Route:
        return replace(self, base_url=base_url.rstrip("/"))


def _chat(name: str, base: str, env: str, profile: str | None = None) -> Route:
    return Route(name=name, dialect="chat", base_url=base, key=EnvKey(env), profile=profile)


def _responses(name: str, base: str, env: str) -> Route:
    return Route(name=name, dialect="responses", base_url=base, key=EnvKey(env))


_GEMINI_API = "https://generativelanguage.googleapis.com/v1beta"


def _google(name: str, dialect: DialectName) -> Route:
    """A Gemini API route: the key in ``x-goog-api-key``, as google-genai sends it."""
    return Route(
        name=name,
        dialect=dialect,
        base_url=_GEMINI_API,
        key=EnvKey("GEMINI_API_KEY"),
        auth_header="x-goog-api-key",
        auth_scheme="",
    )


_HERMES_AUTH = credentials.DEFAULT_AUTH_FILE

BUILTIN_ROUTES: dict[str, Route] = {
    r.name: r
    for r in (
        Route(
            name="nous",
            dialect="chat",
            base_url="https://inference-api.nousresearch.com/v1",
            key=AuthFileKey(
                _HERMES_AUTH, ("providers.nous.agent_key", "providers.nous.access_token")
            ),
            profile="openrouter",
            lanes=LaneRule(prefixes={"gen-": "openrouter"}, default="direct"),
        ),
        _chat("openai-chat", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        _responses("openai-responses", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        _chat("xai-chat", "https://api.x.ai/v1", "XAI_API_KEY"),
        _responses("xai-responses", "https://api.x.ai/v1", "XAI_API_KEY"),
        _google("gemini-native", "gemini"),
        _google("gemini-interactions", "interactions"),
        _chat("gemini-openai", _GEMINI_API + "/openai", "GEMINI_API_KEY", "gemini-openai"),
        _chat("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openrouter"),
        _chat("huggingface", "https://router.huggingface.co/v1", "HF_TOKEN"),
        _chat("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY", "deepseek"),
        _chat("moonshot", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", "kimi"),
        _chat("zai", "https://api.z.ai/api/paas/v4", "ZAI_API_KEY", "zai"),
        _chat(
            "dashscope",
            "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_API_KEY",
            "qwen",
        ),
        _chat("minimax", "https://api.minimax.io/v1", "MINIMAX_API_KEY", "minimax"),
        _chat("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
        _chat("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        _chat("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        _chat("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        Route(
            name="anthropic",
            dialect="anthropic",
            base_url="https://api.anthropic.com/v1",
            key=EnvKey("ANTHROPIC_API_KEY"),
            auth_header="x-api-key",
            auth_scheme="",
            headers={"anthropic-version": "2023-06-01"},
        ),
        Route(name="local", dialect="chat", base_url="http://127.0.0.1:8080/v1", local=True),
        # Started by reasonwire itself; base_url is filled in at run time.
        Route(name="sim", dialect="chat", base_url="", local=True),
        Route(name="local-llama", dialect="chat", base_url="", profile="llamacpp", local=True),
    )
}

_LOOPBACK_HOSTS = frozenset({"localhost", "::1", "0.0.0.0"})

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def load_routes(path: str | Path | None = None) -> dict[str, Route]:
    """Built-in routes plus those in a TOML file (``[routes.NAME]`` tables)."""
    routes = dict(BUILTIN_ROUTES)
    if path is None:
        return routes
    p = Path(path).expanduser()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read routes file {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"routes file {p} is not valid TOML: {exc}") from None
    for name, table in (data.get("routes") or {}).items():
        routes[name] = route_from_table(name, table)
    return routes


_TABLE_KEYS = frozenset(
    {
        "kind", "dialect", "base_url", "key_env", "auth_file", "key", "key_paths", "profile",
        "auth_header", "auth_scheme", "headers", "catalog_path", "lanes", "lane_default",
        "slots", "price", "free",
    }
)  # fmt: skip
"""The keys of a ``[routes.NAME]`` table (and of the CLI's ``--route custom`` options)."""


@dataclass(frozen=True)
class _Table:
    """A route's TOML table (or CLI options) read key by key, each value checked for its type
    (a TOML file is the user's: a wrong type is a :class:`ConfigError` naming the key)."""

    name: str
    values: Mapping[str, object]

    def _bad(self, key: str, what: str) -> ConfigError:
        return ConfigError(f"route {self.name}: {key} must be {what}")

    def text(self, key: str, default: str) -> str:
        value = self.values.get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.values.get(key)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.values.get(key, ())
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "a list of strings")
        return tuple(str(v) for v in value)

    def text_map(self, key: str) -> dict[str, str]:
        value = self.values.get(key, {})
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise self._bad(key, "a table of strings")
        return {str(k): str(v) for k, v in value.items()}


def route_from_table(name: str, table: Mapping[str, object]) -> Route:
    """Build a route from a TOML table or CLI options, refusing unknown keys."""
    if not _NAME.match(name):
        raise ConfigError(f"route name {name!r}: use lowercase letters, digits, . _ -")
    unknown = set(table) - _TABLE_KEYS
    if unknown:
        raise ConfigError(f"route {name}: unknown keys {sorted(unknown)}")
    t = _Table(name, table)
    dialect = t.optional_text("dialect") or t.optional_text("kind")
    if dialect not in DIALECTS:
        raise ConfigError(f"route {name}: kind must be one of {', '.join(DIALECTS)}")
    base = t.optional_text("base_url")
    if base is None or not base.startswith(("http://", "https://")):
        raise ConfigError(f"route {name}: base_url must be an http(s) URL")
    slots = table.get("slots")
    if slots is not None and (not isinstance(slots, int) or isinstance(slots, bool) or slots < 1):
        raise ConfigError(f"route {name}: slots must be a positive integer")
    free = table.get("free", False)
    if not isinstance(free, bool):
        raise ConfigError(f"route {name}: free must be true or false")
    price = _price(name, table.get("price"))
    if free and price is not None:
        raise ConfigError(f"route {name}: free = true and a price: choose one")
    return Route(
        name=name,
        dialect=dialect,
        base_url=base.rstrip("/"),
        slots=slots,
        price=price,
        free=free,
        key=_key_source(t),
        profile=t.optional_text("profile"),
        auth_header=t.text("auth_header", "authorization"),
        auth_scheme=t.text("auth_scheme", "Bearer"),
        headers=t.text_map("headers"),
        catalog_path=t.text("catalog_path", "/models"),
        lanes=LaneRule(t.text_map("lanes"), t.text("lane_default", "direct")),
    )


def _key_source(t: _Table) -> KeySource | None:
    """``key_env = "NAME"``, ``auth_file`` with ``key_paths``, or ``key`` in the one-line form
    of :func:`reasonwire.credentials.parse_source` (``dotenv:PATH#NAME``...); one of them."""
    env, auth, line = (
        t.optional_text("key_env"),
        t.optional_text("auth_file"),
        t.optional_text("key"),
    )
    given = [k for k, v in (("key_env", env), ("auth_file", auth), ("key", line)) if v is not None]
    if len(given) > 1:
        raise ConfigError(f"route {t.name}: one key source, not {' and '.join(given)}")
    if env is not None:
        return EnvKey(env)
    if auth is not None:
        return AuthFileKey(auth, t.texts("key_paths"))
    if line is not None:
        try:
            return credentials.parse_source(line)
        except CredentialError as exc:
            raise ConfigError(f"route {t.name}: {exc}") from None
    return None


def _price(name: str, value: object) -> tuple[float, float] | None:
    """TOML ``price = {prompt = 3.0, completion = 15.0}``: USD per 1M tokens, stored per token."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"prompt", "completion"}:
        raise ConfigError(
            f"route {name}: price must be {{prompt = USD, completion = USD}} per 1M tokens"
        )
    try:
        prompt, completion = float(value["prompt"]), float(value["completion"])
    except (TypeError, ValueError):
        raise ConfigError(f"route {name}: price values must be numbers (USD per 1M)") from None
    if prompt < 0 or completion < 0:
        raise ConfigError(f"route {name}: price values must not be negative")
    return prompt / 1e6, completion / 1e6


def get_route(name: str, routes: Mapping[str, Route] | None = None) -> Route:
    table = routes if routes is not None else BUILTIN_ROUTES
    try:
        return table[name]
    except KeyError:
        raise ConfigError(f"unknown route {name!r}; known: {', '.join(sorted(table))}") from None
