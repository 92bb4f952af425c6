"""Incremental decoder for streamed Chat Completions (``choices[0].delta`` chunks over SSE).

The decoder assembles the final state in the non-streaming body's shape and hands it to
:func:`~reasonwire.wire.chat._parse.turn_from_body`, so a stream and the same answer sent
whole give the same Turn.

Assembly rules:

- ``content``, ``reasoning_content``, ``reasoning``: string fragments concatenated in order;
  ``null`` fragments are skipped; a field that never had a string fragment stays absent
  (``content`` then is ``null``).
- ``tool_calls``: keyed by ``index``; the first non-null ``id``, ``type`` and
  ``function.name`` win, ``function.arguments`` fragments are concatenated; any other key
  (``extra_content``) takes its first non-null value. ``index`` itself addresses the delta
  and is not part of the assembled tool call.
- ``reasoning_details``: merged by :class:`DetailsMerger` (see there).
- ``content`` as a list of parts (Mistral's Magistral): ``text`` parts join the visible text
  like string pieces; ``thinking`` parts' inner text joins one thinking text. When any
  thinking part arrived, the assembled ``content`` is the non-streaming body's list form:
  one ``{"type": "thinking", "thinking": [{"type": "text", "text": ..}]}`` part, then one
  ``{"type": "text", "text": ..}`` part when there is visible text (Magistral streams its
  thinking first: recording ``pai__test_mistral__test_mistral_model_thinking_part_iter``).
- Terminal: ``data: [DONE]`` or a non-null ``finish_reason``. A stream with neither is
  truncated. An ``{"error": ...}`` payload yields a StreamError event, and close() then raises
  TruncatedStream carrying the partial turn: the answer did not complete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress, repeat
from operator import itemgetter
from typing import Final

import orjson

from reasonwire.errors import MalformedBody
from reasonwire.wire import jsonload, model
from reasonwire.wire.chat._parse import (
    THINKING_PART,
    details_text,
    is_thinking_part,
    parse_usage,
    thinking_text,
    turn_from_body,
)
from reasonwire.wire.jsontext import arguments_text
from reasonwire.wire.model import JSON, CarrierComplete, ReasoningDelta, TextDelta, ToolCallDelta
from reasonwire.wire.projection import Parsed
from reasonwire.wire.runs import take
from reasonwire.wire.sse import RawEvent, SSEDecoder, event_name
from reasonwire.wire.stream_base import Events, StreamDecoderBase

_ABSENT: Final = object()  # a dict.get default no JSON value can be
_CONCAT_KEYS = frozenset({"text", "summary", "data"})
_CONTROL: Final = bytes(range(32))
_FIRST: Final = itemgetter(0)
_MAX_SHAPES: Final = 4  # a stream has two uniform shapes (text, reasoning); a few spare


@dataclass(frozen=True, slots=True)
class _Shape:
    """A uniform event's bytes around its one string: ``prefix + s + suffix`` (``prefix``
    ends with the string's opening quote, ``suffix`` starts with its closing one), learned
    from a payload this decoder parsed. A payload with the same prefix and suffix and a
    middle free of quotes, backslashes and control bytes is that payload with another
    string: the same JSON but for ``field``'s piece."""

    field: str
    prefix: bytes
    suffix: bytes
    quotes: int  # quotes in prefix + suffix: every quote of a matching payload is one of them
    cut: slice  # the middle of a matching payload


def _uniform_piece(payload: JSON) -> tuple[str, str] | None:
    """(field, piece) when ``payload`` takes :meth:`ChatStreamDecoder._events`'s inline path
    (the same tests, in the same order), else None."""
    if type(payload) is not dict or payload.get("error") is not None:
        return None
    choices = payload.get("choices")
    if payload.get("usage") is not None or type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("finish_reason") is not None:
        return None
    delta = choice.get("delta")
    if choice.get("index", 0) != 0 or type(delta) is not dict:
        return None
    content = delta.get("content", _ABSENT)
    others = len(delta) if content is _ABSENT else len(delta) - 1
    if others == 0 and type(content) is str:
        return "content", content
    piece = delta.get("reasoning_content")
    if others == 1 and (content is None or content is _ABSENT) and type(piece) is str:
        return "reasoning_content", piece
    return None


def _shape_of(data: bytes) -> _Shape | None:
    """The shape of one payload, if it is a uniform piece whose string sits once, plainly
    (no escape), in its bytes."""
    if b"\\" in data or len(data.translate(None, _CONTROL)) != len(data):
        return None
    try:
        found = _uniform_piece(orjson.loads(data))
    except ValueError:
        return None
    if found is None:
        return None
    field, piece = found
    raw = piece.encode("utf-8")
    for sep in (b'":"', b'": "'):
        needle = b'"' + field.encode() + sep + raw + b'"'
        if data.count(needle) == 1:
            at = data.index(needle) + len(needle) - len(raw) - 1
            prefix, suffix = data[:at], data[at + len(raw) :]
            quotes = prefix.count(b'"') + suffix.count(b'"')
            return _Shape(field, prefix, suffix, quotes, slice(len(prefix), -len(suffix)))
    return None


class DetailsMerger:
    """Merges streamed ``reasoning_details`` fragments into the list a replay must send.

    Fragments with the same ``(type, index)`` are one entry (OpenRouter streams a thinking
    block as many fragments; replaying them unmerged is answered with 400). Within an entry:

    - ``text``, ``summary`` and ``data`` strings are concatenated in arrival order;
    - ``signature``: the last non-empty string wins. The recorded OpenRouter/Anthropic stream
      opens the block with ``"signature": ""`` and sends the real signature in a later
      fragment with empty text; ``""`` or ``null`` never overwrite a value already held;
    - every other key takes the first non-null value it was given;
    - keys keep the position of their first appearance.

    Entries keep the order in which their first fragment arrived. A non-object fragment is
    kept as its own entry.
    """

    __slots__ = ("_by_key", "entries")

    def __init__(self) -> None:
        self.entries: list[JSON] = []
        self._by_key: dict[tuple[JSON, JSON], dict[str, JSON]] = {}

    def add(self, fragment: JSON) -> None:
        if not isinstance(fragment, dict):
            self.entries.append(fragment)
            return
        key = (_hashable(fragment.get("type")), _hashable(fragment.get("index")))
        entry = self._by_key.get(key)
        if entry is None:
            entry = dict(fragment)
            self._by_key[key] = entry
            self.entries.append(entry)
            return
        for name, value in fragment.items():
            have = entry.get(name)
            if name not in entry:
                entry[name] = value
            elif name in _CONCAT_KEYS and isinstance(value, str):
                entry[name] = have + value if isinstance(have, str) else value
            elif name == "signature":
                if isinstance(value, str) and value:
                    entry[name] = value
            elif have is None and value is not None:
                entry[name] = value


def merge_reasoning_details(fragments: list[JSON]) -> list[JSON]:
    """The merged ``reasoning_details`` list for fragments in arrival order."""
    merger = DetailsMerger()
    for fragment in fragments:
        merger.add(fragment)
    return merger.entries


def _hashable(value: JSON) -> JSON:
    return value if isinstance(value, str | int | float | bool) or value is None else repr(value)


class _ToolCallState:
    __slots__ = ("arguments", "extra", "id", "name", "type")

    def __init__(self) -> None:
        self.id: JSON = None
        self.type: JSON = None
        self.name: JSON = None
        self.arguments: list[str] = []
        self.extra: dict[str, JSON] = {}

    def assembled(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        if self.id is not None:
            out["id"] = self.id
        out["type"] = self.type if self.type is not None else "function"
        out["function"] = {
            "name": self.name if self.name is not None else "",
            "arguments": "".join(self.arguments),
        }
        out.update(self.extra)
        return out


class ChatStreamDecoder(StreamDecoderBase):
    """Feed SSE bytes of one streamed chat completion; see the module doc for the rules."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._events_seen = 0
        self._top: dict[str, JSON] | None = None
        self._role: JSON = None
        self._content: list[str] | None = None
        self._thinking: list[str] | None = None  # Magistral thinking parts' text pieces
        self._reasoning: dict[str, list[str]] = {}
        self._details: DetailsMerger | None = None
        self._order: list[str] = []
        self._calls: dict[JSON, _ToolCallState] = {}
        self._finish: JSON = None
        self._usage: JSON = None
        self._done = False
        self._errors: list[model.StreamError] = []
        self._guard = jsonload.StreamGuard()
        self._shapes: list[_Shape] = []
        self.bulk_events = 0
        """Events :meth:`absorb` took in bulk (a measure of its fast path, for tests)."""

    # -- public -------------------------------------------------------------------------

    def feed(self, data: bytes) -> Events:
        """Events of ``data``. A batch whose events all have one learned shape (the long runs
        of reasoning, then of text, that make up an answer) is taken by :meth:`_run`; any
        other batch by the general path, which also learns the shapes."""
        out: Events = []
        loads = self._guard.loader(data)  # sees every chunk, events or not
        events = self._sse.feed_raw(data)
        if not events or self._run(events, out):
            return out
        self._events(events, loads, out)
        # Shapes serve the batches still to come: none after the terminal event ([DONE]).
        if len(self._shapes) < _MAX_SHAPES and self._top is not None and not self._done:
            self._learn(events)
        return out

    def feed_parsed(self, data: bytes, events: list[RawEvent], parsed: Parsed) -> Events:
        """:meth:`feed` for a caller that framed ``data`` and parsed its events already
        (:func:`~reasonwire.wire.projection.parse_both`: a relay that projects the same
        stream), so each event is framed and parsed once. Every chunk of the stream goes
        through here (this decoder's own framing is then unused). A parsed object is taken
        where this decoder would have parsed the bytes with orjson itself (not once the
        stream had a run of 19 digits, where it wants the exact stdlib value); the rest is
        :meth:`feed`'s own path, so the events and the turn are :meth:`feed`'s."""
        out: Events = []
        loads = self._guard.loader(data)
        given = parsed if self._guard.fast(loads) else None
        if not data:  # the framing's last events, taken as :meth:`_drain` takes its own
            self._events(events, loads, out, given)
            return out
        if not events or self._run(events, out):
            return out
        self._events(events, loads, out, given)
        if len(self._shapes) < _MAX_SHAPES and self._top is not None and not self._done:
            self._learn(events)
        return out

    def absorb(self, data: bytes) -> None:
        """:meth:`feed` for a caller that keeps the state only and reads no events (the
        probe counts bytes). Why: a long answer is nearly all one or two event shapes, and
        at a provider's pace decoding them one by one is most of the probe's cost. Here a
        batch of events that all have a shape learned from an event parsed earlier
        (:class:`_Shape`) is taken with a few C-level passes over its bytes: the passes
        prove each payload is its shape with a plain string in it (no quote, backslash or
        control byte in the middle, valid UTF-8), and the middles are joined onto the
        field's pieces. Every other batch goes through the general path, unchanged. The state,
        and so the turn, equals :meth:`feed`'s for any split."""
        loads = self._guard.loader(data)
        events = self._sse.feed_raw(data)
        if not events or self._bulk(events):
            return
        self._events(events, loads, [])
        if len(self._shapes) < _MAX_SHAPES and self._top is not None:
            self._learn(events)

    def _drain(self) -> Events:
        out: Events = []
        self._events(self._sse.close_raw(), self._guard.loader(b""), out)
        return out

    def _unfinished(self) -> str | None:
        if self._errors:
            return f"chat stream reported an error: {self._errors[0].message}"
        if not self._done and self._finish is None:
            return "chat stream ended without [DONE] and without a finish_reason"
        return None

    def _closing(self, turn: model.Turn) -> Events:
        return [CarrierComplete(c) for c in turn.carriers]

    def partial_turn(self) -> model.Turn:
        return turn_from_body(self.assembled())

    def assembled(self) -> dict[str, JSON]:
        """The state so far in the non-streaming body's shape."""
        text = "".join(self._content) if self._content is not None else None
        content: JSON = text
        if self._thinking is not None:
            thought = {"type": "text", "text": "".join(self._thinking)}
            parts: list[JSON] = [{"type": THINKING_PART, THINKING_PART: [thought]}]
            if text:
                parts.append({"type": "text", "text": text})
            content = parts
        message: dict[str, JSON] = {
            "role": self._role if self._role is not None else "assistant",
            "content": content,
        }
        for name in self._order:
            if name == "reasoning_details":
                assert self._details is not None
                # copies: the merger keeps mutating its entries while the stream goes on
                message[name] = [
                    dict(e) if isinstance(e, dict) else e for e in self._details.entries
                ]
            else:
                message[name] = "".join(self._reasoning[name])
        if self._calls:
            message["tool_calls"] = [c.assembled() for c in self._calls.values()]
        body: dict[str, JSON] = dict(self._top or {})
        if "object" in body:
            body["object"] = "chat.completion"
        body["choices"] = [{"index": 0, "message": message, "finish_reason": self._finish}]
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    # -- internals ----------------------------------------------------------------------

    def _events(
        self,
        events: list[RawEvent],
        loads: Callable[[bytes], JSON],
        out: Events,
        parsed: Parsed | None = None,
    ) -> None:
        """The hot path: orjson on the raw bytes; anything it cannot vouch for (``[DONE]``,
        blank or odd payloads, long digit runs) goes through :meth:`_text_payload`.

        Nearly every chunk of a long answer is one shape: no ``error``, no ``usage``, one
        choice with index 0 and no ``finish_reason``, and a delta that is ``{"content": s}``
        or ``{"reasoning_content": s}`` (with or without ``"content": null``). Those are
        handled inline below; everything else, and every chunk until the first one
        has set the top-level fields and the piece lists exist, takes :meth:`_payload`. The
        fast path only appends to lists the general path would append to and emits the same
        event, so both give the same state and events. ``parsed``: the events' objects,
        parsed already as ``loads`` would (None where it was not one: parsed here).
        """
        base = self._events_seen
        if self._done:
            self._events_seen = base + len(events)
            return
        payload_in = self._payload
        top = self._top
        text = self._content
        thought = self._reasoning.get("reasoning_content")
        given = iter(parsed) if parsed is not None else None
        for seen, (data, name, _, _) in enumerate(events, base + 1):
            try:
                ready = next(given) if given is not None else None
                payload = ready if ready is not None else loads(data)
            except ValueError:
                self._events_seen = seen
                payload = self._text_payload(data, name)
                if payload is None:
                    if self._done:  # what follows [DONE] is ignored (but counted)
                        break
                    continue
            if type(payload) is not dict:
                self._events_seen = seen
                self._not_object(payload, name)
            if top is not None and payload.get("error") is None and payload.get("usage") is None:
                choices = payload.get("choices")
                if type(choices) is list and len(choices) == 1:
                    choice = choices[0]
                    if (
                        type(choice) is dict
                        and choice.get("finish_reason") is None
                        and choice.get("index", 0) == 0
                    ):
                        delta = choice.get("delta")
                        if type(delta) is dict:
                            content = delta.get("content", _ABSENT)
                            others = len(delta) if content is _ABSENT else len(delta) - 1
                            if others == 0:
                                if type(content) is str and text is not None:
                                    text.append(content)
                                    if content:
                                        out.append(TextDelta(content))
                                    continue
                            elif others == 1 and (content is None or content is _ABSENT):
                                piece = delta.get("reasoning_content")
                                if type(piece) is str and thought is not None:
                                    thought.append(piece)
                                    if piece:
                                        out.append(ReasoningDelta(piece))
                                    continue
            self._events_seen = seen
            payload_in(payload, out)
            top = self._top
            text = self._content
            thought = self._reasoning.get("reasoning_content")
        self._events_seen = base + len(events)

    def _run(self, events: list[RawEvent], out: Events) -> bool:
        """Take a batch whose payloads are all one learned shape, with its events in order
        (the pieces and deltas :meth:`_events` would give); False to decline. The proof, for
        one shape: :func:`reasonwire.wire.runs.middles`."""
        if not self._shapes or self._done:
            return False
        taken = take(self._shapes, list(map(_FIRST, events)))
        if taken is None:
            return False
        shape, pieces = taken
        if shape.field == "content":
            target = self._content
            delta: Callable[[str], model.StreamEvent] = TextDelta
        else:
            target = self._reasoning.get(shape.field)
            delta = ReasoningDelta
        if target is None:
            return False
        target.extend(pieces)
        out.extend(map(delta, filter(None, pieces)))
        self._events_seen += len(pieces)
        return True

    def _bulk(self, events: list[RawEvent]) -> bool:
        """Take ``events`` in bulk when every one has a learned shape; False to decline."""
        if not self._shapes or self._done:
            return False
        datas = list(map(_FIRST, events))
        blob = b"\n".join(datas)
        if b"\\" in blob or len(blob) - len(blob.translate(None, _CONTROL)) != len(datas) - 1:
            return False
        quotes = blob.count(b'"')
        left = len(datas)
        todo: list[tuple[list[bytes], _Shape]] = []
        fields: set[str] = set()
        for shape in self._shapes:
            flags = list(map(bytes.startswith, datas, repeat(shape.prefix)))
            k = sum(flags)
            if not k:
                continue
            if shape.field in fields:
                return False  # one field in two shapes: joining per shape would reorder it
            fields.add(shape.field)
            mine = list(compress(datas, flags))
            if sum(map(bytes.endswith, mine, repeat(shape.suffix))) != k:
                return False
            if min(map(len, mine)) < len(shape.prefix) + len(shape.suffix):
                return False
            quotes -= k * shape.quotes
            left -= k
            todo.append((mine, shape))
        if left or quotes:
            return False  # a payload of no shape, or a quote in some middle
        try:
            blob.decode("utf-8")  # each middle is valid: ASCII bytes bound every one
        except UnicodeDecodeError:
            return False
        for mine, shape in todo:
            pieces = self._content if shape.field == "content" else self._reasoning[shape.field]
            assert pieces is not None  # a shape is learned only once its pieces exist
            pieces.append(b"".join(map(bytes.__getitem__, mine, repeat(shape.cut))).decode())
        self._events_seen += len(datas)
        self.bulk_events += len(datas)
        return True

    def _learn(self, events: list[RawEvent]) -> None:
        """Learn the shapes of the last few payloads of a batch just parsed; a shape whose
        prefix is a prefix of another's (or the other way) is not kept, so every payload
        has at most one shape."""
        for data, *_ in events[-4:]:
            shape = _shape_of(data)
            if shape is None:
                continue
            if shape.field == "content" and self._content is None:
                continue
            if shape.field != "content" and shape.field not in self._reasoning:
                continue
            if any(
                shape.prefix.startswith(s.prefix) or s.prefix.startswith(shape.prefix)
                for s in self._shapes
            ):
                continue
            self._shapes.append(shape)
            if len(self._shapes) >= _MAX_SHAPES:
                return

    def _text_payload(self, raw: bytes, name: bytes | None) -> JSON:
        """The payload by the stdlib rules on the decoded, stripped text; None to skip."""
        data = raw.decode("utf-8", "replace").strip()
        if not data:
            return None
        if data == "[DONE]":
            self._done = True
            return None
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedBody(
                f"chat stream event #{self._events_seen} ({event_name(name)!r}) is not JSON "
                f"({exc.msg}): {data[:120]!r}"
            ) from None

    def _not_object(self, payload: JSON, name: bytes | None) -> None:
        if not isinstance(payload, dict):
            raise MalformedBody(
                f"chat stream event #{self._events_seen} ({event_name(name)!r}) "
                "is not a JSON object"
            )

    def _payload(self, payload: model.JsonObject, out: Events) -> None:
        if payload.get("error") is not None:
            err = payload["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            ev = model.StreamError(str(msg) if msg is not None else json.dumps(err), raw=payload)
            self._errors.append(ev)
            out.append(ev)
            return
        if self._top is None:
            self._top = {k: v for k, v in payload.items() if k not in ("choices", "usage")}
        choices = payload.get("choices")
        if type(choices) is list:
            for choice in choices:
                if type(choice) is dict and choice.get("index", 0) == 0:
                    delta = choice.get("delta")
                    if type(delta) is dict:
                        self._delta(delta, out)
                    finish = choice.get("finish_reason")
                    if finish is not None:
                        self._finish = finish
        usage = payload.get("usage")
        if usage is not None:
            self._usage = usage
            parsed = parse_usage(usage)
            if parsed is not None:
                out.append(model.UsageEvent(parsed))

    def _delta(self, delta: model.JsonObject, out: Events) -> None:
        get = delta.get
        if self._role is None and isinstance(get("role"), str):
            self._role = delta["role"]
        reasoning_piece = ""
        value = get("reasoning_content")
        if type(value) is str:
            self._reasoning_piece("reasoning_content", value)
            reasoning_piece = value
        value = get("reasoning")
        if type(value) is str:
            self._reasoning_piece("reasoning", value)
            if not reasoning_piece:
                reasoning_piece = value
        details = get("reasoning_details")
        if type(details) is list:
            if self._details is None:
                self._details = DetailsMerger()
                self._order.append("reasoning_details")
            for fragment in details:
                self._details.add(fragment)
            if not reasoning_piece:
                reasoning_piece = details_text(details)
        if reasoning_piece:
            out.append(ReasoningDelta(reasoning_piece))
        content = get("content")
        if type(content) is str:
            self._text_piece(content, out)
        elif type(content) is list:
            for part in content:
                if is_thinking_part(part):
                    piece = thinking_text(part)
                    if self._thinking is None:
                        self._thinking = []
                    self._thinking.append(piece)
                    if piece:
                        out.append(ReasoningDelta(piece))
                elif isinstance(part, dict) and type(part.get("text")) is str:
                    self._text_piece(part["text"], out)
        calls = get("tool_calls")
        if type(calls) is list:
            for position, call in enumerate(calls):
                if isinstance(call, dict):
                    out.append(self._tool_call(call, position))

    def _text_piece(self, content: str, out: Events) -> None:
        if self._content is None:
            self._content = []
        self._content.append(content)
        if content:
            out.append(TextDelta(content))

    def _reasoning_piece(self, name: str, value: str) -> None:
        pieces = self._reasoning.get(name)
        if pieces is None:
            pieces = self._reasoning[name] = []
            self._order.append(name)
        pieces.append(value)

    def _tool_call(self, call: model.JsonObject, position: int) -> ToolCallDelta:
        index = call.get("index", position)
        state = self._calls.get(index)
        if state is None:
            state = self._calls[index] = _ToolCallState()
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        assert isinstance(fn, dict)
        if state.id is None and call.get("id") is not None:
            state.id = call["id"]
        if state.type is None and call.get("type") is not None:
            state.type = call["type"]
        name = fn.get("name")
        if state.name is None and name is not None:
            state.name = name
        args = fn.get("arguments")
        piece = arguments_text(args) if args is not None else ""
        state.arguments.append(piece)
        for key, value in call.items():
            if key not in ("index", "id", "type", "function") and value is not None:
                state.extra.setdefault(key, value)
        call_id = call.get("id")
        return ToolCallDelta(
            index=index if isinstance(index, int) else position,
            id=call_id if isinstance(call_id, str) else None,
            name=name if isinstance(name, str) else None,
            arguments=piece,
        )
