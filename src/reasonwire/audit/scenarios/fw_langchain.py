# mypy: ignore-errors
"""Scenario: LangChain chat models in the loop its docs show: ``bind_tools``, ``invoke``, the
``AIMessage`` and one ``ToolMessage`` per call appended to the message list. ``ChatOpenAI`` for
Chat Completions and (``use_responses_api=True``, ``reasoning``, ``store``, ``include``) the
Responses API; ``ChatAnthropic`` with ``thinking``."""

from __future__ import annotations

from _common import (
    BASE_URL,
    KEY,
    MAX_TOKENS,
    MODEL,
    ROOT_URL,
    STORE,
    THINKING_BUDGET,
    TOOLS,
    by_dialect,
    conversation,
    run,
)
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

LC_TOOLS = {name: tool(fn) for name, fn in TOOLS.items()}


def _conversation(llm):
    bound = llm.bind_tools(list(LC_TOOLS.values()))

    def step(messages: list) -> str | None:
        ai = bound.invoke(messages)
        messages.append(ai)
        if not ai.tool_calls:
            return ai.text if isinstance(ai.text, str) else ai.text()
        for call in ai.tool_calls:
            out = LC_TOOLS[call["name"]].invoke(call["args"])
            messages.append(ToolMessage(content=str(out), tool_call_id=call["id"]))
        return None

    return conversation(step, HumanMessage)


def chat():
    from langchain_openai import ChatOpenAI

    return _conversation(ChatOpenAI(model=MODEL, base_url=BASE_URL, api_key=KEY))


def responses():
    from langchain_openai import ChatOpenAI

    extra = {"include": ["reasoning.encrypted_content"]} if STORE is False else {}
    llm = ChatOpenAI(
        model=MODEL,
        base_url=BASE_URL,
        api_key=KEY,
        use_responses_api=True,
        reasoning={"effort": "medium", "summary": "auto"},
        store=STORE,
        **extra,
    )
    return _conversation(llm)


def anthropic():
    from langchain_anthropic import ChatAnthropic

    llm = ChatAnthropic(
        model=MODEL,
        base_url=ROOT_URL,
        api_key=KEY,
        max_tokens=MAX_TOKENS,
        thinking={"type": "enabled", "budget_tokens": THINKING_BUDGET},
    )
    return _conversation(llm)


run(by_dialect(chat=chat, responses=responses, anthropic=anthropic))
