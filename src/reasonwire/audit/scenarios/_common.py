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


def call_tool(name: str, arguments: str | dict) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
    return TOOLS[name](**args)


class Unsupported(Exception):
    """The framework has no way to speak this variant."""


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
    except Unsupported as exc:
        print(f"unsupported: {exc}")
        sys.exit(2)
    except Exception as exc:
        traceback.print_exc(limit=3)
        print(f"scenario failed: {type(exc).__name__}: {str(exc)[:500]}", flush=True)
        sys.exit(1)
