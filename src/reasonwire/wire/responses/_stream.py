"""Responses API stream decoder: SSE bytes in, neutral events out.

What the stream says and what we trust:

- ``response.output_item.added`` opens an item. A reasoning item may already carry an
  ``encrypted_content`` here that is *incomplete*; it is never used. Carriers come from
  ``response.output_item.done`` (the final item) and the Turn from ``response.completed``.
- ``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta`` are reasoning,
  ``response.output_text.delta`` visible text, ``response.function_call_arguments.delta`` tool
  arguments. The ``obfuscation`` field that rides on deltas is padding, not content.
- ``response.completed`` holds the final response object (usage, status, the output list).
  The Turn is built from it with the same code as a non-streaming body, except that each
  output item is taken from its ``response.output_item.done`` event when that event came:
  the provider re-encrypts ``encrypted_content`` per serialisation, and the done copy is the
  one announced as a carrier (and the one recorded clients replay successfully).
  ``Turn.raw`` is the completed response with its output replaced by those items.
- ``response.failed`` and ``response.incomplete`` are terminal: a :class:`StreamError` is
  emitted and ``close`` still ends in ``Done`` with the turn the provider reported (finish
  reason ``failed`` or the incomplete reason). An ``error`` event is emitted as
  :class:`StreamError`; if no terminal event follows, ``close`` raises
  :class:`TruncatedStream` naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Final

from reasonwire.errors import MalformedBody
from reasonwire.wire import jsonload, model
from reasonwire.wire.model import JSON, CarrierComplete, ReasoningDelta, TextDelta, ToolCallDelta
from reasonwire.wire.projection import Parsed
from reasonwire.wire.responses._parse import (
    CARRIER_KIND,
    TEXT_JOIN,
    arguments_text,
    turn_from_items,
)
from reasonwire.wire.runs import Template, learn_template
from reasonwire.wire.sse import RawEvent, SSEDecoder, event_name
from reasonwire.wire.stream_base import BatchedSSEDecoder, Events

_MAX_SHAPES: Final = 4  # a stream has two or three uniform shapes (summary, reasoning, text)
_MAX_TRIES: Final = 16  # batches the general path may learn from (learning parses again)
_HOLES: Final = ("sequence_number", "delta", "obfuscation")
"""The fields that vary from one text-piece event to the next (the rest repeats)."""


@dataclass
class _Slot:
    """One output item being assembled, by output_index."""

    added: model.JsonObject
    done: model.JsonObject | None = None
    # streamed pieces by part index, joined only when asked (joining on every delta would
    # make assembly quadratic in the answer's length)
    text: dict[int, list[str]] = field(default_factory=dict)
    summary: dict[int, list[str]] = field(default_factory=dict)
    content: dict[int, list[str]] = field(default_factory=dict)
    arguments: str = ""
    call_index: int | None = None

    def partial_item(self) -> model.JsonObject | None:
        """The item as assembled so far; None for an unfinished reasoning item (its
        encrypted content cannot be trusted, so it must never be replayed)."""
        if self.done is not None:
            return self.done
        typ = self.added.get("type")
        if typ == "message":
            parts = [
                {"type": "output_text", "text": "".join(self.text[k])} for k in sorted(self.text)
            ]
            return {**self.added, "content": parts}
        if typ == "function_call":
            return {**self.added, "arguments": self.arguments}
        return None

    def partial_reasoning(self) -> str:
        """Readable text streamed so far for an unfinished reasoning item."""
        if self.done is not None or self.added.get("type") != "reasoning":
            return ""
        texts = ["".join(self.summary[k]) for k in sorted(self.summary)]
        texts += ["".join(self.content[k]) for k in sorted(self.content)]
        return TEXT_JOIN.join(t for t in texts if t)


@dataclass(frozen=True, slots=True)
class _Shape:
    """A text-piece event's bytes learned as a :class:`Template` (holes: the sequence number,
    the delta, the obfuscation string), with what the literal bytes fix: which part list of
    which slot the delta goes to and the event it makes (see ``_PIECES``)."""

    template: Template
    which: str
    index: int
    part: int
    event: type[TextDelta] | type[ReasoningDelta]


class ResponsesStreamDecoder(BatchedSSEDecoder):
    """Incremental decoder for one streamed Responses answer (any split of the bytes)."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._response: model.JsonObject = {}
        self._slots: dict[int, _Slot] = {}
        self._by_item_id: dict[str, int] = {}
        self._calls = 0
        self._emitted_carriers: set[str] = set()
        self._errors: list[str] = []
        self._final: model.Turn | None = None
        self._guard = jsonload.StreamGuard()
        self._shapes: list[_Shape] = []
        self._tries = 0
        self.bulk_events = 0
        """Events :meth:`_run` took in bulk (a measure of its fast path, for tests)."""

    # -- protocol ------------------------------------------------------------------------

    def _batch(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """One batch of events. A batch whose events all have one learned shape (the long
        runs of reasoning, then of text, that make up an answer) is taken by :meth:`_run`;
        any other batch by the general path, which also learns the shapes."""
        if not events:
            return []
        out: Events = []
        if self._run(events, out):
            return out
        out = self._events(events, loads, parsed)
        if self._tries < _MAX_TRIES and len(self._shapes) < _MAX_SHAPES:
            self._tries += 1
            self._learn(events, parsed)
        return out

    def _run(self, events: list[RawEvent], out: Events) -> bool:
        """Take a batch whose payloads are all one learned shape: the pieces and events
        :meth:`_events` would give (its inline text-piece branch); False to decline. The
        proof: :meth:`reasonwire.wire.runs.Template.captured`."""
        if not self._shapes or self._final is not None:
            return False
        datas = [e[0] for e in events]
        first = datas[0]
        for shape in self._shapes:
            if not first.startswith(shape.template.head):
                continue
            pieces = shape.template.captured(datas)
            if pieces is None:
                continue
            slot = self._slots.get(shape.index)
            if slot is not None:
                parts: dict[int, list[str]] = getattr(slot, shape.which)
                parts.setdefault(shape.part, []).extend(pieces)
            out.extend(map(shape.event, filter(None, pieces)))
            self.bulk_events += len(datas)
            return True
        return False

    def _learn(self, events: list[RawEvent], parsed: Parsed | None) -> None:
        """Learn the shape of the last payload of a batch just parsed when it is a text piece
        the inline branch of :meth:`_events` takes (integer ``output_index``, string delta).
        ``parsed``: the events' objects as :meth:`_events` took them (or None)."""
        data = events[-1][0]
        payload = parsed[-1] if parsed is not None else None
        try:
            if payload is None:
                payload = jsonload.loads(data)
        except ValueError:
            return
        if type(payload) is not dict:
            return
        typ = payload.get("type")
        kind = _PIECES.get(typ) if type(typ) is str else None
        idx = payload.get("output_index")
        if kind is None or type(idx) is not int or type(payload.get("delta")) is not str:
            return
        if any(
            data.startswith(sh.template.head) and sh.template.captured([data])
            for sh in self._shapes
        ):
            return
        holes = [h for h in _HOLES if h in payload]
        template = learn_template(data, payload, holes, "delta", jsonload.loads)
        if template is None:
            return
        which, index_key, event = kind
        k = payload.get(index_key)
        self._shapes.append(_Shape(template, which, idx, k if type(k) is int else 0, event))

    def _unfinished(self) -> str | None:
        if self._final is not None:
            return None
        why = f"; last provider error: {self._errors[-1]}" if self._errors else ""
        return (
            "responses: stream ended before response.completed"
            f" (or response.failed/response.incomplete){why}"
        )

    def partial_turn(self) -> model.Turn:
        if self._final is not None:
            return self._final
        items: list[JSON] = []
        extra: list[str] = []
        for idx in sorted(self._slots):
            slot = self._slots[idx]
            item = slot.partial_item()
            if item is not None:
                items.append(item)
            extra.append(slot.partial_reasoning())
        response = {**self._response, "status": "in_progress", "output": items}
        return turn_from_items(items, response, extra_reasoning=extra)

    # -- events --------------------------------------------------------------------------

    def _last(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        return self._events(events, loads, parsed)

    def _events(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None = None
    ) -> Events:
        """The hot path: orjson on the raw bytes; what it cannot vouch for (``[DONE]``, odd
        payloads, long digit runs) goes through :meth:`_text_payload`. ``parsed``: the
        events' objects as ``loads`` reads them, None where one was not read (read here).

        Text pieces (``_PIECES``: the bulk of any long answer) with an integer
        ``output_index`` are recorded inline, exactly as :meth:`_piece` records them (same
        part list, same event, a known index that has no slot still emits); everything else
        goes through its handler.
        """
        out: Events = []
        handlers = _HANDLERS
        pieces_of = _PIECES
        slots = self._slots
        given = iter(parsed) if parsed is not None else None
        for data, name, _, _ in events:
            payload = next(given) if given is not None else None
            if payload is None:
                try:
                    payload = loads(data)
                except ValueError:
                    payload = self._text_payload(data, name)
                    if payload is None:
                        continue
            if type(payload) is not dict:
                raise MalformedBody(
                    f"responses: payload of SSE event {event_name(name)!r} is not an object"
                )
            typ = payload.get("type")
            if type(typ) is not str:
                typ = event_name(name)
            if self._final is not None:
                continue  # nothing after the terminal event changes the answer
            kind = pieces_of.get(typ)
            if kind is not None:
                delta = payload.get("delta")
                idx = payload.get("output_index")
                if type(delta) is str and type(idx) is int:
                    which, index_key, event = kind
                    slot = slots.get(idx)
                    if slot is not None:
                        k = payload.get(index_key)
                        if type(k) is not int:
                            k = 0
                        parts: dict[int, list[str]] = getattr(slot, which)
                        pieces = parts.get(k)
                        if pieces is None:
                            parts[k] = [delta]
                        else:
                            pieces.append(delta)
                    if delta:
                        out.append(event(delta))
                    continue
            handler = handlers.get(typ)
            if handler is not None:
                out.extend(handler(self, payload))
        return out

    @staticmethod
    def _text_payload(raw: bytes, name: bytes | None) -> JSON:
        """The payload by the stdlib rules on the decoded text; None for ``[DONE]``."""
        data = raw.decode("utf-8", "replace")
        if data.strip() == "[DONE]":
            return None
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedBody(
                f"responses: payload of SSE event {event_name(name)!r} is not JSON: {exc}"
            ) from None

    def _on_response(self, p: model.JsonObject) -> Events:
        resp = p.get("response")
        if isinstance(resp, dict):
            self._response = resp
        return []

    def _slot_index(self, p: model.JsonObject) -> int | None:
        idx = p.get("output_index")
        if isinstance(idx, int) and not isinstance(idx, bool):
            return idx
        item_id = p.get("item_id")
        if not isinstance(item_id, str):
            item = p.get("item")
            item_id = item.get("id") if isinstance(item, dict) else None
        return self._by_item_id.get(item_id) if isinstance(item_id, str) else None

    def _item(self, p: model.JsonObject, what: str) -> model.JsonObject:
        item = p.get("item")
        if not isinstance(item, dict):
            raise MalformedBody(f"responses: {what} event without an item object")
        return item

    def _on_added(self, p: model.JsonObject) -> Events:
        item = self._item(p, "response.output_item.added")
        idx = self._slot_index(p)
        if idx is None:
            idx = max(self._slots, default=-1) + 1
        slot = _Slot(added=item)
        self._slots[idx] = slot
        if isinstance(item.get("id"), str):
            self._by_item_id[item["id"]] = idx
        if item.get("type") == "function_call":
            return [self._open_call(slot, item)]
        return []

    def _open_call(self, slot: _Slot, item: model.JsonObject) -> ToolCallDelta:
        slot.call_index = self._calls
        self._calls += 1
        args = arguments_text(item.get("arguments"))
        slot.arguments = args
        call_id = item.get("call_id")
        name = item.get("name")
        return ToolCallDelta(
            index=slot.call_index,
            id=call_id if isinstance(call_id, str) else None,
            name=name if isinstance(name, str) else None,
            arguments=args,
        )

    def _delta(self, p: model.JsonObject) -> tuple[_Slot | None, str]:
        delta = p.get("delta")
        if not isinstance(delta, str):
            return None, ""
        idx = self._slot_index(p)
        return (self._slots.get(idx) if idx is not None else None), delta

    def _piece(self, p: model.JsonObject, which: str, index_key: str) -> str:
        """Record one streamed text piece in its slot (if known); return the piece."""
        delta = p.get("delta")
        if type(delta) is not str:
            return ""
        idx = p.get("output_index")
        slot = self._slots.get(idx) if type(idx) is int else None
        if slot is None and type(idx) is not int:
            found = self._slot_index(p)
            slot = self._slots.get(found) if found is not None else None
        if slot is not None:
            k = p.get(index_key)
            if type(k) is not int:
                k = 0
            parts: dict[int, list[str]] = getattr(slot, which)
            pieces = parts.get(k)
            if pieces is None:
                parts[k] = [delta]
            else:
                pieces.append(delta)
        return delta

    def _on_summary_delta(self, p: model.JsonObject) -> Events:
        delta = self._piece(p, "summary", "summary_index")
        return [ReasoningDelta(delta)] if delta else []

    def _on_reasoning_delta(self, p: model.JsonObject) -> Events:
        delta = self._piece(p, "content", "content_index")
        return [ReasoningDelta(delta)] if delta else []

    def _on_text_delta(self, p: model.JsonObject) -> Events:
        delta = self._piece(p, "text", "content_index")
        return [TextDelta(delta)] if delta else []

    def _on_args_delta(self, p: model.JsonObject) -> Events:
        slot, delta = self._delta(p)
        if slot is None or slot.call_index is None or not delta:
            return []
        slot.arguments += delta
        return [ToolCallDelta(index=slot.call_index, id=None, name=None, arguments=delta)]

    def _on_done(self, p: model.JsonObject) -> Events:
        item = self._item(p, "response.output_item.done")
        idx = self._slot_index(p)
        out: Events = []
        if idx is None or idx not in self._slots:
            idx = idx if idx is not None else max(self._slots, default=-1) + 1
            self._slots[idx] = _Slot(added=item)
            if item.get("type") == "function_call":
                out.append(self._open_call(self._slots[idx], item))
        self._slots[idx].done = item
        if item.get("type") == "reasoning":
            turn = turn_from_items([item], {})
            carrier = turn.carriers[0]
            out.append(CarrierComplete(replace(carrier, path=f"output[{idx}]")))
            self._emitted_carriers.add(f"output[{idx}]")
        return out

    def _on_terminal(self, p: model.JsonObject) -> Events:
        typ = p.get("type")
        resp = p.get("response")
        resp = resp if isinstance(resp, dict) else {**self._response}
        out: Events = []
        if typ == "response.failed":
            out.append(model.StreamError(_failure(resp, "response failed"), raw=p))
        elif typ == "response.incomplete":
            out.append(model.StreamError(_failure(resp, "response incomplete"), raw=p))
        done = {i: slot.done for i, slot in self._slots.items() if slot.done is not None}
        output = resp.get("output")
        if isinstance(output, list) and output:
            items = [_prefer_done(done.get(i), item) for i, item in enumerate(output)]
        else:  # some servers end with an empty output list: the done items are the answer
            items = [done[i] for i in sorted(done)]
        resp = {**resp, "output": items}
        turn = turn_from_items(items, resp)
        for c in turn.carriers:
            if c.kind == CARRIER_KIND and c.path not in self._emitted_carriers:
                out.append(CarrierComplete(c))
        if turn.usage is not None:
            out.append(model.UsageEvent(turn.usage))
        self._final = turn
        return out

    def _on_error(self, p: model.JsonObject) -> Events:
        err = p.get("error")
        src = err if isinstance(err, dict) else p
        msg = src.get("message")
        code = src.get("code")
        text = msg if isinstance(msg, str) else "provider error event"
        if isinstance(code, str):
            text = f"{code}: {text}"
        self._errors.append(text)
        return [model.StreamError(text, raw=p)]


def _prefer_done(done: model.JsonObject | None, final: JSON) -> JSON:
    """The ``output_item.done`` item when it is the same item (type and id) as ``final``.

    OpenAI re-encrypts ``encrypted_content`` each time it serialises an item, so the copy in
    ``response.completed`` differs byte-wise from the one in ``output_item.done`` (same length,
    same state). Recorded tool loops replay the ``output_item.done`` copy and are accepted; we
    keep that one so a carrier announced by :class:`CarrierComplete` is the value replayed.
    """
    if (
        isinstance(done, dict)
        and isinstance(final, dict)
        and done.get("type") == final.get("type")
        and done.get("id") == final.get("id")
    ):
        return done
    return final


def _failure(resp: model.JsonObject, default: str) -> str:
    err = resp.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])
    details = resp.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return f"{default}: {details['reason']}"
    return default


_HANDLERS = {
    "response.created": ResponsesStreamDecoder._on_response,
    "response.in_progress": ResponsesStreamDecoder._on_response,
    "response.queued": ResponsesStreamDecoder._on_response,
    "response.output_item.added": ResponsesStreamDecoder._on_added,
    "response.reasoning_summary_text.delta": ResponsesStreamDecoder._on_summary_delta,
    "response.reasoning_text.delta": ResponsesStreamDecoder._on_reasoning_delta,
    "response.output_text.delta": ResponsesStreamDecoder._on_text_delta,
    "response.function_call_arguments.delta": ResponsesStreamDecoder._on_args_delta,
    "response.output_item.done": ResponsesStreamDecoder._on_done,
    "response.completed": ResponsesStreamDecoder._on_terminal,
    "response.failed": ResponsesStreamDecoder._on_terminal,
    "response.incomplete": ResponsesStreamDecoder._on_terminal,
    "error": ResponsesStreamDecoder._on_error,
}

_PIECES: dict[str, tuple[str, str, type[TextDelta] | type[ReasoningDelta]]] = {
    "response.reasoning_summary_text.delta": ("summary", "summary_index", ReasoningDelta),
    "response.reasoning_text.delta": ("content", "content_index", ReasoningDelta),
    "response.output_text.delta": ("text", "content_index", TextDelta),
}
"""Text-piece events: which part list of the slot, which key indexes the part, the event."""
