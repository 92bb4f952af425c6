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
from dataclasses import dataclass
from types import MappingProxyType

from reasonwire.errors import ConfigError
from reasonwire.wire.model import JSON

CARRIER_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")
"""Carrier fields that sit on the assistant message itself, in replay order."""

TOOL_CALL_CARRIER = "extra_content"
"""The carrier field that rides on each tool call (Gemini's ``google.thought_signature``)."""

ALL_CARRIER_FIELDS: tuple[str, ...] = (*CARRIER_FIELDS, TOOL_CALL_CARRIER)

LEVEL = "<level>"
"""Placeholder in :attr:`ChatProfile.effort_value`: replaced by the effort level as written."""


@dataclass(frozen=True, slots=True)
class ChatProfile:
    """How one family of Chat Completions routes treats reasoning.

    ``returns``: the carrier fields sent back on an assistant message (and so the ones the
    route reads); ``None`` means every carrier field that was received. ``effort_path`` is the
    key path in the request body that expresses effort and ``effort_value`` the value put there
    (:data:`LEVEL` stands for the level itself; a dict is deep-merged with what is there).
    ``max_tokens_field`` names the output-length field the route understands.
    """

    name: str
    returns: tuple[str, ...] | None
    effort_path: tuple[str, ...]
    effort_value: JSON = LEVEL
    max_tokens_field: str = "max_tokens"
    note: str = ""
    required_on_tool_calls: tuple[str, ...] = ()
    """Carrier fields the route requires on every assistant message with tool calls; a
    message built without one (neutral history) sends it as ``""``."""

    def returns_field(self, name: str) -> bool:
        """True when a replay to this route carries the field ``name``."""
        return self.returns is None or name in self.returns

    def effort_fragment(self, level: str) -> dict[str, JSON]:
        """The body fragment that asks this route for ``level`` of effort."""
        value: JSON = _fill(self.effort_value, level)
        for key in reversed(self.effort_path):
            value = {key: value}
        assert isinstance(value, dict)
        return value


def _fill(template: JSON, level: str) -> JSON:
    if template == LEVEL:
        return level
    if isinstance(template, dict):
        return {k: _fill(v, level) for k, v in template.items()}
    return template


CHAT_PROFILES: Mapping[str, ChatProfile] = MappingProxyType(
    {
        p.name: p
        for p in (
            ChatProfile(
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
            ),
            ChatProfile(
                "vllm",
                ("reasoning", "reasoning_content"),
                ("chat_template_kwargs", "enable_thinking"),
                True,
                note="vLLM/SGLang: reasoning (and reasoning_content) reach the template.",
            ),
            ChatProfile(
                "gemini-openai",
                (TOOL_CALL_CARRIER,),
                ("reasoning_effort",),
                note="Gemini's OpenAI-compatible endpoint: thought_signature on tool calls.",
            ),
        )
    }
)
"""Every known chat profile by name."""


def get_profile(name: str | None) -> ChatProfile:
    """The profile called ``name`` (``None`` is ``default``); unknown -> ConfigError."""
    key = "default" if name is None else name
    try:
        return CHAT_PROFILES[key]
    except KeyError:
        raise ConfigError(
            f"unknown chat profile {key!r}; expected one of: {', '.join(sorted(CHAT_PROFILES))}"
        ) from None
