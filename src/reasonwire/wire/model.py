"""Neutral types shared by every wire dialect.

Everything above ``wire/`` speaks in these types only. A provider difference is carried as
data (a :data:`DialectName` tag, a carrier ``kind``, a field profile), never as a branch on a
provider name somewhere else.

Carriers are sacred: :class:`Carrier.value` is the exact JSON value that arrived (same keys,
same key order, same strings). Nothing in reasonwire re-encodes or normalises it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

JSON: TypeAlias = Any
"""A decoded JSON value (dict, list, str, int, float, bool or None).

This alias and :data:`JsonObject` are the one place where reasonwire admits a value whose type
is not known statically: bytes off the wire, a record read back, a request body a client sent.
Code reads such values with checks at the point of use; everything else is typed."""

JsonObject: TypeAlias = dict[str, JSON]
"""A decoded JSON object (a request or response body, an SSE event, a record line)."""

DialectName: TypeAlias = str
"""A dialect's registry name (``chat``, ``responses``, ``anthropic``, ``gemini``,
``interactions``, or one a test registers); :func:`reasonwire.wire.get_dialect` turns it into
the :class:`Dialect` object."""

DIALECTS: tuple[DialectName, ...] = ("chat", "responses", "anthropic", "gemini", "interactions")
"""The built-in dialects, in detection order."""


class _Absent:
    """Sentinel for "the field was not there", distinct from a JSON ``null``."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


def canonical_text(value: JSON) -> str:
    """Compact JSON text of ``value`` preserving key order and non-ASCII characters (the
    form tool-call arguments are written in)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def canonical_bytes(value: JSON) -> bytes:
    """Compact JSON bytes of ``value`` preserving key order, for sizes and hashes."""
    return canonical_text(value).encode("utf-8")


# --------------------------------------------------------------------------------------------
# Carriers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Carrier:
    """One field that carries reasoning state between requests.

    ``kind`` names the wire field or item type (``reasoning_content``, ``reasoning``,
    ``reasoning_details``, ``extra_content``, ``reasoning_item``, ``thinking``,
    ``redacted_thinking``, ``thought``, ``thoughtSignature``). ``path`` says where it sat in
    the response, JSON-path style (``choices[0].message.reasoning_content``). ``value`` is the
    exact JSON value as received and is what a replay sends back. ``opaque`` marks state the
    client cannot read (signatures, encrypted content); ``text`` is the readable reasoning
    text the carrier holds, if any. ``tool_call_id`` links a carrier that rides on a tool call.
    """

    dialect: DialectName
    kind: str
    path: str
    value: JSON
    opaque: bool
    text: str | None = None
    tool_call_id: str | None = None

    @property
    def size(self) -> int:
        """UTF-8 byte size of the carrier value (a string's own bytes, else compact JSON)."""
        if isinstance(self.value, str):
            return len(self.value.encode("utf-8"))
        return len(canonical_bytes(self.value))

    @property
    def digest(self) -> str:
        """A short, stable hash of the value, safe to print for opaque carriers."""
        raw = (
            self.value.encode("utf-8")
            if isinstance(self.value, str)
            else canonical_bytes(self.value)
        )
        return hashlib.sha256(raw).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# Transcript
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call: name, description and a JSON schema for arguments."""

    name: str
    description: str = ""
    parameters: JSON = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call the model made. ``arguments`` is JSON text exactly as received."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> JSON:
        """The arguments decoded, or ``{}`` when the model sent nothing."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


@dataclass(frozen=True, slots=True)
class Native:
    """A dialect's own assistant payload, kept verbatim for replay.

    chat: ``[assistant_message]``; responses: the output items; anthropic: the content blocks;
    gemini: the content parts. Replaying to the same dialect sends these values unchanged.
    """

    dialect: DialectName
    items: tuple[JSON, ...]


@dataclass(frozen=True, slots=True)
class System:
    text: str
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True)
class User:
    text: str
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class Assistant:
    """An assistant turn: visible text, tool calls, and the reasoning carriers it holds.

    When ``native`` is set and the request is built for the same dialect, the native payload
    is sent as received (carriers included or stripped on request). Otherwise the message is
    built from ``text``, ``tool_calls`` and the text carriers in ``carriers``.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    carriers: tuple[Carrier, ...] = ()
    native: Native | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_call_id: str
    name: str
    content: str
    role: Literal["tool"] = "tool"


Message: TypeAlias = System | User | Assistant | ToolResult


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What a request asks for beyond the transcript.

    ``effort`` is the neutral level (``none``, ``low``, ``medium``, ``high`` or a value passed
    through as written); each dialect maps it to its own field. ``extra_body`` is merged into
    the top level of the body last, so callers can set any field the dialect does not model.
    ``keep_carriers`` False sends every assistant turn stripped of reasoning carriers.
    """

    model: str
    max_tokens: int | None = None
    effort: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    stream: bool = False
    extra_body: Mapping[str, JSON] = field(default_factory=dict)
    keep_carriers: bool = True


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage normalised across dialects. Absent figures stay ``None``, never 0.

    ``input_uncached`` + ``cache_read`` + ``cache_write`` is the billed input: a dialect that
    reports cached tokens inside its prompt total has them subtracted into ``cache_read``.
    """

    input_uncached: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    output: int | None = None
    reasoning: int | None = None
    cost_usd: float | None = None
    raw: JSON = None

    @property
    def billed_input(self) -> int | None:
        parts = [
            p for p in (self.input_uncached, self.cache_read, self.cache_write) if p is not None
        ]
        return sum(parts) if parts else None

    def as_dict(self) -> dict[str, int | float | None]:
        return {
            "input_uncached": self.input_uncached,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "billed_input": self.billed_input,
            "output": self.output,
            "reasoning": self.reasoning,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True, slots=True)
class Turn:
    """One model answer, from a non-streaming body or an assembled stream.

    ``raw`` is the response body (non-streaming) or the final assembled state (streaming).
    ``native`` holds the dialect's assistant payload for replay.
    """

    dialect: DialectName
    text: str
    reasoning_text: str
    tool_calls: tuple[ToolCall, ...]
    carriers: tuple[Carrier, ...]
    usage: Usage | None
    response_id: str | None
    model: str | None
    finish_reason: str | None
    native: Native
    raw: JSON = None

    def as_message(self) -> Assistant:
        """The assistant message to append to a transcript for the next request."""
        return Assistant(
            text=self.text,
            tool_calls=self.tool_calls,
            carriers=self.carriers,
            native=self.native,
        )


# --------------------------------------------------------------------------------------------
# Stream events
# --------------------------------------------------------------------------------------------


# The three delta events are built once per streamed event, hundreds of thousands of times
# per long stream: they are slotted but not frozen, which makes construction ~2.5x cheaper.


@dataclass(slots=True)
class TextDelta:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True)
class ReasoningDelta:
    text: str
    type: Literal["reasoning"] = "reasoning"


@dataclass(slots=True)
class ToolCallDelta:
    index: int
    id: str | None
    name: str | None
    arguments: str
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class CarrierComplete:
    carrier: Carrier
    type: Literal["carrier"] = "carrier"


@dataclass(frozen=True, slots=True)
class UsageEvent:
    usage: Usage
    type: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class StreamError:
    """The provider reported an error inside the stream (the HTTP status was already 200)."""

    message: str
    raw: JSON = None
    type: Literal["error"] = "error"


@dataclass(frozen=True, slots=True)
class Done:
    turn: Turn
    type: Literal["done"] = "done"


StreamEvent: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallDelta | CarrierComplete | UsageEvent | StreamError | Done
)


def native_items(message: Assistant | Turn, dialect: DialectName) -> tuple[JSON, ...] | None:
    """The message's native payload when it came from ``dialect`` (what a replay to the same
    dialect sends as received); None for a turn of another dialect or one built by hand."""
    native = message.native
    return native.items if native is not None and native.dialect == dialect else None


def tool_results(messages: Sequence[Message]) -> list[ToolResult]:
    """The tool results in a transcript, in order (a small helper for dialect builders)."""
    return [m for m in messages if isinstance(m, ToolResult)]
