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
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from reasonwire.wire.shape import Shape, Tagged, TextFilter, project
from reasonwire.wire.sse import RawEvent, SSEDecoder
from reasonwire.wire.thinktags import PathCutters

EventFilter = Callable[[dict[str, object]], bool]
"""Extra per-event rule after projection: False drops the event (e.g. an emptied delta)."""


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
        return self._emit(self._sse.feed_raw(chunk))

    def close(self) -> bytes:
        return self._emit(self._sse.close_raw())

    def fail(self, reason: str) -> bytes:
        """The dialect's error event (once: empty when the stream already ended with one)."""
        if self._failed:
            return b""
        self._failed = True
        return self._error(reason)

    def _emit(self, events: list[RawEvent]) -> bytes:
        """The projection of each event's data (decoded as :meth:`SSEDecoder.feed` decodes
        it; only the data is read, so no event object is made)."""
        out: list[bytes] = []
        for raw, *_ in events:
            if self._failed:
                break
            text = raw.decode("utf-8", "replace").strip()
            if text in self._literal:
                out.append(encode_event("message", text))
                continue
            try:
                data = orjson.loads(text)
            except orjson.JSONDecodeError:
                continue  # not JSON: never forwarded
            if not isinstance(data, dict):
                continue
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


__all__ = ["EventFilter", "SSEProjector", "encode_event"]
