"""What the five stream decoders share: how a stream ends.

Each decoder takes bytes its own way (their fast paths differ), but they end alike: the events
still buffered are decoded, a stream whose terminal event never came raises
:class:`~reasonwire.errors.TruncatedStream` carrying the partial turn (what arrived can still
be shown or replayed), and a complete one ends with :class:`~reasonwire.wire.model.Done`.
:class:`StreamDecoderBase` writes that once; a decoder says what is buffered, why it is
incomplete and which events come before ``Done``.
"""

from __future__ import annotations

from typing import TypeAlias

from reasonwire.errors import TruncatedStream
from reasonwire.wire.model import Done, StreamEvent, Turn

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
