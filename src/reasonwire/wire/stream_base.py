"""What the five stream decoders share: how a stream ends.

Each decoder takes bytes its own way (their fast paths differ), but they end alike: the events
still buffered are decoded, a stream whose terminal event never came raises
:class:`~reasonwire.errors.TruncatedStream` carrying the partial turn (what arrived can still
be shown or replayed), and a complete one ends with :class:`~reasonwire.wire.model.Done`.
:class:`StreamDecoderBase` writes that once; a decoder says what is buffered, why it is
incomplete and which events come before ``Done``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from reasonwire.errors import TruncatedStream
from reasonwire.wire import jsonload
from reasonwire.wire.model import JSON, Done, StreamEvent, Turn
from reasonwire.wire.projection import Parsed
from reasonwire.wire.sse import RawEvent, SSEDecoder

Events: TypeAlias = list[StreamEvent]
"""The events one call of a decoder gives, in order."""


class StreamDecoderBase:
    """The end of a stream (:meth:`close`), for a dialect's decoder to fill in.

    Only :meth:`close` runs here, once per stream: nothing is added to the per-event paths.
    """

    __slots__ = ()

    def close(self) -> Events:
        """The last events, then ``Done``; :class:`TruncatedStream` (with
        :meth:`partial_turn`) when the stream ended before its terminal event."""
        out = self._drain()
        why = self._unfinished()
        if why is not None:
            raise TruncatedStream(why, partial=self.partial_turn())
        turn = self._final_turn()
        out.extend(self._closing(turn))
        out.append(Done(turn))
        return out

    def partial_turn(self) -> Turn:
        """What has arrived so far, as a turn."""
        raise NotImplementedError

    def _drain(self) -> Events:
        """The events of what is still buffered at the end of the stream."""
        raise NotImplementedError

    def _unfinished(self) -> str | None:
        """Why the stream is incomplete (the message of the error), None when it is not."""
        raise NotImplementedError

    def _final_turn(self) -> Turn:
        """The finished turn ``Done`` carries."""
        return self.partial_turn()

    def _closing(self, turn: Turn) -> Events:
        """Events announced after the last one and before ``Done`` (none by default)."""
        return []


__all__ = ["Events", "StreamDecoderBase"]


class BatchedSSEDecoder(StreamDecoderBase):
    """A decoder that reads SSE in batches (each chunk's events at once: Responses,
    Anthropic, Interactions): :meth:`feed` frames the bytes itself, :meth:`feed_parsed` takes
    events a relay framed and parsed already (:class:`~reasonwire.wire.projection.ParsedFeed`),
    and both end in the decoder's own ``_batch``, so each event is framed and parsed once.
    The decoder sets ``_sse`` and ``_guard`` and writes ``_batch`` (a chunk's events) and
    ``_last`` (the framing's last events, at the stream's end)."""

    __slots__ = ()
    _sse: SSEDecoder
    _guard: jsonload.StreamGuard

    def feed(self, data: bytes) -> Events:
        """Events of ``data`` (the guard sees every chunk, events or not)."""
        loads = self._guard.loader(data)
        return self._batch(self._sse.feed_raw(data), loads, None)

    def feed_parsed(self, data: bytes, events: list[RawEvent], parsed: Parsed) -> Events:
        """:meth:`feed` for a caller that framed ``data`` and parsed its events already. A
        parsed object stands for this decoder's own orjson read of the bytes while the stream
        has had no run of 19 digits (then it wants the exact value, and reads it itself); the
        rest takes :meth:`feed`'s path, so the events and the turn are :meth:`feed`'s. An
        empty ``data`` hands over the framing's last events, taken as :meth:`_drain` takes
        its own."""
        loads = self._guard.loader(data)
        given = parsed if jsonload.StreamGuard.fast(loads) else None
        if not data:
            return self._last(events, loads, given)
        return self._batch(events, loads, given)

    def _drain(self) -> Events:
        return self._last(self._sse.close_raw(), self._guard.loader(b""), None)

    def _batch(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """One chunk's events (``parsed``: their objects, None where one was not read)."""
        raise NotImplementedError

    def _last(
        self, events: list[RawEvent], loads: Callable[[bytes], JSON], parsed: Parsed | None
    ) -> Events:
        """The framing's last events, at the stream's end."""
        raise NotImplementedError
