"""Incremental decoder for ``streamGenerateContent`` in both of Gemini's stream forms.

Form detection: the first non-whitespace byte decides. ``[`` means one JSON array whose
elements arrive progressively (no ``alt=sse``), decoded with :class:`JSONArrayDecoder`;
anything else is SSE (``alt=sse``), decoded with the shared :class:`SSEDecoder`. Either way
each payload is one ``GenerateContentResponse`` holding the parts new since the last one.

Part merge rule (derived from the recorded streams and what the recorded follow-up requests
send back, so that the assembled parts equal what the non-streaming answer would hold):

1. An incoming text part without ``thoughtSignature`` and with no keys besides ``text`` and
   ``thought`` is appended to the previous assembled part when that one is also a plain text
   part (keys ``text``/``thought``/``thoughtSignature`` only) with the same ``thought`` flag.
   So streamed thought chunks become one thought part, and the visible-text chunks that
   follow a signed first text chunk join that signed part, as in the non-streaming answer
   (``[{thought}, {text, thoughtSignature}]``).
2. A part carrying ``thoughtSignature`` always starts a new part: the signature stays on the
   part it came on, and text never moves in front of a signature.
3. An empty text part with nothing else (the ``{"text": ""}`` that closes a stream alongside
   ``finishReason``) is dropped: it adds no text, and the recorded follow-up request does not
   send it back (only the signed ``functionCall`` part).
4. Every other part (``functionCall``, ``inlineData``, code parts, ...) is appended as is.

Usage: each chunk reports running totals, so the last ``usageMetadata`` wins. The terminal
event is a ``finishReason`` on ``candidates[0]``; a stream that ends without one raises
:class:`TruncatedStream` carrying the partial turn. An ``{"error": ..}`` payload yields a
:class:`StreamError` event; the decoder raises only at :meth:`close`.

Function-call arguments streamed in pieces (Gemini 3 ``partialArgs`` / ``willContinue``) are
not assembled: such parts are kept as received.

Fast path (SSE): nearly every chunk of a long answer is the same bytes around a different
text piece (one candidate, one plain text part merging into the open part, the same usage,
version and id). Once such a chunk has gone through the general path, its bytes before and
after the piece are kept as a learned shape; a later payload that starts and ends with them and
whose middle holds no quote, backslash or control byte is that same JSON with another string,
so its piece is appended and its delta emitted without parsing (the general path would record
the same top-level and candidate values, which are those very bytes). A shape applies only
while the part it grows is open with the same ``thought`` flag.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire import jsonload, model
from reasonwire.wire.gemini._parse import (
    PARTS_PATH,
    is_thought,
    parse_body,
    parse_usage,
    tool_call_of,
)
from reasonwire.wire.jsonarray import JSONArrayDecoder
from reasonwire.wire.model import JSON, CarrierComplete, ReasoningDelta, TextDelta, ToolCallDelta
from reasonwire.wire.projection import Parsed
from reasonwire.wire.runs import cut_around, middle, middles
from reasonwire.wire.sse import RawEvent, SSEDecoder, event_name
from reasonwire.wire.stream_base import Events, StreamDecoderBase

_PLAIN_TEXT_KEYS = frozenset({"text", "thought"})
_MERGE_TARGET_KEYS = frozenset({"text", "thought", "thoughtSignature"})
_WS = b" \t\r\n"


def _mergeable(part: model.JsonObject) -> bool:
    return isinstance(part.get("text"), str) and part.keys() <= _PLAIN_TEXT_KEYS


class GeminiStreamDecoder(StreamDecoderBase):
    """Bytes of one streamed answer (SSE or JSON-array form) in, neutral events out."""

    def __init__(self) -> None:
        self._head = b""
        self._sse: SSEDecoder | None = None
        self._array: JSONArrayDecoder | None = None
        self._payloads = 0
        self._parts: list[model.JsonObject] = []
        self._candidate: model.JsonObject = {}
        self._top: model.JsonObject = {}
        self._finished = False
        self._errors: list[str] = []
        self._open_thoughts: list[int] = []  # assembled thought parts not yet announced
        self._calls = 0
        self._last_usage: JSON = None
        self._grow: list[str] | None = None  # text pieces merged into the last part
        self._guard = jsonload.StreamGuard()
        self._shape: tuple[bytes, bytes, bool] | None = None  # (prefix, suffix, thought)

    # -- bytes -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> Events:
        data = self._form(data)
        if self._array is not None:
            return self._payloads_in(self._array.feed(data))
        if self._sse is None:
            return []  # the form is not known yet
        loads = self._guard.loader(data)  # sees every chunk, events or not
        events = self._sse.feed_raw(data)
        return self._sse_in(events, loads, None) if events else []

    def feed_parsed(self, data: bytes, events: list[RawEvent], parsed: Parsed) -> Events:
        """:meth:`feed` for a caller that framed ``data`` as SSE and parsed its events
        already (:class:`~reasonwire.wire.projection.ParsedFeed`: a relay that projects the
        same stream), so each event is framed and parsed once. A parsed object stands for
        this decoder's own orjson read of the bytes while the stream has had no run of 19
        digits (then it wants the exact value); the rest takes :meth:`feed`'s path, so the
        events and the turn are :meth:`feed`'s. A stream in the JSON-array form is read from
        the bytes, as :meth:`feed` reads it (the caller's SSE events are then not its own:
        a leading blank, the only bytes held before the form is known, frames none)."""
        data = self._form(data)
        if self._array is not None:
            return self._payloads_in(self._array.feed(data))
        if self._sse is None:
            return []
        loads = self._guard.loader(data)
        if not events:
            return []
        return self._sse_in(events, loads, parsed if jsonload.StreamGuard.fast(loads) else None)

    def _form(self, data: bytes) -> bytes:
        """The bytes to read now: until the first non-blank byte tells the form (module
        docstring) they are held, and none are given; then the held ones with ``data``."""
        if self._sse is not None or self._array is not None:
            return data
        self._head += data
        stripped = self._head.lstrip(_WS)
        if not stripped:
            return b""
        data, self._head = self._head, b""
        if stripped[:1] == b"[":
            self._array = JSONArrayDecoder()
        else:
            self._sse = SSEDecoder()
        return data

    def _drain(self) -> Events:
        events: Events = []
        if self._sse is not None:
            events.extend(self._sse_in(self._sse.close_raw(), self._guard.loader(b""), None))
        elif self._array is not None:
            try:
                self._array.close()
            except TruncatedStream:
                if not self._finished:
                    raise TruncatedStream(
                        "gemini JSON-array stream ended before its closing ']' and without a "
                        "finishReason",
                        partial=self.partial_turn(),
                    ) from None
        return events

    def _unfinished(self) -> str | None:
        if self._finished:
            return None
        why = f" (stream error: {'; '.join(self._errors)})" if self._errors else ""
        return f"gemini stream ended without a finishReason after {self._payloads} payload(s){why}"

    def _closing(self, turn: model.Turn) -> Events:
        return self._announce_thoughts(len(self._parts))

    def partial_turn(self) -> model.Turn:
        return parse_body(self.assembled())

    def assembled(self) -> model.JsonObject:
        """The state so far in the non-streaming body's shape (``Turn.raw`` of a stream)."""
        self._join()
        cand: model.JsonObject = {"content": {"parts": self._parts, "role": "model"}}
        cand.update((k, v) for k, v in self._candidate.items() if k != "content")
        body: model.JsonObject = {"candidates": [cand]}
        body.update((k, v) for k, v in self._top.items() if k != "candidates")
        return body

    # -- payloads ----------------------------------------------------------------------------

    def _sse_in(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """Each event through the learned shape where it fits (module docstring), else
        parsed and taken by :meth:`_chunk`; a uniform chunk that was parsed teaches the
        shape for the part it grows. ``parsed``: the events' objects as ``loads`` reads them,
        None where one was not read (read here)."""
        out: Events = []
        if len(events) > 1 and self._run(events, out):
            return out
        given = iter(parsed) if parsed is not None else None
        for raw, name, _, _ in events:
            ready = next(given) if given is not None else None
            shape = self._shape
            if shape is not None and self._grow is not None:
                piece = middle(raw, shape[0], shape[1])
                if piece:  # (an empty text part goes the general way: rule 3 drops it)
                    self._payloads += 1
                    self._grow.append(piece)
                    out.append(ReasoningDelta(piece) if shape[2] else TextDelta(piece))
                    continue
            payload = ready if ready is not None else self._parse(raw, name, loads)
            if payload is None:
                continue
            out.extend(self._payload_in(payload))
            self._learn(raw, payload)
        return out

    def _run(self, events: list[RawEvent], out: Events) -> bool:
        """Take a batch whose payloads are all the learned shape at once, with the pieces and
        deltas the per-event path would give; False to decline (then each event goes that
        way). The proof, for the whole batch: :func:`reasonwire.wire.runs.middles` (every
        payload starts with the prefix and ends with the suffix, the joined middles hold no
        quote, backslash or control byte but the joins, and are UTF-8). An empty piece sends
        the batch the per-event way (rule 3 drops its part; the shape takes none)."""
        shape, grow = self._shape, self._grow
        if shape is None or grow is None:
            return False
        pieces = middles([e[0] for e in events], shape[0], shape[1])
        if pieces is None or not all(pieces):
            return False
        self._payloads += len(pieces)
        grow.extend(pieces)
        out.extend(map(ReasoningDelta if shape[2] else TextDelta, pieces))
        return True

    def _learn(self, raw: bytes, payload: JSON) -> None:
        """Keep the bytes around this payload's piece as the shape, when the payload is the
        uniform kind (module docstring) and its piece sits once, plainly, in its bytes; else
        no shape. Every parsed payload replaces the shape: a shape is only ever the last
        parsed payload's, so what the general path would record from a matching payload
        (top-level and candidate values, usage) is what it recorded last, and the part it
        grows is the last part, with the same ``thought`` flag."""
        self._shape = None
        if type(payload) is not dict or "error" in payload:
            return
        cands = payload.get("candidates")
        if type(cands) is not list or len(cands) != 1 or type(cands[0]) is not dict:
            return
        cand = cands[0]
        content = cand.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if type(parts) is not list or len(parts) != 1 or type(parts[0]) is not dict:
            return
        part = parts[0]
        text = part.get("text")
        if (
            cand.get("finishReason") is not None
            or cand.get("index", 0) != 0
            or not isinstance(text, str)
            or not text
            or not part.keys() <= _PLAIN_TEXT_KEYS
            or type(part.get("thought", False)) is not bool
            or bool(part.get("thought")) is not bool(self._parts[-1].get("thought"))
        ):
            return
        cut = cut_around(raw, text)
        if cut is not None:
            self._shape = (*cut, bool(part.get("thought")))

    def _parse(self, raw: bytes, name: bytes | None, loads: Callable[[bytes], JSON]) -> JSON:
        """One SSE payload; None for a blank one or ``[DONE]``."""
        try:
            return loads(raw)
        except ValueError:
            pass
        data = raw.decode("utf-8", "replace").strip()
        if not data or data == "[DONE]":
            return None
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            event = event_name(name)
            raise MalformedBody(
                f"gemini SSE event #{self._payloads + 1} ({event!r}) is not JSON: {exc.msg}: "
                f"{data[:80]!r}"
            ) from None

    def _payloads_in(self, payloads: list[JSON]) -> Events:
        out: Events = []
        for payload in payloads:
            out.extend(self._payload_in(payload))
        return out

    def _payload_in(self, payload: JSON) -> Events:
        self._payloads += 1
        if not isinstance(payload, dict):
            raise MalformedBody(
                f"gemini stream payload #{self._payloads} must be a JSON object, "
                f"got {type(payload).__name__}"
            )
        return self._chunk(payload)

    def _chunk(self, payload: model.JsonObject) -> Events:
        if "error" in payload:
            err = payload["error"]
            msg = err.get("message") if isinstance(err, dict) else None
            text = str(msg if msg is not None else err)
            self._errors.append(text)
            return [model.StreamError(text, raw=payload)]
        out: Events = []
        # "candidates" rides along here too; assembled() leaves it out (cheaper than a filter)
        self._top.update(payload)
        cands = payload.get("candidates")
        if cands is not None:
            if not isinstance(cands, list):
                raise MalformedBody(f"gemini stream payload #{self._payloads}: bad 'candidates'")
            for cand in cands:
                if not isinstance(cand, dict):
                    raise MalformedBody(
                        f"gemini stream payload #{self._payloads}: candidate is not an object"
                    )
                if cand.get("index", 0) == 0:
                    out.extend(self._candidate_in(cand))
        usage = payload.get("usageMetadata")
        if usage is not None and usage != self._last_usage:
            self._last_usage = usage
            parsed = parse_usage(usage)
            if parsed is not None:
                out.append(model.UsageEvent(parsed))
        return out

    def _candidate_in(self, cand: model.JsonObject) -> Events:
        self._candidate.update(cand)  # "content" is left out by assembled()
        if cand.get("finishReason") is not None:
            self._finished = True
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if parts is None:
            return []
        if not isinstance(parts, list):
            raise MalformedBody(f"gemini stream payload #{self._payloads}: parts is not a list")
        out: Events = []
        for part in parts:
            if not isinstance(part, dict):
                raise MalformedBody(
                    f"gemini stream payload #{self._payloads}: part is not an object"
                )
            out.extend(self._part_in(part))
        return out

    def _part_in(self, part: model.JsonObject) -> Events:
        out: Events = []
        text: JSON = part.get("text")
        mergeable = _mergeable(part)
        if mergeable and text == "":
            return out  # rule 3
        last = self._parts[-1] if self._parts else None
        if (
            mergeable
            and last is not None
            and isinstance(last.get("text"), str)
            and last.keys() <= _MERGE_TARGET_KEYS
            and bool(last.get("thought")) == bool(part.get("thought"))
        ):
            # rule 1; pieces are joined when the part is read (see _join): appending to the
            # field on every chunk would copy the whole text each time
            if self._grow is None:
                self._grow = [last["text"], text]
            else:
                self._grow.append(text)
        else:
            self._join()
            out.extend(self._announce_thoughts(len(self._parts)))
            self._parts.append(dict(part))  # rules 2 and 4
            index = len(self._parts) - 1
            new = self._parts[index]
            if is_thought(new):
                self._open_thoughts.append(index)
            if "functionCall" in new:
                path = f"{PARTS_PATH}[{index}]"
                call = tool_call_of(new["functionCall"], index, path)
                out.append(ToolCallDelta(self._calls, call.id, call.name, call.arguments))
                self._calls += 1
            if "thoughtSignature" in new:
                sig = new["thoughtSignature"]
                if not isinstance(sig, str):
                    raise MalformedBody(
                        f"gemini {PARTS_PATH}[{index}].thoughtSignature must be a string"
                    )
                out.append(CarrierComplete(self._signature_carrier(index, sig)))
        if isinstance(text, str) and text:
            out.append(ReasoningDelta(text) if part.get("thought") is True else TextDelta(text))
        return out

    def _join(self) -> None:
        """Write the text pieces merged into the last part so far into its ``text``."""
        if self._grow is not None:
            self._parts[-1]["text"] = "".join(self._grow)
            self._grow = None

    def _signature_carrier(self, index: int, sig: str) -> model.Carrier:
        part = self._parts[index]
        call_id = None
        if "functionCall" in part:
            call_id = tool_call_of(part["functionCall"], index, "").id
        return model.Carrier(
            "gemini",
            "thoughtSignature",
            f"{PARTS_PATH}[{index}].thoughtSignature",
            sig,
            opaque=True,
            tool_call_id=call_id,
        )

    def _announce_thoughts(self, upto: int) -> Events:
        """CarrierComplete for thought parts that can no longer grow (a new part started)."""
        out: Events = []
        for index in self._open_thoughts:
            if index >= upto:
                continue
            part = self._parts[index]
            path = f"{PARTS_PATH}[{index}]"
            out.append(
                CarrierComplete(
                    model.Carrier("gemini", "thought", path, part, opaque=False, text=part["text"])
                )
            )
        self._open_thoughts = [i for i in self._open_thoughts if i >= upto]
        return out


__all__ = ["GeminiStreamDecoder"]
