"""The visible projection of a stream: SSE bytes in, only allow-listed events out.

Each event's JSON is decoded and reduced to the dialect's event shape
(:func:`reasonwire.wire.shape.project`); an event of a kind the shape does not describe, or
whose data is not JSON, is dropped whole (``[DONE]`` and the like excepted, by name). Fields
the shape does not name never reach the client, whatever escapes or nesting they use, since
the decision is made on the decoded value. Visible text is cut of ``<think>`` blocks when the
route's profile says the model writes them, with one cutter per JSON path across events.

The upstream's own SSE framing never reaches the client either: ``event:`` names are the
projected data's tag (a value the event shape allow-listed) when the event shape is
:class:`~reasonwire.wire.shape.Tagged` (Responses, Anthropic: events named after their
``type``), and absent otherwise; ``id:``, ``retry:`` and comment lines are not relayed.

An upstream that reports a failure inside the stream (an event whose data holds an ``error``
the shape does not project, as Chat Completions servers send) ends the projected stream: the
client gets the dialect's own error event at that point, no upstream text, and nothing after
it (not the ``[DONE]`` that may follow, which would let an SDK finish cleanly).

A relay that also decodes the stream for its evidence frames and parses each event once:
:func:`parse_both` gives each event's JSON object, :meth:`SSEProjector.feed_events` projects
from it, and a decoder with ``feed_parsed`` (:class:`ParsedFeed`) takes the objects orjson
read from the bytes themselves (those a decoder's own first read would give).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

import orjson

from reasonwire.wire.model import JsonObject, StreamEvent
from reasonwire.wire.shape import Shape, Tagged, TextFilter, project
from reasonwire.wire.sse import RawEvent, SSEDecoder
from reasonwire.wire.thinktags import PathCutters

EventFilter = Callable[[dict[str, object]], bool]
"""Extra per-event rule after projection: False drops the event (e.g. an emptied delta)."""

Parsed = list[JsonObject | None]
"""Each event's data as a JSON object, None where it is not one (not JSON, a literal such as
``[DONE]``, another JSON value): :func:`parse_events`."""


def parse_events(events: list[RawEvent]) -> Parsed:
    """Each event's data read as the projector reads it: the decoded text, stripped, as JSON
    (invalid UTF-8 replaced); None unless that is an object."""
    return parse_both(events)[0]


def parse_both(events: list[RawEvent]) -> tuple[Parsed, Parsed]:
    """:func:`parse_events`, and the same list with None where orjson did not read the object
    from the bytes as they are (it came from the decoded, stripped text: invalid UTF-8, or
    whitespace JSON does not allow at an end). The second is what a decoder may take for its
    own first read, orjson on the bytes: a decoder's fallback differs from the projector's
    on such bytes (some do not strip), and so must run itself. Both are one list (the same
    object) when no event was read from its text, as a rule."""
    seen: Parsed = []
    loose: list[int] = []
    for raw, *_ in events:
        if raw[:1] == b"{":
            try:
                seen.append(orjson.loads(raw))  # a brace: an object
                continue
            except orjson.JSONDecodeError:
                pass
        data = _text_object(raw)
        if data is not None:
            loose.append(len(seen))
        seen.append(data)
    if not loose:
        return seen, seen
    exact = list(seen)
    for at in loose:
        exact[at] = None
    return seen, exact


def _text_object(raw: bytes) -> JsonObject | None:
    """One event's data read from its text (what orjson refused as bytes, or what does not
    open with a brace): the decoded text, stripped, as a JSON object, or None. Only text that
    opens with a brace is parsed at all (``[DONE]`` costs no parser error)."""
    text = raw.decode("utf-8", "replace").strip()
    if text[:1] != "{":
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return data if type(data) is dict else None


class ParsedFeed(Protocol):
    """A stream decoder that can take events framed and parsed by :func:`parse_both` (its
    second list: objects orjson read from the bytes as they are, None elsewhere) instead of
    the bytes (``chunk`` is still given: a decoder may watch every byte). An empty ``chunk``
    with events hands over what the framing held at the stream's end (:meth:`OneParse.flush`,
    before the decoder's ``close``): the decoder takes them as its ``close`` takes its own."""

    def feed_parsed(
        self, chunk: bytes, events: list[RawEvent], parsed: Parsed
    ) -> list[StreamEvent]: ...


def encode_event(event: str, data: bytes | str) -> bytes:
    """One SSE event (``event:`` line only when the name is not the default)."""
    raw = data.encode() if isinstance(data, str) else data
    head = b"event: " + event.encode() + b"\n" if event != "message" else b""
    return head + b"data: " + raw + b"\n\n"


class SSEProjector:
    """A :class:`~reasonwire.wire.dialect.StreamProjector` for SSE dialects."""

    __slots__ = ("_error", "_failed", "_keep", "_literal", "_named", "_shape", "_sse", "_tf")

    def __init__(
        self,
        shape: Shape,
        error_event: Callable[[str], bytes],
        *,
        think_tags: bool = False,
        literal: frozenset[str] = frozenset(),
        keep: EventFilter | None = None,
    ) -> None:
        self._shape = shape
        self._named = shape.key if isinstance(shape, Tagged) else None
        self._error = error_event
        self._failed = False
        self._literal = literal
        self._keep = keep
        self._tf: TextFilter | None = PathCutters() if think_tags else None
        self._sse = SSEDecoder()

    def feed(self, chunk: bytes) -> bytes:
        events = self._sse.feed_raw(chunk)
        return self.feed_events(events, parse_events(events))

    def close(self) -> bytes:
        events = self._sse.close_raw()
        return self.feed_events(events, parse_events(events))

    def fail(self, reason: str) -> bytes:
        """The dialect's error event (once: empty when the stream already ended with one)."""
        if self._failed:
            return b""
        self._failed = True
        return self._error(reason)

    def feed_events(self, events: list[RawEvent], parsed: Parsed) -> bytes:
        """The projection of framed events, ``parsed`` their :func:`parse_events` (for a
        caller framing the stream itself; this projector's own framing is then unused). Only
        the data is read, so no event object is made."""
        out: list[bytes] = []
        for (raw, *_), data in zip(events, parsed, strict=True):
            if self._failed:
                break
            if data is None:  # a literal is never a JSON object: only these can be one
                text = raw.decode("utf-8", "replace").strip()
                if text in self._literal:
                    out.append(encode_event("message", text))
                continue  # not a JSON object: never forwarded
            seen = project(self._shape, data, self._tf)
            if data.get("error") and not isinstance(seen.get("error"), dict):
                out.append(self.fail("the upstream reported an error in the stream"))
                break
            if not seen or (self._keep is not None and not self._keep(seen)):
                continue
            kind = seen.get(self._named) if self._named is not None else None
            name = kind if isinstance(kind, str) and kind.isprintable() else "message"
            out.append(encode_event(name, orjson.dumps(seen)))
        return b"".join(out)


class OneParse:
    """A projector and an evidence decoder of the same stream fed from one framing and one
    parse per event (the relay's hot path parsed every event twice before: profiled).

    :meth:`feed` projects a chunk and keeps its events for :meth:`decode`, which the relay
    calls after the client's copy is sent; :meth:`flush` hands the decoder what the framing
    still holds, before its ``close``; :meth:`close` is the projector's close, after the
    decoder's (a decoder that fails there must leave the projector able to send its error
    event)."""

    __slots__ = ("_decoder", "_last", "_pending", "_projector", "_sse")

    def __init__(self, projector: SSEProjector, decoder: ParsedFeed) -> None:
        self._projector = projector
        self._decoder = decoder
        self._sse = SSEDecoder()
        self._pending: tuple[bytes, list[RawEvent], Parsed] | None = None
        self._last: tuple[list[RawEvent], Parsed] | None = None

    @staticmethod
    def of(projector: object, decoder: object) -> OneParse | None:
        """One for this pair, None when either reads the bytes only its own way."""
        # hasattr, not a runtime-checkable Protocol: its isinstance costs ~4 us (measured)
        if isinstance(projector, SSEProjector) and hasattr(decoder, "feed_parsed"):
            return OneParse(projector, cast(ParsedFeed, decoder))
        return None

    def feed(self, chunk: bytes) -> bytes:
        """The projected bytes of ``chunk`` (its events wait for :meth:`decode`)."""
        self.decode()  # a chunk not decoded yet goes first: the decoder sees every one
        events = self._sse.feed_raw(chunk)
        seen, exact = parse_both(events)
        self._pending = (chunk, events, exact)
        return self._projector.feed_events(events, seen)

    def decode(self) -> None:
        """The decoder takes the last fed chunk's events (once)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._decoder.feed_parsed(*pending)

    def flush(self) -> None:
        """The events still framed go to the decoder (once; its ``close`` comes next)."""
        self.decode()
        if self._last is None:
            events = self._sse.close_raw()
            seen, exact = parse_both(events)
            self._last = (events, seen)
            self._decoder.feed_parsed(b"", events, exact)

    def close(self) -> bytes:
        """The projector's last bytes (the decoder flushed first)."""
        self.flush()
        assert self._last is not None
        return self._projector.feed_events(*self._last) + self._projector.close()


__all__ = [
    "EventFilter",
    "OneParse",
    "Parsed",
    "ParsedFeed",
    "SSEProjector",
    "encode_event",
    "parse_both",
    "parse_events",
]
