"""The scan's conversation: the method's fixture as OpenAI-style message dicts.

Why dicts: chat templates read OpenAI-style messages (vLLM, SGLang and llama.cpp pass them
as such), so the offline scan builds its renders from these plain dicts. The trace, the
canary, the positions and the tool are the method's (:mod:`reasonwire.method.fixture`,
shared with the live harness); the conversation around them is worded for this scan.

Variants put the same trace in different fields of the tool-call turn; ``none`` has no trace,
and every other byte of the messages is identical across variants.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Final

from reasonwire.method.fixture import (
    DEFAULT_SEED,
    POSITIONS,
    TOOL,
    TOOL_NAME,
    TRACE_WORDS,
    SeededTrace,
)
from reasonwire.wire.model import JsonObject

VARIANTS: Final = ("none", "reasoning_content", "reasoning", "reasoning_details", "thinking", "all")
FIELDS: Final = VARIANTS[1:]

SYSTEM_PROMPT: Final = (
    "You are a careful travel assistant. Use the get_weather tool for current conditions."
)
USER_TASK: Final = "What is the weather in Lisbon right now? I am deciding whether to walk."
TOOL_RESULT: Final = '{"city": "Lisbon", "temperature_c": 18, "conditions": "clear sky"}'
FINAL_ANSWER: Final = "It is 18 °C with a clear sky in Lisbon: a good time for a walk."
PROBE: Final = (
    "Before anything else: your earlier reasoning for this task contained a verification "
    "word. Reply with that word only, or NONE if you cannot see it."
)
TOOL_ARGUMENTS: Final = {"city": "Lisbon"}
TOOL_CALL_ID: Final = "call_lisbon_weather_01"

TOOLS: Final[list[JsonObject]] = [
    {
        "type": "function",
        "function": {
            "name": TOOL.name,
            "description": TOOL.description,
            "parameters": copy.deepcopy(TOOL.parameters),
        },
    }
]
"""The method's tool as chat templates read it."""


@dataclass(frozen=True)
class Fixture(SeededTrace):
    """The method's seeded trace, and this scan's conversation around it."""

    probe: str = PROBE

    def messages(self, variant: str, position: str) -> list[JsonObject]:
        """The OpenAI-style messages for one variant at one position (fresh dicts)."""
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
        if position not in POSITIONS:
            raise ValueError(f"unknown position {position!r}; expected one of {POSITIONS}")
        call: JsonObject = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": TOOL_CALL_ID,
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGUMENTS)},
                }
            ],
        }
        call.update(self.carrier(variant))
        msgs: list[JsonObject] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_TASK},
            call,
        ]
        if position == "in_loop":
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": TOOL_CALL_ID,
                    "content": TOOL_RESULT + "\n\n" + self.probe,
                }
            )
        else:
            msgs.append({"role": "tool", "tool_call_id": TOOL_CALL_ID, "content": TOOL_RESULT})
            msgs.append({"role": "assistant", "content": FINAL_ANSWER})
            msgs.append({"role": "user", "content": self.probe})
        return copy.deepcopy(msgs)

    def carrier(self, variant: str) -> JsonObject:
        """The fields a variant adds to the tool-call turn (empty for ``none``)."""
        fields: JsonObject = {
            "reasoning_content": self.trace,
            "reasoning": self.trace,
            "reasoning_details": [
                {"type": "reasoning.text", "text": self.trace, "format": "unknown", "index": 0}
            ],
            "thinking": self.trace,
        }
        if variant == "none":
            return {}
        if variant == "all":
            return fields
        return {variant: fields[variant]}


__all__ = [
    "DEFAULT_SEED",
    "FIELDS",
    "POSITIONS",
    "TOOLS",
    "TOOL_NAME",
    "TRACE_WORDS",
    "VARIANTS",
    "Fixture",
]
