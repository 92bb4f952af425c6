"""What a run gives back: the :class:`RunResult`, and the typed events of a streamed run.

``Agent.stream(text)`` / ``Agent.astream(text)`` yield, in order, for each request of the
run: :class:`TextEvent` and :class:`ReasoningEvent` deltas as they arrive (reasoning only
where the provider shows it), then :class:`RequestUsage` when the answer is complete, then a
:class:`ToolCallEvent` for each complete call the model asked for; then a
:class:`ToolResultEvent` as each tool has run. The last event is :class:`ResultEvent`, whose
``result`` is what ``Agent.run`` would have returned.

Every event has a ``type`` tag (``text``, ``reasoning``, ``usage``, ``tool_call``,
``tool_result``, ``result``) and, where it belongs to one request, ``request``: the request's
index in the run, from 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from reasonwire.wire.model import (
    DialectName,
    Done,
    JsonObject,
    Message,
    ReasoningDelta,
    RequestOptions,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from reasonwire.wire.registry import get_dialect

# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------


def _sum_int(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _sum_float(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def total_usage(usages: Sequence[Usage | None]) -> Usage:
    """Field-wise sum of ``usages``; a figure no request reported stays ``None``."""
    us = [u for u in usages if u is not None]
    return Usage(
        input_uncached=_sum_int(u.input_uncached for u in us),
        cache_read=_sum_int(u.cache_read for u in us),
        cache_write=_sum_int(u.cache_write for u in us),
        output=_sum_int(u.output for u in us),
        reasoning=_sum_int(u.reasoning for u in us),
        cost_usd=_sum_float(u.cost_usd for u in us),
    )


def message_json(message: Message) -> JsonObject:
    """A neutral message as a JSON object (its dataclass fields)."""
    return dataclasses.asdict(message)


def dialect_messages(
    transcript: Sequence[Message],
    dialect: DialectName,
    model: str = "",
    profile: str | None = None,
) -> JsonObject:
    """The request-body fields that carry ``transcript`` in ``dialect``, built by the dialect
    object's ``build_request``: the fields whose value differs from a body built for an empty
    conversation (``messages``; ``input``; ``system`` and ``messages``; ``contents`` and
    ``systemInstruction``). The result can be passed on as keyword arguments to that
    provider's SDK."""
    wire = get_dialect(dialect)
    options = RequestOptions(model=model or "model")
    full = wire.build_request(list(transcript), options, profile)
    empty = wire.build_request([], options, profile)
    return {k: v for k, v in full.items() if k not in empty or empty[k] != v}


@dataclass(frozen=True)
class RunResult:
    """The final answer, the neutral transcript so far, and per-request usage of this run.

    ``usage`` has one entry per request of the run (``None`` where the provider reported
    none): uncached input, cache read and write, output and reasoning tokens
    (:class:`~reasonwire.wire.model.Usage`); :attr:`total_usage` sums them. ``transcript`` is
    the provider-neutral conversation (visible text, function calls, tool results);
    :meth:`messages` is the same conversation as the provider's own JSON.
    """

    answer: str
    transcript: tuple[Message, ...]
    rounds: int
    usage: tuple[Usage | None, ...]
    model: str = ""
    """The model id the run used."""
    dialect: DialectName = ""
    """The wire dialect of the model's route (what :meth:`messages` builds by default)."""
    profile: str | None = None
    """The route's dialect profile."""

    @property
    def requests(self) -> int:
        """How many requests the run made."""
        return len(self.usage)

    @property
    def total_usage(self) -> Usage:
        """Usage summed over the run's requests."""
        return total_usage(self.usage)

    def messages(self, dialect: DialectName | None = None) -> JsonObject:
        """The transcript as the body fields ``dialect`` expects (default: the model's own),
        e.g. ``{"messages": [...]}`` for Chat Completions, ``{"input": [...]}`` for
        Responses, ``{"system": ..., "messages": [...]}`` for Anthropic, ``{"contents": [...],
        "systemInstruction": ...}`` for Gemini: ready to hand to that provider's SDK."""
        name = dialect or self.dialect
        profile = self.profile if name == self.dialect else None
        return dialect_messages(self.transcript, name, self.model, profile)

    def as_dict(self) -> JsonObject:
        """The result as JSON: answer, rounds, per-request and total usage, the neutral
        transcript and the dialect's messages."""
        return {
            "answer": self.answer,
            "rounds": self.rounds,
            "model": self.model,
            "dialect": self.dialect,
            "usage": [u.as_dict() if u is not None else None for u in self.usage],
            "total_usage": self.total_usage.as_dict(),
            "transcript": [message_json(m) for m in self.transcript],
            "messages": self.messages() if self.dialect else None,
        }


# --------------------------------------------------------------------------------------------
# Stream events
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextEvent:
    """A piece of the visible answer text, as it streamed."""

    text: str
    request: int
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningEvent:
    """A piece of reasoning text, where the provider shows it."""

    text: str
    request: int
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class RequestUsage:
    """One request's answer is complete: its usage (None if not reported) and why it ended."""

    request: int
    usage: Usage | None
    finish_reason: str | None = None
    type: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A complete function call the model asked for (before the tool runs)."""

    call: ToolCall
    request: int
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """A tool has run: its result, as it goes back to the model."""

    result: ToolResult
    request: int
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ResultEvent:
    """The run's final result: always the last event."""

    result: RunResult
    type: Literal["result"] = "result"


AgentEvent: TypeAlias = (
    TextEvent | ReasoningEvent | RequestUsage | ToolCallEvent | ToolResultEvent | ResultEvent
)
"""Any event of :meth:`Agent.stream` / :meth:`Agent.astream`."""


def agent_events(wire: StreamEvent, request: int) -> Iterator[AgentEvent]:
    """The agent events one wire event of request ``request`` stands for: a text or reasoning
    delta its piece, the final :class:`~reasonwire.wire.model.Done` the request's usage and
    then each complete call it asked for; nothing for the rest."""
    if isinstance(wire, TextDelta):
        yield TextEvent(wire.text, request)
    elif isinstance(wire, ReasoningDelta):
        yield ReasoningEvent(wire.text, request)
    elif isinstance(wire, Done):
        yield RequestUsage(request, wire.turn.usage, wire.turn.finish_reason)
        yield from (ToolCallEvent(call, request) for call in wire.turn.tool_calls)


__all__ = [
    "AgentEvent",
    "ReasoningEvent",
    "RequestUsage",
    "ResultEvent",
    "RunResult",
    "TextEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "agent_events",
    "dialect_messages",
    "message_json",
    "total_usage",
]
