"""Continuity: an agent tool loop that never loses reasoning state.

Pick a model (``openai``, ``openrouter``, ``openai_compatible``, ``anthropic``, ``gemini``,
``gemini_interactions`` or ``from_route``), give an :class:`Agent` some tools, call ``run``.
Response ids, thinking blocks,
thought signatures and reasoning items stay on the wire, in a per-turn :class:`Session`; the
application sees the answer and a provider-neutral transcript.

    from reasonwire import agent

    @agent.tool
    def get_weather(city: str) -> str:
        "Current weather for a city."
        return "sunny"

    bot = agent.Agent(agent.anthropic("claude-sonnet-4-5"), [get_weather])
    print(bot.run("Weather in Paris?").answer)

    for event in bot.stream("And in Rome?"):    # or: async for event in bot.astream(...)
        if isinstance(event, agent.TextEvent):
            print(event.text, end="")

Keys and base URLs follow each official SDK (``api_key=`` is the key; ``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``... when nothing is passed): see :mod:`reasonwire.agent.constructors`.
"""

from __future__ import annotations

from reasonwire.agent.constructors import (
    ModelOptions,
    anthropic,
    from_route,
    gemini,
    gemini_interactions,
    openai,
    openai_compatible,
    openrouter,
)
from reasonwire.agent.conventions import CONVENTIONS, Convention
from reasonwire.agent.events import (
    AgentEvent,
    ReasoningEvent,
    RequestUsage,
    ResultEvent,
    RunResult,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from reasonwire.agent.loop import Agent
from reasonwire.agent.models import DOTENV_FALLBACK, KeyLike, Model
from reasonwire.agent.policy import CrossTurnPolicy
from reasonwire.agent.session import Prepared, Session
from reasonwire.agent.strategy import Strategy, strategy_for
from reasonwire.agent.tools import Tool, spec_from_callable, tool
from reasonwire.errors import StreamFailed, ToolLoopLimit

__all__ = [
    "CONVENTIONS",
    "DOTENV_FALLBACK",
    "Agent",
    "AgentEvent",
    "Convention",
    "CrossTurnPolicy",
    "KeyLike",
    "Model",
    "ModelOptions",
    "Prepared",
    "ReasoningEvent",
    "RequestUsage",
    "ResultEvent",
    "RunResult",
    "Session",
    "Strategy",
    "StreamFailed",
    "TextEvent",
    "Tool",
    "ToolCallEvent",
    "ToolLoopLimit",
    "ToolResultEvent",
    "anthropic",
    "from_route",
    "gemini",
    "gemini_interactions",
    "openai",
    "openai_compatible",
    "openrouter",
    "spec_from_callable",
    "strategy_for",
    "tool",
]
