# mypy: ignore-errors
"""Scenario: pydantic-ai (``Agent.run_sync``, the second turn with ``message_history``), each
dialect through the model class and provider its docs name for it: DeepSeek-style chat with
``OpenAIChatModel`` + ``DeepSeekProvider``, ``OpenAIResponsesModel``, ``AnthropicModel`` with
``anthropic_thinking``, ``GoogleModel`` with ``google_thinking_config``. Each model gets its
provider's profile for the real model of the dialect (``REAL_MODEL``): pydantic-ai decides
reasoning support by model name, and ``sim-*`` names would read as non-reasoning models."""

from __future__ import annotations

from _common import (
    BASE_URL,
    KEY,
    MODEL,
    REAL_MODEL,
    ROOT_URL,
    STORE,
    THINKING_BUDGET,
    TOOLS,
    by_dialect,
    run,
)
from pydantic_ai import Agent


def _conversation(model, settings):
    agent = Agent(model, tools=list(TOOLS.values()), model_settings=settings)
    history = []

    def say(text: str) -> str:
        nonlocal history
        result = agent.run_sync(text, message_history=history)
        history = result.all_messages()
        return str(result.output)

    return say


def chat():
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.deepseek import DeepSeekProvider

    client = AsyncOpenAI(base_url=BASE_URL, api_key=KEY)
    provider = DeepSeekProvider(openai_client=client)
    model = OpenAIChatModel(MODEL, provider=provider, profile=provider.model_profile(REAL_MODEL))
    return _conversation(model, {})


def responses():
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=BASE_URL, api_key=KEY)
    model = OpenAIResponsesModel(
        MODEL, provider=provider, profile=provider.model_profile(REAL_MODEL)
    )
    settings = {
        "openai_reasoning_effort": "medium",
        "openai_reasoning_summary": "auto",
        "openai_store": STORE,
    }
    return _conversation(model, settings)


def anthropic():
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(base_url=ROOT_URL, api_key=KEY)
    model = AnthropicModel(MODEL, provider=provider, profile=provider.model_profile(REAL_MODEL))
    thinking = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    return _conversation(model, {"anthropic_thinking": thinking})


def gemini():
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    provider = GoogleProvider(api_key=KEY, base_url=ROOT_URL)
    model = GoogleModel(MODEL, provider=provider, profile=provider.model_profile(REAL_MODEL))
    return _conversation(model, {"google_thinking_config": {"include_thoughts": True}})


run(by_dialect(chat=chat, responses=responses, anthropic=anthropic, gemini=gemini))
