"""The one SSE decoder: line endings, comments, fields, splits anywhere, UTF-8, end of stream."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.wire.sse import SSEDecoder, SSEEvent, aiter_sse, iter_sse


def decode(chunks: Sequence[bytes]) -> list[SSEEvent]:
    dec = SSEDecoder()
    out: list[SSEEvent] = []
    for c in chunks:
        out.extend(dec.feed(c))
    out.extend(dec.close())
    return out


def every_split(data: bytes) -> list[list[bytes]]:
    """The stream whole, byte by byte, and cut once at every position."""
    splits = [[data], [data[i : i + 1] for i in range(len(data))]]
    splits += [[data[:i], data[i:]] for i in range(1, len(data))]
    return splits


SAMPLE = (
    "\ufeff: keep-alive comment\r\n"
    "event: message_start\r\n"
    'data: {"type":"message_start","text":"héllo 世界 🧠"}\r\n'
    "\r\n"
    "id: 7\r"
    "data: line one\r"
    "data:line two without space\r"
    "data:  two spaces keep one\r"
    "\r"
    "retry: 1500\n"
    "event: ping\n"
    "data\n"
    "\n"
    "event: dropped-no-data\n"
    "\n"
    "data: last event without blank line"
).encode()

EXPECTED = [
    SSEEvent('{"type":"message_start","text":"héllo 世界 🧠"}', "message_start"),
    SSEEvent("line one\nline two without space\n two spaces keep one", "message", "7"),
    SSEEvent("", "ping", "7", 1500),
    SSEEvent("last event without blank line", "message", "7", 1500),
]


def test_sample_decodes_under_every_split() -> None:
    for chunks in every_split(SAMPLE):
        assert decode(chunks) == EXPECTED, chunks


def test_cr_at_chunk_end_then_lf() -> None:
    # "\r" closes the line at once; the "\n" in the next chunk must not make a blank line
    got = decode([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert got == [SSEEvent("a\nb")]


def test_lone_cr_then_other_byte() -> None:
    assert decode([b"data: a\r", b"data: b\r\r"]) == [SSEEvent("a\nb")]


def test_mixed_line_endings() -> None:
    data = b"data: 1\n\ndata: 2\r\n\r\ndata: 3\r\rdata: 4\n\r\n"
    assert [e.data for e in decode([data])] == ["1", "2", "3", "4"]


def test_comments_and_unknown_fields_ignored() -> None:
    data = b":hello\n: x\nfoo: bar\ndata: d\nbogus\n\n"
    assert decode([data]) == [SSEEvent("d")]


def test_event_name_resets_after_dispatch() -> None:
    data = b"event: a\ndata: 1\n\ndata: 2\n\n"
    assert [(e.event, e.data) for e in decode([data])] == [("a", "1"), ("message", "2")]


def test_id_with_nul_is_ignored_and_id_persists() -> None:
    data = b"id: one\ndata: a\n\nid: t\x00wo\ndata: b\n\n"
    assert [e.id for e in decode([data])] == ["one", "one"]


def test_retry_must_be_digits() -> None:
    data = b"retry: soon\ndata: a\n\nretry: 20\ndata: b\n\n"
    assert [e.retry for e in decode([data])] == [None, 20]


def test_utf8_split_mid_character() -> None:
    text = "data: " + "🧠é世" * 50 + "\n\n"
    raw = text.encode()
    for size in (1, 2, 3, 5, 7):
        chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
        assert decode(chunks) == [SSEEvent("🧠é世" * 50)]


def test_bom_only_at_start_and_split() -> None:
    raw = b"\xef\xbb\xbfdata: x\n\n"
    for chunks in every_split(raw):
        assert decode(chunks) == [SSEEvent("x")]
    # a BOM later in the stream is data, not stripped
    assert decode([b"data: a\n\n\xef\xbb\xbfdata: b\n\n"])[0] == SSEEvent("a")
    assert decode([b"\xef\xbb"]) == []


def test_missing_final_blank_line_and_pending() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\n") == []
    assert dec.pending
    assert dec.close() == [SSEEvent("a")]
    assert not dec.pending
    assert decode([b"data: partial"]) == [SSEEvent("partial")]
    assert decode([b""]) == []
    assert decode([b"\n\n\n"]) == []


def test_bytes_in_counts_everything() -> None:
    dec = SSEDecoder()
    dec.feed(b"\xef\xbb")
    dec.feed(b"\xbfdata: 1\n")
    assert dec.bytes_in == len(b"\xef\xbb\xbfdata: 1\n")


def test_iter_and_aiter() -> None:
    assert list(iter_sse(every_split(SAMPLE)[1])) == EXPECTED

    async def chunks():  # type: ignore[no-untyped-def]
        for c in every_split(SAMPLE)[1]:
            yield c

    async def collect() -> list[SSEEvent]:
        return [e async for e in aiter_sse(chunks())]

    import asyncio

    assert asyncio.run(collect()) == EXPECTED


# --------------------------------------------------------------------------------------------
# Property: random events, random framing, random chunking
# --------------------------------------------------------------------------------------------

# text without line terminators (CR, LF) or NUL; everything else including astral characters
_line_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)),
    max_size=30,
)


@dataclass
class Spec:
    event: str | None
    id: str | None
    retry: int | None
    data: list[str]  # empty: an event block without data, which dispatches nothing
    comment: str | None


_spec = st.builds(
    Spec,
    event=st.none() | _line_text.filter(lambda s: s != "" and not s.startswith(" ")),
    id=st.none() | _line_text,
    retry=st.none() | st.integers(min_value=0, max_value=10**6),
    data=st.lists(_line_text, max_size=4),
    comment=st.none() | _line_text,
)


def _serialise(specs: list[Spec], rnd: random.Random, bom: bool, final_blank: bool) -> bytes:
    out: list[str] = ["\ufeff"] if bom else []
    for n, s in enumerate(specs):
        lines: list[str] = []
        if s.comment is not None:
            lines.append(":" + s.comment)
        if s.event is not None:
            lines.append("event: " + s.event)
        if s.id is not None:
            lines.append("id: " + s.id)
        if s.retry is not None:
            lines.append(f"retry: {s.retry}")
        for d in s.data:
            if d == "" and rnd.random() < 0.5:
                lines.append("data")
            elif not d.startswith(" ") and rnd.random() < 0.5:
                lines.append("data:" + d)
            else:
                lines.append("data: " + d)
        last = n == len(specs) - 1
        if not (last and not final_blank):
            lines.append("")
        for line in lines:
            ends = ["\n", "\r\n", "\r"]
            if not line and out and out[-1].endswith("\r"):
                ends = ["\r\n", "\r"]  # "\r" + "\n" would read as one CRLF, not a blank line
            out.append(line + rnd.choice(ends))
    return "".join(out).encode("utf-8")


def _expected(specs: list[Spec]) -> list[SSEEvent]:
    out: list[SSEEvent] = []
    last_id: str | None = None
    retry: int | None = None
    for s in specs:
        if s.id is not None:
            last_id = s.id
        if s.retry is not None:
            retry = s.retry
        if s.data:
            out.append(SSEEvent("\n".join(s.data), s.event or "message", last_id, retry))
    return out


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(_spec, max_size=8),
    seed=st.integers(min_value=0, max_value=2**32),
    bom=st.booleans(),
    final_blank=st.booleans(),
    cuts=st.lists(st.floats(min_value=0, max_value=1), max_size=12),
)
def test_random_events_random_chunking(
    specs: list[Spec], seed: int, bom: bool, final_blank: bool, cuts: list[float]
) -> None:
    raw = _serialise(specs, random.Random(seed), bom, final_blank)
    points = sorted({int(c * len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode(chunks) == _expected(specs)
    assert decode([raw]) == _expected(specs)


def test_feed_raw_gives_the_same_events_as_feed_for_any_split() -> None:
    """feed_raw (bytes tuples for the JSON hot path) and feed (SSEEvent) agree."""
    from reasonwire.wire.sse import SSEDecoder

    stream = (
        b'event: a\r\ndata: {"x": 1}\r\n\r\n: comment\n'
        b"data: line1\ndata: line2\nid: 7\nretry: 30\n\n"
        b"data: \xc3\xa9t\xc3\xa9\n\ndata: tail"
    )
    for cut in range(len(stream) + 1):
        plain, raw = SSEDecoder(), SSEDecoder()
        events = plain.feed(stream[:cut]) + plain.feed(stream[cut:]) + plain.close()
        tuples = raw.feed_raw(stream[:cut]) + raw.feed_raw(stream[cut:]) + raw.close_raw()
        assert [(e.data, e.event, e.id, e.retry) for e in events] == [
            (d.decode("utf-8"), (ev or b"message").decode("utf-8"), i, r) for d, ev, i, r in tuples
        ], cut


_SHAPES = st.lists(
    st.tuples(
        st.sampled_from([None, "message_start", "content_block_delta", "ping"]),
        st.text(
            alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
            max_size=30,
        ),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(events=_SHAPES, cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=6))
def test_uniform_fast_path_equals_the_general_path(
    events: list[tuple[str | None, str]], cuts: list[int]
) -> None:
    """The whole-chunk fast path for the two common event shapes gives exactly the events of
    the line-by-line path, for any chunking (streams of one shape and of mixed shapes)."""
    from reasonwire.wire.sse import SSEDecoder

    stream = "".join(
        (f"event: {name}\n" if name else "") + f"data: {data}\n\n" for name, data in events
    ).encode("utf-8")
    bounds = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *bounds], [*bounds, len(stream)], strict=True)]

    class General(SSEDecoder):
        def _uniform(self, whole: bytes) -> None:  # force the line-by-line path
            return None

    fast, general = SSEDecoder(), General()
    got = [ev for p in pieces for ev in fast.feed_raw(p)] + fast.close_raw()
    want = [ev for p in pieces for ev in general.feed_raw(p)] + general.close_raw()
    assert got == want
    assert [d for d, *_ in got] == [data.encode("utf-8") for _, data in events]
