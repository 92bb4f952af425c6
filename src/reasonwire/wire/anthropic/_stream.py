"""Anthropic Messages: incremental decoder for a streamed (SSE) response.

Events: ``message_start`` (the message shell and first usage), ``content_block_start``,
``content_block_delta`` (``thinking_delta``, ``signature_delta``, ``text_delta``,
``input_json_delta``, ``citations_delta``), ``content_block_stop``, ``message_delta``
(stop reason, cumulative usage), ``message_stop``, ``ping`` and ``error``.

Blocks are assembled in the object that ``content_block_start`` delivered, by appending delta
strings to its fields. The API opens a thinking block as
``{"type":"thinking","thinking":"","signature":""}``, so the finished block has the same keys
in the same order as the block of a non-streamed answer, and the signature string is the
concatenation of the ``signature_delta`` pieces, unchanged. A signature-only thinking block
(``thinking.display: "omitted"``) gets no ``thinking_delta`` and keeps its empty text.

``input_json_delta`` fragments are joined and decoded once at ``content_block_stop``, into the
``input`` key the block was opened with (so the key keeps its place). Every block opened with an
``input`` object takes them: a client ``tool_use`` and a server tool's ``server_tool_use``
(code execution, web search, the advisor tool) both stream their input this way. Only a
``tool_use`` is a call the agent runs (a :class:`ToolCallDelta`); a ``server_tool_use`` ran on
the provider's side and, like the ``*_tool_result`` block that follows it (delivered whole in
its ``content_block_start``), is kept as received in the native content for replay.

The final turn is built by :func:`turn_from_message` from the assembled message, the same
function the non-streaming parser uses, so both paths give the same turn for the same answer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire import jsonload, model
from reasonwire.wire.anthropic._parse import carrier_for, turn_from_message, usage_from
from reasonwire.wire.model import JSON, CarrierComplete, ReasoningDelta, TextDelta, ToolCallDelta
from reasonwire.wire.projection import Parsed
from reasonwire.wire.runs import cut_around, take
from reasonwire.wire.sse import RawEvent, SSEDecoder, event_name
from reasonwire.wire.stream_base import BatchedSSEDecoder, Events

_DELTA_FIELDS = {"thinking_delta": "thinking", "signature_delta": "signature", "text_delta": "text"}
_RUN_DELTAS: dict[str, Callable[[str], model.StreamEvent]] = {
    "thinking_delta": ReasoningDelta,
    "text_delta": TextDelta,
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Run:
    """A delta event's bytes around its one string (``prefix`` ends with the string's
    opening quote, ``suffix`` starts with its closing one), learned from an event this
    decoder parsed: block ``index``'s ``key`` grows by the string, as ``delta`` events."""

    prefix: bytes
    suffix: bytes
    index: int
    key: str
    delta: Callable[[str], model.StreamEvent]


class AnthropicStreamDecoder(BatchedSSEDecoder):
    """Bytes of one streamed Messages response in, neutral events out.

    ``UsageEvent`` carries the running usage (``message_start`` figures, then merged with each
    ``message_delta``); the last one is the total, do not sum them. ``ToolCallDelta.index`` is
    the ordinal of the tool call among the turn's tool calls, not the content block index.
    """

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._message: model.JsonObject = {}
        self._blocks: dict[int, model.JsonObject] = {}
        self._closed_blocks: set[int] = set()
        self._json_parts: dict[int, list[str]] = {}
        self._tool_ordinal: dict[int, int] = {}
        self._finished = False
        self._error: model.StreamError | None = None
        self._pieces: dict[int, dict[str, list[str]]] = {}
        self._guard = jsonload.StreamGuard()
        self._runs: list[_Run] = []

    # -- protocol --------------------------------------------------------------------------

    def _batch(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """One batch of events (``parsed``: their objects, None where one was not read: read
        here). A batch whose events are all one learned delta shape (the long runs of
        thinking, then of text, that make up an answer) is taken by :meth:`_run`; any other
        batch event by event, the shapes learned again from its last events."""
        if not events:
            return []
        out: Events = []
        if self._run(events, out):
            return out
        if parsed is None:
            for event in events:
                out.extend(self._on_event(event, loads))
            self._learn(events[-2:], None)
        else:
            for event, ready in zip(events, parsed, strict=True):
                out.extend(self._on_event(event, loads, ready))
            self._learn(events[-2:], parsed[-2:])
        return out

    def _run(self, events: list[RawEvent], out: Events) -> bool:
        """Take a batch whose payloads all have one learned shape at once, with the pieces
        and deltas :meth:`_on_block_delta` would give; False to decline. Proof as for the
        chat decoder's runs: every payload starts with the prefix and ends with the suffix,
        and the joined middles hold no quote, backslash or control byte, so each middle is a
        plain string (:func:`reasonwire.wire.runs.middles`)."""
        if not self._runs or self._finished:
            return False
        taken = take(self._runs, [e[0] for e in events])
        if taken is None:
            return False
        run, pieces = taken
        pending = self._pieces.get(run.index, {}).get(run.key)
        if pending is None:
            return False
        pending.extend(pieces)
        out.extend(map(run.delta, filter(None, pieces)))
        return True

    def _learn(self, events: list[RawEvent], parsed: Parsed | None) -> None:
        """The shapes of the last events of a batch just parsed (their blocks are open);
        ``parsed``: their objects as :meth:`_on_event` took them (None: read here)."""
        self._runs = []
        for at, (data, *_) in enumerate(events):
            payload = parsed[at] if parsed is not None else None
            try:
                if payload is None:
                    payload = json.loads(data)
            except ValueError:
                continue
            delta = payload.get("delta") if type(payload) is dict else None
            if (
                type(delta) is not dict
                or payload.get("type") != "content_block_delta"
                or type(payload.get("index")) is not int
                or delta.get("type") not in _RUN_DELTAS
            ):
                continue
            key = _DELTA_FIELDS[delta["type"]]
            piece = delta.get(key)
            if not isinstance(piece, str) or payload["index"] in self._closed_blocks:
                continue
            cut = cut_around(data, piece)
            if cut is None:
                continue
            prefix, suffix = cut
            if any(prefix.startswith(r.prefix) or r.prefix.startswith(prefix) for r in self._runs):
                continue
            self._runs.append(
                _Run(prefix, suffix, payload["index"], key, _RUN_DELTAS[delta["type"]])
            )

    def _last(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """The events framed at the stream's end (``parsed``: their objects, or None)."""
        out: Events = []
        given = iter(parsed) if parsed is not None else None
        for event in events:
            try:
                out.extend(self._on_event(event, loads, next(given) if given is not None else None))
            except MalformedBody as exc:
                if self._finished:
                    raise
                # An event without its closing blank line, cut mid-payload: the connection
                # dropped, which is a truncation, not a malformed answer.
                raise TruncatedStream(
                    f"anthropic stream: cut off inside its last event ({exc})",
                    partial=self.partial_turn(),
                ) from None
        return out

    def _unfinished(self) -> str | None:
        if self._finished:
            return None
        why = (
            f"the provider reported an error ({self._error.message})"
            if self._error is not None
            else "the stream ended"
        )
        return f"anthropic stream: {why} before message_stop"

    def partial_turn(self) -> model.Turn:
        """What has arrived so far.

        Only finished blocks go into ``native``, ``carriers`` and ``tool_calls`` (a thinking
        block without its signature, or half a tool input, cannot be replayed or run); the
        text and reasoning text of an unfinished block are included.
        """
        self._join_all()
        done = [self._blocks[i] for i in sorted(self._blocks) if i in self._closed_blocks]
        turn = turn_from_message(self._assembled(done))
        text: list[str] = []
        reasoning: list[str] = []
        for i in sorted(self._blocks):
            block = self._blocks[i]
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                text.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                reasoning.append(block["thinking"])
        return dataclasses.replace(turn, text="".join(text), reasoning_text="".join(reasoning))

    # -- internals -------------------------------------------------------------------------

    def _assembled(self, blocks: list[model.JsonObject]) -> model.JsonObject:
        """The message in the non-streaming body's shape, holding ``blocks``."""
        message = dict(self._message)
        message["content"] = blocks
        return message

    def _join(self, index: int) -> None:
        """Write the pieces streamed into block ``index`` so far into its fields."""
        pending = self._pieces.pop(index, None)
        if pending:
            block = self._blocks[index]
            for key, pieces in pending.items():
                block[key] = "".join(pieces)

    def _join_all(self) -> None:
        for index in list(self._pieces):
            self._join(index)

    def _final_turn(self) -> model.Turn:
        self._join_all()
        for index in sorted(self._blocks):
            if index not in self._closed_blocks:
                self._stop_block(index, "message_stop")
        return turn_from_message(self._assembled([self._blocks[i] for i in sorted(self._blocks)]))

    def _on_event(
        self, event: RawEvent, loads: Callable[[bytes], JSON], ready: JSON = None
    ) -> Events:
        """One event (``ready``: its object as ``loads`` reads it, None: read here)."""
        data, name, _, _ = event
        payload = ready
        if payload is None:
            try:
                payload = loads(data)
            except ValueError:
                payload = _text_payload(data, name)
        if type(payload) is not dict:
            raise MalformedBody(
                f"anthropic stream: {event_name(name)!r} event data is not an object"
            )
        kind = payload.get("type")
        if kind is None and "type" not in payload:
            kind = event_name(name)
        if self._finished:
            return []
        handler = _HANDLERS.get(kind) if type(kind) is str else None
        return handler(self, payload) if handler is not None else []

    def _on_message_start(self, payload: model.JsonObject) -> Events:
        message = payload.get("message")
        if not isinstance(message, dict):
            raise MalformedBody("anthropic stream: message_start without a message object")
        self._message = message
        usage = usage_from(message.get("usage"))
        return [model.UsageEvent(usage)] if usage is not None else []

    def _block(self, payload: model.JsonObject, kind: str) -> tuple[int, model.JsonObject]:
        index = payload.get("index")
        if not isinstance(index, int) or index not in self._blocks:
            raise MalformedBody(f"anthropic stream: {kind} for unknown content block {index!r}")
        return index, self._blocks[index]

    def _on_block_start(self, payload: model.JsonObject) -> Events:
        index = payload.get("index")
        block = payload.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            raise MalformedBody("anthropic stream: content_block_start without index/block")
        self._blocks[index] = block
        if block.get("type") == "tool_use" or isinstance(block.get("input"), dict):
            self._json_parts[index] = []
        if block.get("type") != "tool_use":
            return []
        ordinal = len(self._tool_ordinal)
        self._tool_ordinal[index] = ordinal
        return [ToolCallDelta(ordinal, block.get("id"), block.get("name"), "")]

    def _on_block_delta(self, payload: model.JsonObject) -> Events:
        index, block = self._block(payload, "content_block_delta")
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            raise MalformedBody("anthropic stream: content_block_delta without a delta object")
        kind = delta.get("type")
        if kind in _DELTA_FIELDS:
            key = _DELTA_FIELDS[kind]
            piece = delta.get(key)
            if not isinstance(piece, str):
                raise MalformedBody(f"anthropic stream: {kind} without a string {key!r}")
            # pieces are joined when the block is read (see _join): appending to the field on
            # every delta would copy the whole text each time
            pending = self._pieces.get(index)
            if pending is None:
                pending = self._pieces[index] = {}
            pieces = pending.get(key)
            if pieces is None:
                previous = block.get(key)
                pending[key] = [previous, piece] if isinstance(previous, str) else [piece]
                if key not in block:
                    block[key] = piece  # the key takes its place now, as it did before
            else:
                pieces.append(piece)
            if not piece:
                return []
            if kind == "thinking_delta":
                return [ReasoningDelta(piece)]
            if kind == "text_delta":
                return [TextDelta(piece)]
            return []
        if kind == "input_json_delta":
            piece = delta.get("partial_json")
            if not isinstance(piece, str) or index not in self._json_parts:
                raise MalformedBody(
                    "anthropic stream: input_json_delta outside a block opened with an input"
                )
            self._json_parts[index].append(piece)
            ordinal = self._tool_ordinal.get(index)
            if ordinal is None or not piece:
                return []  # a server tool's input: not a call for the agent
            return [ToolCallDelta(ordinal, None, None, piece)]
        if kind == "citations_delta" and "citation" in delta:
            citations = block.get("citations")
            if not isinstance(citations, list):
                citations = block["citations"] = []
            citations.append(delta["citation"])
        return []

    def _stop_block(self, index: int, where: str) -> Events:
        self._join(index)
        block = self._blocks[index]
        self._closed_blocks.add(index)
        parts = self._json_parts.pop(index, None)
        if parts is not None:
            raw = "".join(parts)
            try:
                block["input"] = jsonload.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                raise MalformedBody(
                    f"anthropic stream: {block.get('type')} input of block {index} is not valid "
                    f"JSON at "
                    f"{where} ({exc})"
                ) from None
        carrier = carrier_for(block, f"content[{sorted(self._blocks).index(index)}]")
        return [CarrierComplete(carrier)] if carrier is not None else []

    def _on_block_stop(self, payload: model.JsonObject) -> Events:
        index, _ = self._block(payload, "content_block_stop")
        return self._stop_block(index, "content_block_stop")

    def _on_message_delta(self, payload: model.JsonObject) -> Events:
        delta = payload.get("delta")
        if isinstance(delta, dict):
            self._message.update(delta)
        for key, value in payload.items():
            if key not in ("type", "delta", "usage"):
                self._message[key] = value
        extra = payload.get("usage")
        if not isinstance(extra, dict):
            return []
        # message_delta's figures are cumulative: they win wherever they are present.
        current = self._message.get("usage")
        merged = dict(current) if isinstance(current, dict) else {}
        merged.update({k: v for k, v in extra.items() if v is not None})
        self._message["usage"] = merged
        usage = usage_from(merged)
        return [model.UsageEvent(usage)] if usage is not None else []

    def _on_message_stop(self, payload: model.JsonObject) -> Events:
        self._finished = True
        return []

    def _on_error(self, payload: model.JsonObject) -> Events:
        err = payload.get("error")
        err = err if isinstance(err, dict) else {}
        message = f"{err.get('type', 'error')}: {err.get('message', '(no message)')}"
        self._error = model.StreamError(message, raw=payload)
        return [self._error]


def _text_payload(raw: bytes, name: bytes | None) -> JSON:
    """The payload by the stdlib rules on the decoded text."""
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        raise MalformedBody(
            f"anthropic stream: {event_name(name)!r} event data is not valid JSON ({exc})"
        ) from None


_HANDLERS: dict[str, Callable[[AnthropicStreamDecoder, model.JsonObject], Events]] = {
    "message_start": AnthropicStreamDecoder._on_message_start,
    "content_block_start": AnthropicStreamDecoder._on_block_start,
    "content_block_delta": AnthropicStreamDecoder._on_block_delta,
    "content_block_stop": AnthropicStreamDecoder._on_block_stop,
    "message_delta": AnthropicStreamDecoder._on_message_delta,
    "message_stop": AnthropicStreamDecoder._on_message_stop,
    "error": AnthropicStreamDecoder._on_error,
}
