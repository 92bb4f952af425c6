"""The consumption fixture: one conversation, with and without replayed reasoning.

Why one shared fixture: the offline template scan and the live harness must measure the same
thing, so both build their requests from these plain OpenAI-style message dicts. Everything
is derived from a seed (the filler words, the canary word), so a run is reproducible and two
runs with different seeds cannot share a memorised canary.

The conversation: a system prompt, a user task, an assistant turn that calls ``get_weather``
and carries a ~400-token reasoning trace (seeded filler with exactly one canary sentence,
``The verification word for this task is <word>.``), the tool result, then a probe asking
for the word. Positions:

- ``in_loop``: the probe rides in the tool result; no new user message (inside the tool loop).
- ``cross_turn``: tool result, a final assistant answer, then a new user message with the probe.

Variants put the same trace in different fields of the tool-call turn; ``none`` has no trace,
and every other byte of the messages is identical across variants.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from typing import Any, Final

VARIANTS: Final = ("none", "reasoning_content", "reasoning", "reasoning_details", "thinking", "all")
FIELDS: Final = VARIANTS[1:]
POSITIONS: Final = ("in_loop", "cross_turn")

DEFAULT_SEED: Final = 20261109
TRACE_WORDS: Final = 300  # about 400 tokens with common vocabularies

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
TOOL_NAME: Final = "get_weather"
TOOL_ARGUMENTS: Final = {"city": "Lisbon"}
TOOL_CALL_ID: Final = "call_lisbon_weather_01"

TOOLS: Final[list[dict[str, Any]]] = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name"}},
                "required": ["city"],
            },
        },
    }
]

_FILLER: Final = (
    "amber",
    "basalt",
    "cobalt",
    "dunlin",
    "egret",
    "fjord",
    "garnet",
    "heron",
    "isobar",
    "juniper",
    "kestrel",
    "lichen",
    "meridian",
    "nimbus",
    "obsidian",
    "plover",
    "quartz",
    "rill",
    "sorrel",
    "tundra",
    "umber",
    "vireo",
    "wren",
    "xylem",
    "yarrow",
    "zephyr",
    "barometer",
    "cirrus",
    "drizzle",
    "estuary",
    "front",
    "gust",
    "humidity",
    "inversion",
    "jetstream",
    "katabatic",
    "lull",
    "mistral",
    "north",
    "ocean",
    "pressure",
    "squall",
    "thermal",
    "updraft",
    "veer",
    "westerly",
    "coastal",
    "harbour",
    "tagus",
    "ridge",
)
_CANARIES: Final = (
    "marzipan",
    "tamarind",
    "quillwort",
    "bergamot",
    "cardamom",
    "lodestar",
    "porphyry",
    "saltmarsh",
    "windlass",
    "hawthorn",
    "pimpernel",
    "sandpiper",
    "bracken",
    "gossamer",
)


@dataclass(frozen=True)
class Fixture:
    """A seeded conversation. ``trace`` is the reasoning text, ``canary`` its secret word."""

    seed: int
    canary: str
    trace: str
    probe: str = PROBE

    @classmethod
    def from_seed(cls, seed: int = DEFAULT_SEED, words: int = TRACE_WORDS) -> Fixture:
        rng = random.Random(seed)
        canary = rng.choice(_CANARIES)
        sentences: list[str] = []
        count = 0
        while count < words:
            n = rng.randint(8, 14)
            picked = [rng.choice(_FILLER) for _ in range(n)]
            sentences.append(" ".join(picked).capitalize() + ".")
            count += n
        sentences.insert(len(sentences) // 2, f"The verification word for this task is {canary}.")
        trace = "The user wants the weather in Lisbon; I should call get_weather. " + " ".join(
            sentences
        )
        return cls(seed=seed, canary=canary, trace=trace)

    def messages(self, variant: str, position: str) -> list[dict[str, Any]]:
        """The OpenAI-style messages for one variant at one position (fresh dicts)."""
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
        if position not in POSITIONS:
            raise ValueError(f"unknown position {position!r}; expected one of {POSITIONS}")
        call: dict[str, Any] = {
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
        msgs: list[dict[str, Any]] = [
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

    def carrier(self, variant: str) -> dict[str, Any]:
        """The fields a variant adds to the tool-call turn (empty for ``none``)."""
        fields: dict[str, Any] = {
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
