"""The harness fixture: one seeded tool-loop transcript, as neutral messages.

Why neutral messages: every dialect builds its own body from the same transcript, so a cell's
request differs from its ``none`` baseline only in the carrier the dialect expresses.

The transcript is a system prompt, a user task, an assistant ``get_weather`` tool call whose
turn may carry a reasoning trace, the tool result, then a probe:

- ``in_loop``: the probe rides in the tool result (no new user message since the tool call);
- ``cross_turn``: the tool result is plain, a final assistant answer follows, then a new user
  message holds the probe.

The trace is ~400 tokens (~1,600 characters) of seeded filler that reads like planning, with
exactly one canary sentence ``The verification word for this task is <word>.`` in the middle.
A reply naming the word shows the model read the trace (a miss is not conclusive).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from reasonwire.wire.model import (
    Assistant,
    Carrier,
    Message,
    System,
    ToolCall,
    ToolResult,
    ToolSpec,
    User,
)

POSITIONS: tuple[str, ...] = ("in_loop", "cross_turn")
WORDINGS: tuple[str, ...] = ("probe", "neutral")

CANARY_TEMPLATE = "The verification word for this task is {word}."
CANARY_WORDS: tuple[str, ...] = (
    "amberlight", "basaltine", "cobaltrix", "dahliane", "emberfall", "fjordling", "garnetta",
    "harborine", "indigold", "juniperal", "kelpwood", "lanternix", "marbleton", "nectarine",
    "onyxfield", "pebblast", "quartzel", "ravenmoor", "saffronel", "thistledown",
)  # fmt: skip

SYSTEM_PROMPT = (
    "You are a careful assistant with one tool, get_weather. Use it when the user asks about "
    "weather, then answer briefly."
)
USER_TASK = "What is the weather in Lisbon right now? I need to decide whether to cycle to work."
TOOL_NAME = "get_weather"
TOOL_CALL_ID = "call_rw_weather_1"
TOOL_ARGS = '{"city":"Lisbon"}'
TOOL_RESULT = {"city": "Lisbon", "temp_c": 19, "condition": "light rain", "wind_kph": 14}
FINAL_ANSWER = "It is 19 C with light rain and a light wind in Lisbon; take a rain jacket."
TOOL_TEXT = ""

#: probe wordings; ``probe`` names earlier reasoning, ``neutral`` avoids the words that safety
#: layers refuse (xAI 403, content filters)
PROBES: dict[str, str] = {
    "probe": (
        "Before you answer: what was the verification word in your earlier reasoning for this "
        "task? Reply with that word only, or NONE if you do not know it."
    ),
    "neutral": (
        "If a verification word was mentioned for this task, reply with that word only; "
        "otherwise reply NONE."
    ),
}

TOOL = ToolSpec(
    name=TOOL_NAME,
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
)

_SUBJECTS = (
    "The forecast feed", "The cycling question", "The city lookup", "The wind figure",
    "The user's commute", "The rain estimate", "The tool schema", "The temperature reading",
    "The morning window", "The answer format",
)  # fmt: skip
_VERBS = (
    "needs", "suggests", "depends on", "should mention", "can ignore", "must respect",
    "points toward", "hinges on", "rules out", "calls for",
)  # fmt: skip
_OBJECTS = (
    "a single call to get_weather with the city name", "the chance of showers before nine",
    "whether the wind is gusting across the river", "a short practical recommendation",
    "the difference between drizzle and steady rain", "the exact city spelling Lisbon",
    "how long the ride along the waterfront takes", "the visible answer staying brief",
    "a fallback if the tool returns nothing", "the temperature in Celsius only",
)  # fmt: skip


@dataclass(frozen=True)
class Fixture:
    """A seeded fixture: the trace text, its canary word, and the transcript builder."""

    seed: int
    trace: str
    canary: str

    @property
    def trace_tokens_estimate(self) -> int:
        """T by the chars/4 rule (used where no count endpoint measures it)."""
        return max(1, round(len(self.trace) / 4))

    @property
    def fixture_id(self) -> str:
        """A short hash of everything a request depends on (trace, prompts, probes)."""
        blob = json.dumps(
            [self.trace, SYSTEM_PROMPT, USER_TASK, PROBES, TOOL_RESULT, FINAL_ANSWER],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def transcript(
        self, position: str, wording: str, carriers: tuple[Carrier, ...] = ()
    ) -> list[Message]:
        """The neutral transcript for one cell; ``carriers`` ride on the tool-call turn."""
        call = Assistant(
            text=TOOL_TEXT,
            tool_calls=(ToolCall(TOOL_CALL_ID, TOOL_NAME, TOOL_ARGS),),
            carriers=carriers,
        )
        return self.around(call, position, wording)

    def around(self, call: Assistant, position: str, wording: str) -> list[Message]:
        """System, task, ``call`` (any assistant tool-call turn), tool result and probe."""
        result = json.dumps(TOOL_RESULT, separators=(",", ":"))
        call_id = call.tool_calls[0].id if call.tool_calls else TOOL_CALL_ID
        name = call.tool_calls[0].name if call.tool_calls else TOOL_NAME
        head: list[Message] = [System(SYSTEM_PROMPT), User(USER_TASK), call]
        probe = PROBES[wording]
        if position == "in_loop":
            return [*head, ToolResult(call_id, name, f"{result}\n\n{probe}")]
        if position == "cross_turn":
            return [*head, ToolResult(call_id, name, result), Assistant(FINAL_ANSWER), User(probe)]
        raise ValueError(f"unknown position {position!r}; expected one of {POSITIONS}")

    def opening(self) -> list[Message]:
        """Turn 1 of the opaque step: system prompt and the task (the model calls the tool)."""
        return [System(SYSTEM_PROMPT), User(USER_TASK)]


def make_trace(seed: int, target_chars: int = 1600) -> tuple[str, str]:
    """(trace, canary word): seeded planning-like filler with one canary sentence mid-way."""
    rng = random.Random(f"reasonwire-trace-{seed}")
    word = rng.choice(CANARY_WORDS)
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < target_chars:
        sentences.append(f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}.")
    sentences.insert(len(sentences) // 2, CANARY_TEMPLATE.format(word=word))
    return " ".join(sentences), word


def make_fixture(seed: int = 1) -> Fixture:
    trace, word = make_trace(seed)
    return Fixture(seed=seed, trace=trace, canary=word)


def canary_hit(reply: str, word: str) -> bool:
    """True when the reply names the canary word (case-insensitive)."""
    return bool(word) and word.lower() in reply.lower()
