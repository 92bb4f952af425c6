# mypy: ignore-errors
"""Scenario: the OpenAI Agents SDK (``Runner.run_sync``; the second turn is
``result.to_input_list()`` plus the new user message). Chat Completions through
``OpenAIChatCompletionsModel``, Responses through ``OpenAIResponsesModel`` with
``ModelSettings(store=..., reasoning=..., response_include=[...])``. Tracing is off."""

from __future__ import annotations

from _common import BASE_URL, KEY, MODEL, STORE, TOOLS, by_dialect, run
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from openai.types.shared import Reasoning

set_tracing_disabled(True)


def _conversation(model, settings):
    agent = Agent(
        name="assistant",
        instructions="Use the tools.",
        tools=[function_tool(f) for f in TOOLS.values()],
        model=model,
        model_settings=settings,
    )
    items = []

    def say(text: str) -> str:
        nonlocal items
        result = Runner.run_sync(agent, [*items, {"role": "user", "content": text}])
        items = result.to_input_list()
        return str(result.final_output)

    return say


def chat():
    client = AsyncOpenAI(base_url=BASE_URL, api_key=KEY)
    return _conversation(
        OpenAIChatCompletionsModel(model=MODEL, openai_client=client), ModelSettings()
    )


def responses():
    client = AsyncOpenAI(base_url=BASE_URL, api_key=KEY)
    settings = ModelSettings(
        store=STORE,
        reasoning=Reasoning(effort="medium", summary="auto"),
        response_include=["reasoning.encrypted_content"] if STORE is False else None,
    )
    return _conversation(OpenAIResponsesModel(model=MODEL, openai_client=client), settings)


run(by_dialect(chat=chat, responses=responses))
