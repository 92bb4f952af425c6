# mypy: ignore-errors
"""Shared by every scenario script: the task, the tools, the variant and the driver.

Standard library only: this runs under each framework's own interpreter.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

VARIANT = os.environ.get("REASONWIRE_AUDIT_VARIANT", "")
BASE_URL = os.environ.get("REASONWIRE_AUDIT_BASE_URL", "")  # .../v1
ROOT_URL = os.environ.get("REASONWIRE_AUDIT_ROOT_URL", "")  # origin
KEY = os.environ.get("OPENAI_API_KEY", "reasonwire-audit-dummy-key")
STREAM = os.environ.get("REASONWIRE_AUDIT_STREAM", "") == "1"

_MODEL_ENV = {
    "chat": "REASONWIRE_AUDIT_CHAT_MODEL",
    "responses-store": "REASONWIRE_AUDIT_RESPONSES_MODEL",
    "responses-nostore": "REASONWIRE_AUDIT_RESPONSES_MODEL",
    "anthropic": "REASONWIRE_AUDIT_ANTHROPIC_MODEL",
    "gemini": "REASONWIRE_AUDIT_GEMINI_MODEL",
}
MODEL = os.environ.get(_MODEL_ENV.get(VARIANT, ""), "")
STORE = {"responses-store": True, "responses-nostore": False}.get(VARIANT)

# Frameworks that choose behaviour by model name (capability profiles, model maps) are told to
# treat the simulator's model as this real reasoning model of the dialect, where they allow it.
REAL_MODEL = {
    "chat": "deepseek-reasoner",
    "responses-store": "gpt-5",
    "responses-nostore": "gpt-5",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-3-pro-preview",
}.get(VARIANT, "")

TASK_1 = "What is the weather in Paris?"
TASK_2 = "And what is the weather in Rome?"
THINKING_BUDGET = 1024
MAX_TOKENS = 4096


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: found; next tool: forecast"


def forecast(city: str) -> str:
    """Weather forecast for a city."""
    return f"sunny in {city}"


TOOLS = {"lookup": lookup, "forecast": forecast}
PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}
DESCRIPTIONS = {name: (fn.__doc__ or "").strip() for name, fn in TOOLS.items()}
# The tools as the Chat Completions and Responses APIs declare them (openai SDK, LiteLLM).
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": n, "description": DESCRIPTIONS[n], "parameters": PARAMETERS},
    }
    for n in TOOLS
]
RESPONSES_TOOLS = [
    {"type": "function", "name": n, "description": DESCRIPTIONS[n], "parameters": PARAMETERS}
    for n in TOOLS
]


def call_tool(name: str, arguments: str | dict) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
    return TOOLS[name](**args)


def conversation(step: Callable[[list], str | None], user: Callable[[str], object] | None = None):
    """The hand-written tool loop every SDK's docs show, over one history list: the user's
    message appended (``user(text)``, default a ``{"role": "user"}`` dict), then ``step``
    until it returns the answer. ``step(history)`` sends the history, appends what came back
    and the tool results, and returns None while the model calls tools."""
    history = []

    def say(text: str) -> str:
        history.append(user(text) if user else {"role": "user", "content": text})
        for _ in range(8):
            answer = step(history)
            if answer is not None:
                return answer
        raise RuntimeError("tool loop did not end")

    return say


def chat_reply(messages: list, msg) -> str | None:
    """A Chat Completions step: the assistant message appended as the SDK returned it, one
    ``tool`` message per call; its text when it called no tool."""
    messages.append(msg)
    if not msg.tool_calls:
        return msg.content or ""
    for call in msg.tool_calls:
        out = call_tool(call.function.name, call.function.arguments)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
    return None


def responses_reply(items: list, output: list) -> bool:
    """A Responses step: the output items appended as the SDK returned them, one
    ``function_call_output`` per call; False when it called no tool."""
    items.extend(output)
    calls = [o for o in output if getattr(o, "type", None) == "function_call"]
    for call in calls:
        out = call_tool(call.name, json.loads(call.arguments))
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": out})
    return bool(calls)


def by_dialect(**builders: Callable[[], Callable[[str], str]]) -> dict:
    """:func:`run`'s table from one builder per dialect (``chat``, ``responses`` - both store
    variants -, ``anthropic``, ``gemini``)."""
    table = dict(builders)
    responses = table.pop("responses", None)
    if responses is not None:
        table["responses-store"] = table["responses-nostore"] = responses
    return table


def run(builders: dict[str, Callable[[], Callable[[str], str]]]) -> None:
    """Build the conversation for VARIANT (a callable taking one user message and returning
    the answer, keeping history), run both turns, exit 0/1/2."""
    builder = builders.get(VARIANT)
    if builder is None:
        print(f"unsupported variant {VARIANT!r}; supported: {', '.join(builders)}")
        sys.exit(2)
    try:
        say = builder()
        for task in (TASK_1, TASK_2):
            answer = say(task)
            print(f"user: {task}\nassistant: {answer}", flush=True)
    except Exception as exc:
        traceback.print_exc(limit=3)
        print(f"scenario failed: {type(exc).__name__}: {str(exc)[:500]}", flush=True)
        sys.exit(1)
