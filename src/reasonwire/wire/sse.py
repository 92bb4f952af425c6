"""One incremental Server-Sent Events decoder for every dialect.

Follows the WHATWG event-stream rules: lines end in CRLF, LF or CR; a line starting with ``:``
is a comment; ``field: value`` strips one space after the colon; several ``data`` lines join
with ``\\n``; a blank line dispatches the event; ``event``, ``id`` and ``retry`` are kept.

A leading UTF-8 byte order mark is skipped. Bytes may be split anywhere, including inside a
CRLF pair or a multi-byte UTF-8 character: lines are cut on bytes (no line terminator can
occur inside a UTF-8 sequence) and decoded only once complete. The decoder works on whole
chunks with ``bytes.split`` so the per-event cost stays small; that is what makes it several
times faster than a line-at-a-time loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

from reasonwire.errors import TruncatedStream

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. ``event`` defaults to ``message`` as in the spec."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes, get complete events. Call :meth:`close` at end of stream."""

    __slots__ = (
        "_at_start",
        "_buf",
        "_data",
        "_event",
        "_has_data",
        "_id",
        "_retry",
        "_skip_lf",
        "bytes_in",
    )

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._event: bytes | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self._skip_lf = False
        self._has_data = False
        self._at_start = True
        self.bytes_in = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completed (possibly none)."""
        if not chunk:
            return []
        self.bytes_in += len(chunk)
        if self._at_start:
            # The spec strips one leading UTF-8 BOM; it may itself arrive split.
            head = self._buf + chunk
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._buf = head
                return []
            self._at_start = False
            self._buf = b""
            chunk = head[len(_BOM) :] if head.startswith(_BOM) else head
            if not chunk:
                return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._buf + chunk if self._buf else chunk
        if b"\r" in buf:
            # A CR at the very end may be the first half of CRLF: end the line now and drop
            # a leading LF from the next chunk.
            if buf.endswith(b"\r"):
                self._skip_lf = True
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        return self._lines(lines) if lines else []

    def close(self) -> list[SSEEvent]:
        """Flush at end of stream. A pending event without its blank line is still dispatched
        (servers often omit the last blank line); a partial line is treated as complete."""
        events: list[SSEEvent] = []
        if self._buf:
            events.extend(self._lines([self._buf, b""]))
            self._buf = b""
        elif self._has_data:
            events.extend(self._lines([b""]))
        return events

    @property
    def pending(self) -> bool:
        """True when bytes of an undispatched event are buffered."""
        return bool(self._buf) or self._has_data

    def _lines(self, lines: list[bytes]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if self._has_data:
                    ev = self._event
                    out.append(
                        SSEEvent(
                            b"\n".join(data).decode("utf-8", "replace"),
                            ev.decode("utf-8", "replace") if ev else "message",
                            self._id,
                            self._retry,
                        )
                    )
                    data.clear()
                    self._has_data = False
                self._event = None
                continue
            if line[:5] == b"data:":
                data.append(line[6:] if line[5:6] == b" " else line[5:])
                self._has_data = True
                continue
            if line[:1] == b":":
                continue
            name, sep, value = line.partition(b":")
            if sep and value[:1] == b" ":
                value = value[1:]
            if name == b"event":
                self._event = value
            elif name == b"data":  # "data" with no colon: an empty data line
                data.append(b"")
                self._has_data = True
            elif name == b"id":
                if b"\0" not in value:
                    self._id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                self._retry = int(value)
        return out


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Decode an iterable of byte chunks into events."""
    dec = SSEDecoder()
    for chunk in chunks:
        yield from dec.feed(chunk)
    yield from dec.close()


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Decode an async iterable of byte chunks into events."""
    dec = SSEDecoder()
    async for chunk in chunks:
        for ev in dec.feed(chunk):
            yield ev
    for ev in dec.close():
        yield ev


__all__ = ["SSEDecoder", "SSEEvent", "TruncatedStream", "aiter_sse", "iter_sse"]
