# mypy: ignore-errors
"""Scenario: the LiteLLM SDK in a hand-written loop, as its docs show it:
``litellm.completion`` appending ``response.choices[0].message`` (DeepSeek chat, Anthropic with
``thinking``, Gemini with ``reasoning_effort``), ``litellm.responses`` adding
``response.output`` to the input (Responses). The simulator's model is registered with the
capabilities of the real model of the dialect (``litellm.register_model``), since LiteLLM
decides reasoning support from its model map."""

from __future__ import annotations

import litellm
from _common import (
    BASE_URL,
    CHAT_TOOLS,
    KEY,
    MAX_TOKENS,
    MODEL,
    REAL_MODEL,
    RESPONSES_TOOLS,
    ROOT_URL,
    STORE,
    THINKING_BUDGET,
    by_dialect,
    chat_reply,
    conversation,
    responses_reply,
    run,
)


def _register(provider: str) -> str:
    name = f"{provider}/{MODEL}"
    info = litellm.model_cost.get(f"{provider}/{REAL_MODEL}") or litellm.model_cost.get(REAL_MODEL)
    if info:
        litellm.register_model({name: dict(info, litellm_provider=provider)})
    return name


def _completion_loop(model: str, **kwargs):
    return conversation(
        lambda messages: chat_reply(
            messages,
            litellm.completion(model=model, messages=messages, tools=CHAT_TOOLS, **kwargs)
            .choices[0]
            .message,
        )
    )


def chat():
    return _completion_loop(_register("deepseek"), api_base=BASE_URL, api_key=KEY)


def anthropic():
    thinking = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    return _completion_loop(
        _register("anthropic"),
        api_base=ROOT_URL,
        api_key=KEY,
        thinking=thinking,
        max_tokens=MAX_TOKENS,
    )


def gemini():
    return _completion_loop(
        _register("gemini"), api_base=ROOT_URL + "/v1beta", api_key=KEY, reasoning_effort="high"
    )


def responses():
    model = _register("openai")
    extra = {"include": ["reasoning.encrypted_content"]} if STORE is False else {}

    def step(items: list) -> str | None:
        response = litellm.responses(
            model=model,
            input=items,
            tools=RESPONSES_TOOLS,
            reasoning={"effort": "medium", "summary": "auto"},
            store=STORE,
            api_base=BASE_URL,
            api_key=KEY,
            **extra,
        )
        if responses_reply(items, response.output):
            return None
        return "".join(
            c.text
            for o in response.output
            if getattr(o, "type", None) == "message"
            for c in o.content
        )

    return conversation(step)


run(by_dialect(chat=chat, responses=responses, anthropic=anthropic, gemini=gemini))
