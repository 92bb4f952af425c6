"""Chat Completions field profiles: what one route reads back and how it takes effort.

OpenAI-compatible servers agree on ``messages`` but not on reasoning. One server reads
``reasoning_content`` from an assistant message, another ``reasoning``, a gateway wants
``reasoning_details`` back whole, Gemini's compatibility layer wants ``extra_content`` on the
tool call. Effort is ``reasoning_effort`` on one, ``reasoning: {effort}`` on another,
``thinking: {type: enabled}`` or a chat-template switch elsewhere. These differences are data:
a :class:`ChatProfile` per route family in :data:`CHAT_PROFILES`, never a branch on a name.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reasonwire.errors import ConfigError
from reasonwire.wire.chat._facts import TOOL_CALL_CARRIER
from reasonwire.wire.profile import Profile

ChatProfile = Profile
"""Chat profiles are plain :class:`~reasonwire.wire.profile.Profile` layers."""

CHAT_PROFILES: Mapping[str, ChatProfile] = MappingProxyType(
    {
        p.name: p
        for p in (
            Profile(
                "default",
                None,
                ("reasoning_effort",),
                note="OpenAI-style: returns every carrier field received.",
            ),
            ChatProfile(
                "openrouter",
                ("reasoning", "reasoning_details"),
                ("reasoning", "effort"),
                note="OpenRouter and OpenRouter-style gateways: reasoning_details back whole.",
            ),
            ChatProfile(
                "deepseek",
                ("reasoning_content",),
                ("thinking", "type"),
                "enabled",
                note="DeepSeek thinking mode: reasoning_content is required after tool calls.",
                required_on_tool_calls=("reasoning_content",),
                keeps_across_turns=True,
            ),
            ChatProfile(
                "zai",
                ("reasoning_content",),
                ("thinking",),
                {"type": "enabled", "clear_thinking": False},
                note="Z.ai GLM preserved thinking: clear_thinking false keeps earlier turns.",
            ),
            ChatProfile(
                "cerebras",
                ("reasoning",),
                ("reasoning_effort",),
                note="Cerebras (gpt-oss): the plain `reasoning` string.",
            ),
            ChatProfile(
                "snowflake",
                ("reasoning_details",),
                ("reasoning", "effort"),
                note="Snowflake Cortex: OpenRouter-style reasoning_details, signed.",
            ),
            ChatProfile(
                "llamacpp",
                ("reasoning_content",),
                ("reasoning_effort",),
                note="llama-server --jinja reads reasoning_content only; null answers 500.",
                think_tags=True,
            ),
            ChatProfile(
                "vllm",
                ("reasoning", "reasoning_content"),
                ("chat_template_kwargs", "enable_thinking"),
                True,
                note="vLLM/SGLang: reasoning (and reasoning_content) reach the template.",
                think_tags=True,
            ),
            ChatProfile(
                "gemini-openai",
                (TOOL_CALL_CARRIER,),
                ("reasoning_effort",),
                note="Gemini's OpenAI-compatible endpoint: thought_signature on tool calls.",
            ),
            ChatProfile(
                "ollama",
                ("reasoning_content",),
                ("think",),
                True,
                note="Ollama's OpenAI-compatible endpoint: open models, <think> inline.",
                think_tags=True,
            ),
        )
    }
)
"""Every known chat vendor layer by name (``default`` is the dialect's base layer)."""

_LAYERED: Mapping[str, Profile] = MappingProxyType(
    {n: CHAT_PROFILES["default"].layer(p) for n, p in CHAT_PROFILES.items()}
)
"""Each vendor layered on the default, merged once."""


def get_profile(name: str | None) -> ChatProfile:
    """The profile called ``name`` (``None`` is ``default``); unknown -> ConfigError."""
    key = "default" if name is None else name
    try:
        return _LAYERED[key]
    except KeyError:
        raise ConfigError(
            f"unknown chat profile {key!r}; expected one of: {', '.join(sorted(CHAT_PROFILES))}"
        ) from None
