"""The SDK conventions the model constructors follow, as data: one :class:`Convention` per
constructor (:data:`CONVENTIONS`) and per built-in route read like an SDK
(:data:`ROUTE_CONVENTIONS`).

Each entry says how an official SDK finds its key (its variables, in order) and reads its base
URL (its variable, its built-in URL, what it puts before the endpoint path), so that
``agent.anthropic("m")`` behaves like ``anthropic.Anthropic()`` in the same environment. The
constructors (:mod:`reasonwire.agent.constructors`) read this table; no ``if`` on an SDK name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


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
"""Built-in routes that :func:`~reasonwire.agent.constructors.from_route` reads with an SDK's
convention (a route from a routes file or a :class:`~reasonwire.routes.Route` object keeps its
own base URL meaning and key source)."""
