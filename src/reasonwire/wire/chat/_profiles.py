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
from reasonwire.wire.profile import LEVEL, Profile

DEEPSEEK_DOC = "https://api-docs.deepseek.com/guides/thinking_mode"
ZAI_DOC = "https://docs.z.ai/guides/capabilities/thinking-mode"
KIMI_DOC = "https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model"
MINIMAX_DOC = "https://platform.minimaxi.com/docs/api-reference/text-openai-api"
VLLM_DOC = "https://docs.vllm.ai/en/v0.26.0/features/reasoning_outputs/"
QWEN_DOC = "https://www.alibabacloud.com/help/en/model-studio/deep-thinking"

_DEEPSEEK_V4_LEVELS = MappingProxyType(
    {
        "minimal": "low",
        "low": "low",
        "medium": "high",
        "high": "high",
        "xhigh": "high",
        "max": "max",
        "ultra": "max",
    }
)
"""DeepSeek's documented table "requested effort -> actual mapped effort" (thinking mode)."""

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
                "deepseek-v4",
                ("reasoning_content",),
                (),
                {"thinking": {"type": "enabled"}, "reasoning_effort": LEVEL},
                note=(
                    "DeepSeek V4: thinking {type: enabled|disabled} and reasoning_effort "
                    "low|high|max (minimal->low, medium->high server side); reasoning_content "
                    "of every tool-call turn must come back, across user turns too."
                ),
                required_on_tool_calls=("reasoning_content",),
                keeps_across_turns=True,
                effort_levels=_DEEPSEEK_V4_LEVELS,
                source=DEEPSEEK_DOC,
            ),
            ChatProfile(
                "zai",
                ("reasoning_content",),
                ("thinking",),
                {"type": "enabled", "clear_thinking": False},
                note="Z.ai GLM preserved thinking: clear_thinking false keeps earlier turns.",
                keeps_across_turns=True,
                source=(
                    f"{ZAI_DOC} (preserved thinking); recording "
                    "pai__test_zai__test_zai_preserved_thinking_round_trip.yaml"
                ),
            ),
            ChatProfile(
                "glm-5",
                ("reasoning_content",),
                (),
                {
                    "thinking": {"type": "enabled", "clear_thinking": False},
                    "reasoning_effort": LEVEL,
                },
                note=(
                    "Z.ai GLM-5.x: reasoning_effort up to max beside preserved thinking "
                    "(clear_thinking false): the complete, unmodified reasoning comes back."
                ),
                keeps_across_turns=True,
                source=(
                    f"{ZAI_DOC}; recording pai__test_zai__test_zai_glm_5_3_reasoning_effort.yaml"
                ),
            ),
            ChatProfile(
                "kimi",
                ("reasoning_content",),
                (),
                None,  # kimi-k2-thinking always thinks; K2.5 thinks by default
                note=(
                    "Moonshot Kimi K2 thinking: refuses an assistant tool-call turn without "
                    "reasoning_content (400); never padded with an empty string."
                ),
                required_on_tool_calls=("reasoning_content",),
                keeps_across_turns=True,
                source=f"{KIMI_DOC}#frequently-asked-questions",
            ),
            ChatProfile(
                "minimax",
                ("reasoning_details",),
                (),
                None,  # MiniMax drops reasoning_effort; M2.x always thinks
                note=(
                    "MiniMax M-series: reasoning_split true puts thinking in "
                    "reasoning_details (sent back whole); without it <think> is inline."
                ),
                request_defaults=MappingProxyType({"reasoning_split": True}),
                think_tags=True,
                source=MINIMAX_DOC,
            ),
            ChatProfile(
                "qwen",
                ("reasoning_content",),
                ("enable_thinking",),
                True,
                note="Qwen3 on DashScope compatible mode: reasoning_content, enable_thinking.",
                source=f"{QWEN_DOC}; recording vercel__alibaba__alibaba-reasoning.json",
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
                ("reasoning",),
                ("chat_template_kwargs", "enable_thinking"),
                True,
                note=(
                    "vLLM: returns and reads `reasoning` (reasoning_content was renamed in "
                    "early 2026); a route on an older server overrides `returns`."
                ),
                think_tags=True,
                source=VLLM_DOC,
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
