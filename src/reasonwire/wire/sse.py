"""One incremental Server-Sent Events decoder for every dialect.

Follows the WHATWG event-stream rules: lines end in CRLF, LF or CR; a line starting with ``:``
is a comment; ``field: value`` strips one space after the colon; several ``data`` lines join
with ``\\n``; a blank line dispatches the event; ``event``, ``id`` and ``retry`` are kept.

A leading UTF-8 byte order mark is skipped. Bytes may be split anywhere, including inside a
CRLF pair or a multi-byte UTF-8 character: lines are cut on bytes (no line terminator can
occur inside a UTF-8 sequence) and decoded only once complete. The decoder works on whole
chunks with ``bytes.split`` on blank lines, and takes the two common event shapes (one
``data`` line, or ``event`` then ``data``) apart without a per-line loop, so the per-event
cost stays small. :meth:`SSEDecoder.feed_raw` hands out undecoded bytes for JSON parsers that
read bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat

from reasonwire.errors import TruncatedStream

_BOM = b"\xef\xbb\xbf"

RawEvent = tuple[bytes, bytes | None, str | None, int | None]
"""``(data, event, id, retry)`` of one event from :meth:`SSEDecoder.feed_raw`."""


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
        return _decoded(self.feed_raw(chunk))

    def close(self) -> list[SSEEvent]:
        """Flush at end of stream. A pending event without its blank line is still dispatched
        (servers often omit the last blank line); a partial line is treated as complete."""
        return _decoded(self.close_raw())

    def feed_raw(self, chunk: bytes) -> list[RawEvent]:
        """Like :meth:`feed`, but each event is a ``(data, event, id, retry)`` tuple with
        ``data`` and ``event`` as undecoded bytes (``event`` None or empty means
        ``message``). For decoders that parse ``data`` as JSON: bytes go straight to the
        parser, and no per-event object is built. :meth:`feed` and this method share the
        stream state: either may be called for any chunk."""
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
            buf = buf.replace(b"\r\n", b"\n")
            if b"\r" in buf:
                buf = buf.replace(b"\r", b"\n")
        # Everything before the last blank line is whole events; the rest (the event still
        # arriving) stays buffered, undecoded, until its blank line comes.
        end = buf.rfind(b"\n\n")
        if end < 0:
            self._buf = buf
            return []
        fast = self._uniform(buf[:end])
        if fast is not None:
            self._buf = buf[end + 2 :]
            return fast
        # Cut on blank lines: every piece but the last is one whole event's lines.
        blocks = buf.split(b"\n\n")
        self._buf = blocks.pop()
        return self._blocks(blocks) if blocks else []

    def _uniform(self, whole: bytes) -> list[RawEvent] | None:
        """All events of ``whole`` (whole events, the last blank line cut off) when every one
        has one of the two common shapes, taken apart by a few passes of C over the whole
        text instead of Python work per event; None for anything else (the general path).

        Shape 1, only ``data: X`` blocks: split on the ``\\n\\ndata: `` separator; if
        ``whole`` holds no other newline (the newline count is twice the number of cuts),
        every piece is one event's payload. Shape 2, ``event: N`` then ``data: X``: split
        into lines; if every third line is blank, the others start with ``event: `` and
        ``data: `` by turns, and the count fits, every block is exactly those two lines.
        Either way ``whole`` does not end in a newline, so the last blank line of ``buf``
        is also the last cut ``bytes.split`` makes and the general path would give the same
        events. No ``id``/``retry`` line occurs, so both stay as they were; the event name
        is reset after every event anyway.
        """
        if whole[:6] == b"data: ":
            datas = whole[6:].split(b"\n\ndata: ")
            if whole.count(b"\n") != 2 * (len(datas) - 1):
                return None
            return list(
                zip(datas, repeat(None), repeat(self._id), repeat(self._retry), strict=False)
            )
        if whole[:7] != b"event: ":
            return None
        lines = whole.split(b"\n")
        n = (len(lines) + 1) // 3
        if len(lines) % 3 != 2 or any(lines[2::3]):
            return None
        # the names and payloads, each joined by newlines: none of them holds one, so the
        # prefixes sit exactly at the start and after each newline, which the splits prove
        joined = b"\n".join(lines[0::3])
        names = joined[7:].split(b"\nevent: ")
        if joined[:7] != b"event: " or len(names) != n:
            return None
        joined = b"\n".join(lines[1::3])
        datas = joined[6:].split(b"\ndata: ")
        if joined[:6] != b"data: " or len(datas) != n:
            return None
        return list(zip(datas, names, repeat(self._id), repeat(self._retry), strict=False))

    def close_raw(self) -> list[RawEvent]:
        """:meth:`close` in the form of :meth:`feed_raw`."""
        out: list[RawEvent] = []
        if self._buf and not self._at_start:
            self._lines(self._buf.split(b"\n"), out)
            self._lines([b""], out)
        elif self._buf:  # only a partial BOM arrived: it is data
            self._lines([self._buf, b""], out)
        self._buf = b""
        return out

    @property
    def pending(self) -> bool:
        """True when bytes of an undispatched event are buffered."""
        return bool(self._buf.strip(b"\n"))

    def _blocks(self, blocks: list[bytes]) -> list[RawEvent]:
        """Events from whole blocks (the lines between two blank lines).

        The two shapes every provider sends (one ``data`` line, or an ``event`` line then
        one ``data`` line) are taken apart directly; anything else goes line by line.
        """
        out: list[RawEvent] = []
        for block in blocks:
            if block[:5] == b"data:" and b"\n" not in block:
                out.append(
                    (block[6:] if block[5:6] == b" " else block[5:], None, self._id, self._retry)
                )
                continue
            if block[:6] == b"event:":
                name, _, line = block.partition(b"\n")
                if line[:5] == b"data:" and b"\n" not in line:
                    out.append(
                        (
                            line[6:] if line[5:6] == b" " else line[5:],
                            name[7:] if name[6:7] == b" " else name[6:],
                            self._id,
                            self._retry,
                        )
                    )
                    continue
            self._lines(block.split(b"\n"), out)
            self._lines([b""], out)
        return out

    def _lines(self, lines: list[bytes], out: list[RawEvent]) -> None:
        data = self._data
        for line in lines:
            if not line:
                if self._has_data:
                    out.append((b"\n".join(data), self._event, self._id, self._retry))
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


def event_name(name: bytes | None) -> str:
    """The name of a raw event as text: ``message`` when it has none (the spec's default)."""
    return name.decode("utf-8", "replace") if name else "message"


def _decoded(events: list[RawEvent]) -> list[SSEEvent]:
    return [
        SSEEvent(data.decode("utf-8", "replace"), event_name(name), id_, retry)
        for data, name, id_, retry in events
    ]


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


__all__ = [
    "RawEvent",
    "SSEDecoder",
    "SSEEvent",
    "TruncatedStream",
    "aiter_sse",
    "event_name",
    "iter_sse",
]
