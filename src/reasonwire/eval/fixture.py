"""The harness fixture: one seeded tool-loop transcript, as neutral messages.

Why neutral messages: every dialect builds its own body from the same transcript, so a cell's
request differs from its ``none`` baseline only in the carrier the dialect expresses.

The transcript is a system prompt, a user task, an assistant ``get_weather`` tool call whose
turn may carry a reasoning trace, the tool result, then a probe:

- ``in_loop``: the probe rides in the tool result (no new user message since the tool call);
- ``cross_turn``: the tool result is plain, a final assistant answer follows, then a new user
  message holds the probe.

The opaque step's turn 1 is live: the model is asked :data:`TURN1_TASK`, the weather task
plus a small arithmetic task, kept as one fixed text. Why: a model that has something to work
out reasons before it calls the tool, where the bare weather question is often answered with
a tool call and no reasoning at all; the method's own harness found that this prompt raises
the share of models that return opaque carriers (signed thinking, encrypted reasoning,
thought signatures) to replay. Turn 2 replays that conversation (:meth:`Fixture.replay`): the
same task, the turn-1 answer, the tool result and the probe, with :data:`TURN1_FINAL_ANSWER`
across turns. The text step keeps :data:`USER_TASK`: its trace is the fixture's, not the
model's, so it needs no reasoning, and its requests (and the fixture id) stay as measured.

The trace, its canary, the positions and the tool are the method's
(:mod:`reasonwire.method.fixture`, shared with the offline template scan). A reply naming the
word shows the model read the trace (a miss is not conclusive).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from reasonwire.method.fixture import (
    DEFAULT_SEED,
    POSITIONS,
    TOOL,
    TOOL_NAME,
    SeededTrace,
    canary_hit,
)
from reasonwire.wire.model import Assistant, Carrier, Message, System, ToolCall, ToolResult, User

WORDINGS: tuple[str, ...] = ("probe", "neutral")

SYSTEM_PROMPT = (
    "You are a careful assistant with one tool, get_weather. Use it when the user asks about "
    "weather, then answer briefly."
)
USER_TASK = "What is the weather in Lisbon right now? I need to decide whether to cycle to work."
TOOL_CALL_ID = "call_rw_weather_1"
TOOL_ARGS = '{"city":"Lisbon"}'
TOOL_RESULT = {"city": "Lisbon", "temp_c": 19, "condition": "light rain", "wind_kph": 14}
FINAL_ANSWER = "It is 19 C with light rain and a light wind in Lisbon; take a rain jacket."
TOOL_TEXT = ""
TURN1_TASK = (
    "What is the weather in Lisbon right now? I need to decide whether to cycle to work. "
    "Also work out how far I ride in a month: 7.4 km each way, 3 days a week, 4 weeks."
)
"""The opaque step's turn-1 prompt (one fixed text; see the module docstring for why it holds
a small arithmetic task: 7.4 x 2 x 3 x 4 = 177.6 km)."""
TURN1_FINAL_ANSWER = FINAL_ANSWER + " You ride 177.6 km a month."
"""The final answer of the opaque step's cross-turn replay: it answers both parts of
:data:`TURN1_TASK`."""

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


@dataclass(frozen=True)
class Fixture(SeededTrace):
    """A seeded fixture: the method's trace and canary, and the transcript builder."""

    @property
    def fixture_id(self) -> str:
        """A short hash of everything a text-step request depends on (trace, prompts,
        probes). The opaque step's :data:`TURN1_TASK` is not in it: a changed turn-1 prompt
        makes new turn-1 captures of the same cells, each with its run id, and the report
        keeps the newest (:mod:`reasonwire.eval._rows`), while the text cells resume."""
        blob = json.dumps(
            [self.trace, SYSTEM_PROMPT, USER_TASK, PROBES, TOOL_RESULT, FINAL_ANSWER],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def transcript(
        self,
        position: str,
        wording: str,
        carriers: tuple[Carrier, ...] = (),
        probes: dict[str, str] = PROBES,
    ) -> list[Message]:
        """The neutral transcript for one cell; ``carriers`` ride on the tool-call turn;
        ``probes``: the probe text per wording (the fold step asks for every word)."""
        call = Assistant(
            text=TOOL_TEXT,
            tool_calls=(ToolCall(TOOL_CALL_ID, TOOL_NAME, TOOL_ARGS),),
            carriers=carriers,
        )
        return self.around(call, position, wording, probes)

    def around(
        self,
        call: Assistant,
        position: str,
        wording: str,
        probes: dict[str, str] = PROBES,
        *,
        task: str = USER_TASK,
        final: str = FINAL_ANSWER,
    ) -> list[Message]:
        """System, ``task``, ``call`` (any assistant tool-call turn), tool result and probe
        (across turns after ``final``)."""
        result = json.dumps(TOOL_RESULT, separators=(",", ":"))
        call_id = call.tool_calls[0].id if call.tool_calls else TOOL_CALL_ID
        name = call.tool_calls[0].name if call.tool_calls else TOOL_NAME
        head: list[Message] = [System(SYSTEM_PROMPT), User(task), call]
        probe = probes[wording]
        if position == "in_loop":
            return [*head, ToolResult(call_id, name, f"{result}\n\n{probe}")]
        if position == "cross_turn":
            return [*head, ToolResult(call_id, name, result), Assistant(final), User(probe)]
        raise ValueError(f"unknown position {position!r}; expected one of {POSITIONS}")

    def opening(self) -> list[Message]:
        """Turn 1 of the opaque step: system prompt and :data:`TURN1_TASK` (the model works
        out the sum and calls the tool)."""
        return [System(SYSTEM_PROMPT), User(TURN1_TASK)]

    def replay(self, turn1: Assistant, position: str, wording: str) -> list[Message]:
        """Turn 2 of the opaque step: the turn-1 conversation (:meth:`opening`), ``turn1``
        (the answer, with or without its carriers), the tool result and the probe."""
        return self.around(turn1, position, wording, task=TURN1_TASK, final=TURN1_FINAL_ANSWER)


def make_fixture(seed: int = DEFAULT_SEED) -> Fixture:
    """The fixture for ``seed`` (the method's trace, so the offline scan and the live
    harness measure the same text)."""
    return Fixture.from_seed(seed)


__all__ = [
    "FINAL_ANSWER",
    "POSITIONS",
    "PROBES",
    "SYSTEM_PROMPT",
    "TOOL",
    "TOOL_NAME",
    "TURN1_FINAL_ANSWER",
    "TURN1_TASK",
    "USER_TASK",
    "WORDINGS",
    "Fixture",
    "canary_hit",
    "make_fixture",
]
