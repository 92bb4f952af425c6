"""Incremental decoder for a streamed interaction (``stream: true``: SSE, one JSON event per
``data:`` line, each with an ``event_type``) [REC, SDK].

Assembly rule (so that the assembled steps are what the whole answer would hold, and a
replay sends every signature back on its step):

1. ``step.start {index, step}`` opens step ``index`` as a copy of ``step``, keys in order.
2. ``step.delta {index, delta}`` grows it: ``text`` is appended to the step's last text
   content item (or opens one); ``thought_summary`` appends its ``content`` item to
   ``summary`` (text joined onto a last text item); ``thought_signature`` sets the step's
   ``signature`` (the recording sends it whole, in one delta); ``arguments_delta`` pieces are
   joined and, at ``step.stop``, parsed into ``arguments`` - replacing the ``{}`` placeholder
   a streamed call opens with (the recording's call starts with ``arguments: {}``). Other
   deltas (server tool payloads) are kept whole under the step's own key.
3. ``interaction.created`` / ``interaction.status_update`` / ``interaction.completed``
   carry the interaction's top-level fields (id, status, usage); ``interaction.completed``
   is the terminal event. A stream that ends without it raises :class:`TruncatedStream`
   with the partial turn; an ``error`` event yields :class:`StreamError`.

Run path: nearly every event of a long answer is one ``step.delta`` of text (or of a thought
summary's text) on the same step, the same bytes around a different piece. After a batch
went through the general path, its last text-piece events teach their shape (the bytes
before and after the piece: :func:`~reasonwire.wire.runs.cut_around`); a later batch whose
payloads all have one shape, with plain middles (:func:`~reasonwire.wire.runs.middles`), is
those events with other pieces: each piece is appended to the step's growing text item and
its delta emitted without parsing. It applies only while that item is growing (rule 2's
pieces not yet joined); anything else goes the general way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from reasonwire.errors import MalformedBody
from reasonwire.wire import jsonload, model
from reasonwire.wire.interactions._parse import (
    parse_body,
    parse_usage,
    step_carriers,
    text_items,
    tool_call_of,
)
from reasonwire.wire.model import JSON, CarrierComplete, ReasoningDelta, TextDelta, ToolCallDelta
from reasonwire.wire.projection import Parsed
from reasonwire.wire.runs import cut_around, take
from reasonwire.wire.sse import RawEvent, SSEDecoder
from reasonwire.wire.stream_base import BatchedSSEDecoder, Events


def _open_text(items: list[JSON]) -> int:
    """The index of the text item deltas grow: the last item when it is text, else a new
    empty one appended."""
    last = items[-1] if items else None
    if not (
        isinstance(last, dict) and last.get("type") == "text" and isinstance(last.get("text"), str)
    ):
        items.append({"type": "text", "text": ""})
    return len(items) - 1


@dataclass(frozen=True, slots=True)
class _Run:
    """A text-piece event's bytes around its piece (``prefix`` ends with the piece's opening
    quote, ``suffix`` starts with its closing one), learned from a payload that was parsed:
    a ``step.delta`` of step ``index`` whose piece grows ``key`` (``content`` or
    ``summary``)."""

    prefix: bytes
    suffix: bytes
    index: int
    key: str
    delta: type[TextDelta] | type[ReasoningDelta]


def _piece_of(payload: JSON) -> tuple[int, str, str] | None:
    """``(index, key, piece)`` when ``payload`` is a text-piece ``step.delta`` that
    :meth:`InteractionsStreamDecoder._delta` appends with :meth:`~InteractionsStreamDecoder.
    _piece` (the same tests), else None."""
    if type(payload) is not dict or payload.get("event_type") != "step.delta":
        return None
    index, delta = payload.get("index"), payload.get("delta")
    if type(index) is not int or type(delta) is not dict:
        return None
    kind = delta.get("type")
    if kind == "text" and type(delta.get("text")) is str:
        return index, "content", delta["text"]
    item = delta.get("content")
    if kind == "thought_summary" and type(item) is dict and item.get("type") == "text":
        text = item.get("text")
        return (index, "summary", text) if type(text) is str else None
    return None


class InteractionsStreamDecoder(BatchedSSEDecoder):
    """Bytes of one streamed interaction in, neutral events out."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._guard = jsonload.StreamGuard()
        self._top: model.JsonObject = {}
        self._steps: dict[int, model.JsonObject] = {}
        self._args: dict[int, list[str]] = {}
        # text pieces not yet joined: (step index, "content" | "summary") -> pieces
        # (joined once, at step.stop or on assembly: appending to one string is quadratic)
        self._grow: dict[tuple[int, str], list[str]] = {}
        self._call_no: dict[int, int] = {}
        self._events = 0
        self._finished = False
        self._errors: list[str] = []
        self._runs: list[_Run] = []  # learned from the last batch parsed (module docstring)

    def _batch(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """One batch of events: the run path, else each event, then the shapes learned
        (``parsed``: the events' objects, None where one was not read: read here)."""
        out: Events = []
        if not events or self._run(events, out):
            return out
        if parsed is None:
            for raw, name, _, _ in events:
                out.extend(self._event(raw, name, loads))
            self._learn(events[-2:], None)
        else:
            for (raw, name, _, _), ready in zip(events, parsed, strict=True):
                out.extend(self._event(raw, name, loads, ready))
            self._learn(events[-2:], parsed[-2:])
        return out

    def _run(self, events: list[RawEvent], out: Events) -> bool:
        """Take a batch whose payloads all have one learned shape at once, with the pieces
        and deltas the general path would give; False to decline. The proof:
        :func:`reasonwire.wire.runs.middles` (each payload is the learned one with another
        plain string, so the general path would append it to the same growing item)."""
        if not self._runs:
            return False
        taken = take(self._runs, [e[0] for e in events])
        if taken is None:
            return False
        run, pieces = taken
        grow = self._grow.get((run.index, run.key))
        if grow is None:
            return False
        grow.extend(pieces)
        out.extend(map(run.delta, pieces))
        self._events += len(pieces)
        return True

    def _learn(self, events: list[RawEvent], parsed: Parsed | None) -> None:
        """The shapes of the last events of a batch just parsed (replacing the old ones);
        ``parsed``: their objects as :meth:`_event` took them (None: read here)."""
        self._runs = []
        for at, (raw, *_) in enumerate(events):
            ready = parsed[at] if parsed is not None else None
            try:
                found = _piece_of(ready if ready is not None else jsonload.loads(raw))
            except ValueError:
                continue
            if found is None:
                continue
            index, key, piece = found
            cut = cut_around(raw, piece)
            if cut is None:
                continue
            delta = TextDelta if key == "content" else ReasoningDelta
            self._runs.append(_Run(cut[0], cut[1], index, key, delta))

    def _last(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """The events framed at the stream's end (``parsed``: their objects, or None)."""
        out: Events = []
        given = iter(parsed) if parsed is not None else None
        for raw, name, _, _ in events:
            out.extend(self._event(raw, name, loads, next(given) if given is not None else None))
        return out

    def _unfinished(self) -> str | None:
        if self._finished:
            return None
        why = f" (stream error: {'; '.join(self._errors)})" if self._errors else ""
        return (
            f"interactions stream ended without interaction.completed after "
            f"{self._events} event(s){why}"
        )

    def partial_turn(self) -> model.Turn:
        return parse_body(self.assembled())

    def assembled(self) -> model.JsonObject:
        """The state so far in the whole answer's shape (``Turn.raw`` of a stream)."""
        body = {k: v for k, v in self._top.items() if k != "steps"}
        body.setdefault("status", "in_progress")
        steps: list[model.JsonObject] = []
        for i in sorted(self._steps):
            self._join(i, self._steps[i])
            try:
                steps.append(self._finish_args(i, dict(self._steps[i])))
            except MalformedBody:  # a call cut mid-arguments keeps its placeholder
                steps.append(dict(self._steps[i]))
        body["steps"] = steps
        return body

    # -- events ------------------------------------------------------------------------------

    def _event(
        self, raw: bytes, name: bytes | None, loads: Callable[[bytes], JSON], ready: JSON = None
    ) -> Events:
        """One event (``ready``: its object as ``loads`` reads it, None: read here)."""
        payload = ready
        if payload is None:
            try:
                payload = loads(raw)
            except ValueError:
                data = raw.decode("utf-8", "replace").strip()
                if not data or data == "[DONE]":
                    return []
                try:
                    payload = json.loads(data)
                except json.JSONDecodeError as exc:
                    raise MalformedBody(
                        f"interactions SSE event #{self._events + 1} is not JSON: {exc.msg}: "
                        f"{data[:80]!r}"
                    ) from None
        self._events += 1
        if not isinstance(payload, dict):
            raise MalformedBody(
                f"interactions stream event #{self._events} must be a JSON object, "
                f"got {type(payload).__name__}"
            )
        kind = payload.get("event_type")
        if kind == "step.start":
            return self._start(payload)
        if kind == "step.delta":
            return self._delta(payload)
        if kind == "step.stop":
            return self._stop(payload)
        if kind in ("interaction.created", "interaction.completed"):
            interaction = payload.get("interaction")
            if not isinstance(interaction, dict):
                raise MalformedBody(f"interactions {kind} event without an interaction object")
            self._top.update(interaction)
            if kind == "interaction.completed":
                self._finished = True
                usage = parse_usage(interaction.get("usage"))
                return [model.UsageEvent(usage)] if usage is not None else []
            return []
        if kind == "interaction.status_update":
            if isinstance(payload.get("status"), str):
                self._top["status"] = payload["status"]
            return []
        if kind == "error" or "error" in payload:
            err = payload.get("error")
            msg = err.get("message") if isinstance(err, dict) else err
            text = str(msg if msg is not None else payload)
            self._errors.append(text)
            return [model.StreamError(text, raw=payload)]
        return []

    def _index(self, payload: model.JsonObject) -> int:
        index = payload.get("index")
        if type(index) is not int or index < 0:
            raise MalformedBody(
                f"interactions {payload.get('event_type')} event #{self._events}: "
                f"'index' must be a non-negative integer"
            )
        return index

    def _open(self, payload: model.JsonObject) -> tuple[int, model.JsonObject]:
        index = self._index(payload)
        step = self._steps.get(index)
        if step is None:
            raise MalformedBody(
                f"interactions {payload.get('event_type')} for step {index} before its step.start"
            )
        return index, step

    def _start(self, payload: model.JsonObject) -> Events:
        index = self._index(payload)
        step = payload.get("step")
        if not isinstance(step, dict):
            raise MalformedBody(f"interactions step.start #{self._events} without a step object")
        step = dict(step)
        self._steps[index] = step
        kind = step.get("type")
        out: Events = []
        if kind == "function_call":
            number = self._call_no[index] = len(self._call_no)
            call = tool_call_of(step, index)
            args = step.get("arguments")
            out.append(ToolCallDelta(number, call.id, call.name, call.arguments if args else ""))
        elif kind == "thought":
            out.extend(ReasoningDelta(t["text"]) for t in text_items(step.get("summary")))
        elif kind == "model_output":
            out.extend(TextDelta(t["text"]) for t in text_items(step.get("content")))
        return out

    def _delta(self, payload: model.JsonObject) -> Events:
        index, step = self._open(payload)
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            raise MalformedBody(f"interactions step.delta #{self._events} without a delta object")
        kind = delta.get("type")
        if kind == "text" and isinstance(delta.get("text"), str):
            self._piece(index, step, "content", delta["text"])
            return [TextDelta(delta["text"])]
        if kind == "thought_summary" and isinstance(delta.get("content"), dict):
            item = delta["content"]
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                self._piece(index, step, "summary", item["text"])
                return [ReasoningDelta(item["text"])]
            self._join(index, step)
            step["summary"] = [*(step.get("summary") or []), item]
            return []
        if kind == "thought_signature" and isinstance(delta.get("signature"), str):
            step["signature"] = delta["signature"]
            return []
        if kind == "arguments_delta" and isinstance(delta.get("arguments"), str):
            self._args.setdefault(index, []).append(delta["arguments"])
            number = self._call_no.get(index, index)
            return [ToolCallDelta(number, None, None, delta["arguments"])]
        return []

    def _piece(self, index: int, step: model.JsonObject, key: str, text: str) -> None:
        grow = self._grow.get((index, key))
        if grow is not None:
            grow.append(text)
            return
        self._join(index, step)
        items = step[key] = list(step.get(key) or [])
        at = _open_text(items)
        self._grow[(index, key)] = [items[at]["text"], text]

    def _join(self, index: int, step: model.JsonObject) -> None:
        """Write the pending pieces of step ``index`` into its last text item."""
        for key in ("content", "summary"):
            grow = self._grow.pop((index, key), None)
            if grow is not None:
                items = step[key]
                items[-1] = {**items[-1], "text": "".join(grow)}

    def _stop(self, payload: model.JsonObject) -> Events:
        index, step = self._open(payload)
        self._join(index, step)
        step = self._steps[index] = self._finish_args(index, step)
        self._args.pop(index, None)
        call = tool_call_of(step, index) if step.get("type") == "function_call" else None
        if step.get("type") not in ("thought", "function_call"):
            return []
        return [CarrierComplete(c) for c in step_carriers(step, index, call)]

    def _finish_args(self, index: int, step: model.JsonObject) -> model.JsonObject:
        pieces = self._args.get(index)
        if not pieces:
            return step
        text = "".join(pieces)
        try:
            step["arguments"] = jsonload.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedBody(
                f"interactions step {index}: streamed arguments are not JSON: {exc.msg}"
            ) from None
        return step
